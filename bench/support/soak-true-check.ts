// Invariant 1 for the soak (bench/soak.ts): a condition True at generation G must never be written
// while an Envoy the system must count does not hold G. Judged per True write, seen by a Kubernetes
// watch (test/truth/observer.ts), by the truth checker itself (checkTrueWrites, test/truth/checker.ts)
// where the fleet runs: the fleet child recorded the provenance stamps of every response its Envoys
// accepted (test/truth/fleet-true-writes.ts), so "held G" is what the bytes said, not any record of
// the product's. The moment judged is the status writer's own record of its True write when that is
// earlier than the watch's delivery, so an ACK between write and delivery cannot hide a violation; that
// time is the only thing read from the product's table.
import type { EventStore, ObjectRef } from '../../common/core';
import type { FleetQueries } from '../../infra/local/envoys/fleet-process';
import type { ConditionWrite } from '../../test/truth/observer';

export interface SoakViolation {
  check: 'true-while-not-held' | 'checker-gap' | 'not-true-within-budget' | 'aggregate-drift' | 'lost-stream-records';
  detail: string;
}

export interface TrueChecks {
  /** True writes judged against the fleet. */
  judged: number;
  /** True writes whose object no rebuild reflected yet (nothing to judge them by), and why. */
  unjudged: string[];
  /** Envoys that joined or came back within the checker's join-race window and did not hold it: the known race, reported apart. */
  joinRace: number;
  violations: SoakViolation[];
}

export interface TrueWriteJudge {
  readonly result: TrueChecks;
  /** Judges the True writes seen up to `until` (ms) that are not judged yet. */
  judgeUntil(writes: readonly ConditionWrite[], until: number): Promise<void>;
}

export interface TrueWriteContext {
  /** The subscribed types whose rebuilds reflect the object (`group/kind/namespace/name`): the control plane's rebuild logs. */
  typesOf(object: string): readonly string[];
  /** `group/kind/namespace/` of the tracked objects' stamps. */
  sourcePrefix: string;
  envoyTtlMs: number;
  envoyHeartbeatMs: number;
}

export function trueWriteJudge(fleet: Pick<FleetQueries, 'trueWriteViolations'>, store: Pick<EventStore, 'getObjectGeneration'>, refOf: (name: string) => ObjectRef, context: TrueWriteContext): TrueWriteJudge {
  const result: TrueChecks = { judged: 0, unjudged: [], joinRace: 0, violations: [] };
  let next = 0;
  const firstTrue = new Set<string>();
  return {
    result,
    async judgeUntil(writes, until) {
      const batch: Array<{ name: string; at: number; observedGeneration: number }> = [];
      const typesByObject: Record<string, string[]> = {};
      while (next < writes.length && (writes[next]?.at ?? Number.POSITIVE_INFINITY) <= until) {
        const write = writes[next] as ConditionWrite;
        next++;
        if (write.condition.status !== 'True') continue;
        const observed = write.condition.observedGeneration;
        const object = `${context.sourcePrefix}${write.name}`;
        const types = context.typesOf(object);
        if (types.length === 0) {
          result.unjudged.push(`${write.name} True@${observed} seen at ${new Date(write.at).toISOString()}: no rebuild reflects it`);
          continue;
        }
        typesByObject[object] = [...types];
        // The first True write of a generation is the one the OBJECT item's programmedAt records.
        const key = `${write.name}@${observed}`;
        let at = write.at;
        if (!firstTrue.has(key)) {
          firstTrue.add(key);
          const read = await store.getObjectGeneration(refOf(write.name), observed);
          if (read.status === 'found' && read.value.programmedAt !== undefined) at = Math.min(at, read.value.programmedAt);
        }
        batch.push({ name: write.name, at, observedGeneration: observed });
      }
      if (batch.length === 0) return;
      const found = await fleet.trueWriteViolations({ writes: batch, typesByObject, sourcePrefix: context.sourcePrefix, envoyTtlMs: context.envoyTtlMs, envoyHeartbeatMs: context.envoyHeartbeatMs });
      result.judged += batch.length;
      for (const violation of found) {
        if (violation.known === true) result.joinRace++;
        else result.violations.push({ check: violation.invariant === 'checker' ? 'checker-gap' : 'true-while-not-held', detail: violation.detail });
      }
    },
  };
}
