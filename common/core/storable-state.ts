// Whether an Envoy state can be stored at all. The recorder asks before it counts a state in its
// lineage's `envoysRecorded` (docs/CONVERGENCE.md, "The denominator"): a state counted but never
// stored would leave convergence waiting for it for ever, so one that can never be written is refused
// first, and the Envoy's stream with it (docs/GATEWAY.md, "What an Envoy may send").
import { EnvoyStateSchema, type EnvoyState } from './envoy-record';
import { utf8Length } from './truncate';

/**
 * Largest state we write, as JSON: DynamoDB's item limit is 400 KB of attribute names and values; the
 * margin covers the item's keys, index attribute and number encoding. States with bounded node fields
 * (node-limits.ts) and carried events (event-log.ts) stay below ~30 KB.
 */
export const MAX_STATE_JSON_BYTES = 350_000;

/** Why `state` can never be stored (the first few schema issues, or its size), or undefined. */
export function envoyStateStorageProblem(state: EnvoyState): string | undefined {
  const parsed = EnvoyStateSchema.safeParse(state);
  if (!parsed.success) {
    return parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.map(String).join('.') || '(state)'}: ${issue.message}`)
      .join('; ');
  }
  const bytes = utf8Length(JSON.stringify(state));
  return bytes > MAX_STATE_JSON_BYTES ? `the state is ${bytes} bytes as JSON; DynamoDB items hold at most 400 KB` : undefined;
}
