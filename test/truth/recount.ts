// Invariant 5, read-only: the convergence aggregates equal a from-scratch recount of the ENVOY STATE
// items (no event lost, none double-counted). The resync function would *repair* drift; the checker
// must *detect* it without racing the stream: Envoy heartbeats keep writing states, so a member one
// rev behind its state is normal for a moment. So a member behind its state is drift only if it never
// reaches that state's rev within the settle window, and every other finding must persist.
import { memberFromEnvoyState, recount, shardOf, type Member } from '../../common/core';
import { iteratePages } from '../../common/store';
import type { ConvergenceDeps } from '../../functions/lib/convergence-batch';
import { DEFAULT_REQUIRED_TYPE_URLS } from '../../infra/local/system/functions';
import { HTTPPROXY_TRACKED_KIND } from '../../infra/local/system/system';
import type { Violation } from './checker';

/**
 * The functions' environment the recount (and the checker's own resync) must run with: the settings
 * of the functions that built the aggregates. A member depends on them (`req`, the required types an
 * Envoy has not subscribed to, comes from REQUIRED_TYPE_URLS): recomputed without them, every member
 * of an Envoy missing a required type looked like drift.
 */
export function recountEnv(args: { storeEnv: Readonly<Record<string, string>>; envoyTtlMs: number; ackTimeoutMs: number; conditionType: string; kubeconfigPath: string; progressEvaluation?: boolean }): Record<string, string> {
  return {
    ...args.storeEnv,
    ENVOY_TTL_MS: String(args.envoyTtlMs),
    ACK_TIMEOUT_MS: String(args.ackTimeoutMs),
    REQUIRED_TYPE_URLS: DEFAULT_REQUIRED_TYPE_URLS.join(','),
    CONDITION_TYPE: args.conditionType,
    TRACKED_KINDS: JSON.stringify([HTTPPROXY_TRACKED_KIND]),
    KUBECONFIG_PATH: args.kubeconfigPath,
    // As the system under test decides (the resync pass re-evaluates with it); the recount itself
    // reads the shards and the Envoy states whichever path decided.
    PROGRESS_EVALUATION: args.progressEvaluation === true ? 'true' : 'false',
  };
}

interface Finding {
  key: string;
  detail: string;
  /** For a member behind its state: the shard and the state's rev the member must eventually reach. */
  behind?: { lineage: string; shard: number; nodeId: string; stateRev: number };
}

/** JSON with sorted keys: a member read back from DynamoDB need not keep the writer's key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

async function findDrift(deps: ConvergenceDeps): Promise<Finding[]> {
  const findings: Finding[] = [];
  const expected = new Map<string, Map<string, Member>>(); // lineage|shard -> nodeId -> member
  const states = iteratePages((cursor) => deps.store.listEnvoyStates(cursor === undefined ? {} : { cursor }), () => undefined);
  for await (const state of states) {
    const key = `${state.lineage}|${shardOf(state.nodeId, deps.shardCount)}`;
    const members = expected.get(key) ?? new Map<string, Member>();
    members.set(state.nodeId, memberFromEnvoyState(state, deps.requiredTypeUrls ?? []));
    expected.set(key, members);
  }
  for (const [key, members] of expected) {
    const separator = key.lastIndexOf('|');
    const lineage = key.slice(0, separator);
    const shardIndex = Number(key.slice(separator + 1));
    const read = await deps.aggregates.getShard(lineage, shardIndex);
    if (read.status !== 'found') {
      findings.push({ key: `${key}:shard`, detail: `shard ${key} is ${read.status} but ${members.size} Envoy state(s) belong to it` });
      continue;
    }
    const shard = read.value;
    const recounted = recount(shard.members);
    const sortedEntries = (counts: Record<string, number>): string => JSON.stringify(Object.entries(counts).sort());
    if (sortedEntries(recounted.counts) !== sortedEntries(shard.counts) || recounted.live !== shard.live) {
      findings.push({ key: `${key}:counts`, detail: `shard ${key} counts ${sortedEntries(shard.counts)} live ${shard.live}, its members recount to ${sortedEntries(recounted.counts)} live ${recounted.live}` });
    }
    for (const [nodeId, fresh] of members) {
      const stored = shard.members[nodeId];
      if (stored === undefined) findings.push({ key: `${key}:${nodeId}:missing`, detail: `${nodeId} has a state (rev ${fresh.r}) but no member in shard ${key}` });
      else if (stored.r < fresh.r) {
        findings.push({ key: `${key}:${nodeId}:behind`, detail: `${nodeId}: member at rev ${stored.r}, state at rev ${fresh.r}`, behind: { lineage, shard: shardIndex, nodeId, stateRev: fresh.r } });
      }
      else if (stored.r === fresh.r && canonical(stored) !== canonical(fresh)) {
        findings.push({ key: `${key}:${nodeId}:differs`, detail: `${nodeId} rev ${fresh.r}: member ${JSON.stringify(stored)} but state gives ${JSON.stringify(fresh)}` });
      }
    }
  }
  return findings;
}

/** Whether the shard member has caught up with (or passed) the state rev seen earlier. */
async function caughtUp(deps: ConvergenceDeps, behind: NonNullable<Finding['behind']>): Promise<boolean> {
  const read = await deps.aggregates.getShard(behind.lineage, behind.shard);
  if (read.status !== 'found') return false;
  const member = read.value.members[behind.nodeId];
  if (member !== undefined && member.r >= behind.stateRev) return true;
  // The Envoy moved to another lineage since (a reconnect to a restarted gateway): not this shard's debt.
  const state = await deps.store.getEnvoyState(behind.nodeId);
  return state.status === 'found' && state.value.lineage !== behind.lineage;
}

/**
 * Drift that persists. A member behind its state is drift only if it has still not reached *that*
 * state's rev `attempts × gapMs` later (heartbeats keep moving states, so "behind some rev" alone
 * is normal churn); any other finding must show up on every attempt.
 */
export async function checkAggregatesMatchRecount(deps: ConvergenceDeps, attempts = 4, gapMs = 1000): Promise<Violation[]> {
  const first = await findDrift(deps);
  let pending = first;
  for (let attempt = 1; attempt < attempts && pending.length > 0; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, gapMs));
    const again = new Set((await findDrift(deps)).map((finding) => finding.key));
    const still: Finding[] = [];
    for (const finding of pending) {
      if (finding.behind ? !(await caughtUp(deps, finding.behind)) : again.has(finding.key)) still.push(finding);
    }
    pending = still;
  }
  return pending.map((finding) => ({ invariant: 'I5-no-drift' as const, detail: finding.detail }));
}
