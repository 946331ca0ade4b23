// What a failing schedule's dump shows of the convergence side, so a recovery failure can be told
// apart at a glance: the gateway still reporting an Envoy, its stored state behind the gateway's own
// (a write that never landed) or the gateway's own behind the Envoy (a missed ACK), expire not
// acting, or a newer decision refused as stale (the stored decision's freshness per lineage against the
// lineages evaluation reads now: docs/RELIABILITY.md, "Findings").
import { formatObjectRef, snapshotRevs, type EnvoyState, type ObjectRef } from '../../common/core';
import { iteratePages } from '../../common/store';
import type { ConvergenceDeps } from '../../functions/lib/convergence-batch';
import type { Violation } from './checker';
import { AggregateSnapshot } from '../../functions/lib/evaluate';

/** The in-process gateway's view of an Envoy, when the run has one. */
export interface TrackerView {
  envoyState(nodeId: string): EnvoyState | undefined;
}

/** Per type: lineage (its last part), acked seq, pending seq and age, NACK seq, a names change awaited. */
export function describeTypes(state: EnvoyState, now: number): string {
  return Object.entries(state.types)
    .map(([typeUrl, type]) => {
      const parts = [`${typeUrl.split('.').pop() ?? typeUrl}@${type.lineage.split('.').pop() ?? type.lineage}`, type.subscribed ? '' : 'unsubscribed', `acked ${type.acked ?? '-'}`];
      if (type.pending !== undefined) parts.push(`pending ${type.pending.seq} for ${now - type.pending.sentAt} ms`);
      if (type.nack !== undefined) parts.push(`nack ${type.nack.seq}`);
      // Which hold (the Envoy's own request added names, or a name its ACKed content references is
      // missing from its subscription: core reference-hold.ts), since when, and whether a response went out since.
      if (type.namesChange !== undefined) parts.push(`${type.namesChange.reference === true ? 'reference hold' : 'names change'} for ${now - type.namesChange.at} ms${type.namesChange.sent ? ' sent' : ' nothing sent since'}`);
      return parts.filter((part) => part !== '').join(' ');
    })
    .join(', ');
}

function describeState(state: EnvoyState, now: number): string {
  return `${state.status} seen ${now - state.lastSeenAt} ms ago on ${state.lineage} rev ${state.rev} through ${state.programmedThrough ?? '-'} [${describeTypes(state, now)}]`;
}

/** The system's own view of the fleet (ENVOY STATE items) and, where it differs, the gateway's. */
export async function describeStoredStates(deps: ConvergenceDeps, tracker?: TrackerView): Promise<string> {
  const now = Date.now();
  const parts: string[] = [];
  try {
    // Unreadable states are shown too: convergence skips them, so they can hold the denominator open.
    const onCorrupt = (corrupt: ReadonlyArray<{ key?: { pk: string; sk: string }; error: string }>): void => {
      for (const item of corrupt) parts.push(`UNREADABLE ${item.key === undefined ? '?' : `${item.key.pk}/${item.key.sk}`}: ${item.error.slice(0, 300)}`);
    };
    for await (const state of iteratePages((cursor) => deps.store.listEnvoyStates(cursor === undefined ? {} : { cursor }), onCorrupt)) {
      const held = tracker?.envoyState(state.nodeId);
      // rev is left out of the comparison: the gateway's count runs ahead of what it has written.
      const live = held === undefined ? (tracker === undefined ? undefined : 'not tracked') : describeState({ ...held, rev: state.rev }, now);
      const stored = describeState(state, now);
      parts.push(`${state.nodeId} ${stored}${live !== undefined && live !== stored ? ` | gateway: ${live}` : ''}`);
    }
  } catch (error) {
    parts.push(`(reading states failed: ${String(error)})`);
  }
  return parts.join('\n    ');
}

function describeRevs(revs: Readonly<Record<string, number>> | undefined): string {
  if (revs === undefined) return '-';
  return Object.entries(revs)
    .map(([lineage, rev]) => `${lineage}=${rev}`)
    .join(',');
}

/** Per object: its latest generation's stored decision and freshness; then the live lineages now. */
export async function describeDecisions(deps: ConvergenceDeps, refs: readonly ObjectRef[]): Promise<string> {
  const parts: string[] = [];
  try {
    const now = deps.now();
    for (const ref of refs) {
      const page = await deps.store.listObjectGenerations(ref, { descending: true, limit: 1 });
      const latest = page.items[0];
      const decision = latest?.decision;
      parts.push(
        latest === undefined
          ? `${formatObjectRef(ref)}: no generation stored`
          : `${ref.name}@${latest.generation} (watermarks on ${Object.keys(latest.watermarks).join(', ') || 'none'}): ${decision === undefined ? 'undecided' : `${decision.state} ${decision.programmed}/${decision.total} decided ${now - decision.decidedAt} ms ago, rev ${decision.evaluatedRev} (${describeRevs(decision.evaluatedRevs)}; registry v${decision.registryVersion ?? '-'})`}`,
      );
    }
    const registry = await deps.aggregates.getLineageRegistry();
    parts.push(`registry v${registry.v}: ${Object.entries(registry.lineages).map(([lineage, heartbeatAt]) => `${lineage} heartbeat ${now - heartbeatAt} ms ago`).join(', ')}`);
    parts.push(`evaluation reads now: ${describeRevs(snapshotRevs(await new AggregateSnapshot(deps).get()))}`);
  } catch (error) {
    parts.push(`(reading decisions failed: ${String(error)})`);
  }
  return parts.join('; ');
}

/**
 * For a true-only-when-programmed failure: the object generation's watermarks and decision, and the
 * named Envoy's stored state and newest recorded events, so the dump shows which recorded ACK (or
 * which missing member) let the decision count that Envoy as programmed.
 */
export async function describeTrueEvidence(deps: ConvergenceDeps, ref: ObjectRef, generation: number, nodeId: string): Promise<string> {
  const now = Date.now();
  const parts: string[] = [`evidence for ${ref.name}@${generation} and ${nodeId}:`];
  try {
    const read = await deps.store.getObjectGeneration(ref, generation);
    if (read.status === 'found') {
      const item = read.value;
      parts.push(`watermarks ${Object.entries(item.watermarks).map(([lineage, mark]) => `${lineage}: seq ${mark.seq} types ${JSON.stringify(mark.types)}`).join('; ') || 'none'}`);
      const decision = item.decision;
      if (decision !== undefined) parts.push(`decision ${decision.state} ${decision.programmed}/${decision.total} ${now - decision.decidedAt} ms ago (${describeRevs(decision.evaluatedRevs)})`);
    } else parts.push(`generation ${read.status}`);
    const state = await deps.store.getEnvoyState(nodeId);
    parts.push(state.status === 'found' ? `state ${describeState(state.value, now)}` : `state ${state.status}`);
    const events = await deps.store.listEnvoyEvents(nodeId, { descending: true, limit: 40 });
    parts.push(`newest events: ${events.items.map((e) => `${e.outcome} ${e.typeUrl.split('.').pop() ?? e.typeUrl}@${e.lineage.split('.').pop() ?? e.lineage}:${e.seq} ${now - e.at} ms ago`).join(', ')}`);
  } catch (error) {
    parts.push(`(reading evidence failed: ${String(error)})`);
  }
  return parts.join('\n    ');
}

/** The (object, generation, Envoy) a true-only-when-programmed violation names, if it names them. */
export function namedInTrueViolation(detail: string): { name: string; generation: number; nodeId: string } | undefined {
  const match = /^(\S+) True at generation (\d+) .*? but (\S+) (?:had|held)/.exec(detail);
  return match === null ? undefined : { name: match[1]!, generation: Number(match[2]), nodeId: match[3]! };
}

/** The violations, each true-only-when-programmed one followed by the evidence for what it names (once per object, generation and Envoy). */
export async function withTrueEvidence(violations: readonly Violation[], deps: ConvergenceDeps): Promise<Violation[]> {
  const seen = new Set<string>();
  const result: Violation[] = [];
  for (const violation of violations) {
    const named = violation.invariant.startsWith('I1') ? namedInTrueViolation(violation.detail) : undefined;
    const key = named === undefined ? undefined : `${named.name}@${named.generation}/${named.nodeId}`;
    if (named === undefined || key === undefined || seen.has(key)) {
      result.push(violation);
      continue;
    }
    seen.add(key);
    const ref: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: named.name };
    result.push({ ...violation, detail: `${violation.detail}\n    ${await describeTrueEvidence(deps, ref, named.generation, named.nodeId)}` });
  }
  return result;
}
