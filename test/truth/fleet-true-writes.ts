// Invariant 1 judged where a fleet runs in a process of its own (the soak, bench/soak.ts): the fleet
// child taps its wire codec (./content.ts) before any stream opens, so it knows the provenance stamps
// in every response its Envoys accepted, and runs the truth checker's own checkTrueWrites
// (./checker.ts) over the True writes the parent sends it. Nothing here reads the product's records:
// "held X@G" is what the bytes an Envoy accepted were stamped with, as in the truth runs.
//
// What the child cannot know, the parent sends: which types reflect each object (from the control
// plane's rebuild logs, typesReflecting) and the system's TTL and heartbeat.
import { z } from 'zod';
import type { BuiltFleet } from '../../infra/local/envoys/fleet-spec';
import { checkTrueWrites, type Violation } from './checker';
import type { ResponseContents } from './content';
import type { ConditionWrite } from './observer';

export const fleetTrueWritesQuerySchema = z.object({
  kind: z.literal('trueWrites'),
  /** True writes to judge; `at` is the moment judged (the earlier of the watch's delivery and the writer's own record). */
  writes: z.array(z.object({ name: z.string().min(1), at: z.number(), observedGeneration: z.number().int().min(0) })),
  /** Object source ref (`group/kind/namespace/name`) → the subscribed types whose rebuilds reflect it. */
  typesByObject: z.record(z.string(), z.array(z.string())),
  sourcePrefix: z.string(),
  envoyTtlMs: z.number().positive(),
  envoyHeartbeatMs: z.number().positive(),
});
export type FleetTrueWritesQuery = z.infer<typeof fleetTrueWritesQuerySchema>;

export const fleetTrueWritesResultSchema = z.array(z.object({ invariant: z.string(), detail: z.string(), known: z.boolean().optional() }));
export type FleetTrueWritesResult = z.infer<typeof fleetTrueWritesResultSchema>;

/** checkTrueWrites over a fleet and the content its tap recorded. */
export function fleetTrueWriteViolations(fleet: BuiltFleet, contents: ResponseContents, query: FleetTrueWritesQuery): Violation[] {
  const protocols = new Map(fleet.envoys.map((envoy) => [envoy.id, envoy.protocol]));
  const writes: ConditionWrite[] = query.writes.map((write) => ({
    name: write.name,
    at: write.at,
    generation: write.observedGeneration,
    condition: { status: 'True', reason: '', message: '', observedGeneration: write.observedGeneration },
  }));
  const violations = checkTrueWrites(writes, {
    truth: fleet.fleet.truth,
    contents,
    rebuildLogs: [],
    subscribedTypes: [...new Set(Object.values(query.typesByObject).flat())],
    typesOf: (object) => query.typesByObject[object] ?? [],
    envoyTtlMs: query.envoyTtlMs,
    envoyHeartbeatMs: query.envoyHeartbeatMs,
    sourcePrefix: query.sourcePrefix,
    protocolOf: (nodeId) => protocols.get(nodeId),
  });
  // Undecodable responses are a checker gap that would hide a violation: never silently.
  for (const failure of contents.undecodable.splice(0)) violations.push({ invariant: 'checker', detail: `a response the fleet received could not be decoded: ${failure}` });
  return violations;
}
