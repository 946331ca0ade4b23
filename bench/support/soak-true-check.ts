// Invariant 1 for the soak (bench/soak.ts): a condition True at generation G must never be written
// while an Envoy the system must count (connected and heard from, or gone for less than the TTL less
// the gateway's heartbeat: the truth checker's liveAt) does not hold G. Judged per True write, seen by a
// Kubernetes watch (test/truth/observer.ts), against the fleet's ground truth, computed where the
// fleet runs (FleetQueries.heldAt, infra/local/envoys/fleet-queries.ts): at the write, each Envoy's
// latest accepted response of every type, read against the gateway's watermark for G on that
// response's lineage (the OBJECT item, as bench/e2e.ts uses it with programmedAt). The moment judged
// is the status writer's own record of its True write when that is earlier than the watch's
// delivery, so an ACK between write and delivery cannot hide a violation.
import type { EventStore, ObjectGeneration, ObjectRef } from '../../common/core';
import type { FleetQueries } from '../../infra/local/envoys/fleet-process';
import type { HeldTarget } from '../../infra/local/envoys/fleet-queries';
import type { ConditionWrite } from '../../test/truth/observer';
import { JOIN_RACE_MS } from '../../test/truth/checker';

export interface SoakViolation {
  check: 'true-while-not-held' | 'not-true-within-budget' | 'aggregate-drift' | 'lost-stream-records';
  detail: string;
}

export interface TrueChecks {
  /** True writes judged against the fleet. */
  judged: number;
  /** True writes that could not be judged (no OBJECT item, or no watermark on it), and why. */
  unjudged: string[];
  /** Envoys that joined within JOIN_RACE_MS of a True write and did not hold it: the known join race, reported apart. */
  joinRace: number;
  violations: SoakViolation[];
}

export interface TrueWriteJudge {
  readonly result: TrueChecks;
  /** Judges the True writes seen up to `until` (ms) that are not judged yet. */
  judgeUntil(writes: readonly ConditionWrite[], until: number): Promise<void>;
}

/** `goneGraceMs`: how long after its connection ended an Envoy must still be counted (TTL − gateway heartbeat − slack). */
export function trueWriteJudge(fleet: Pick<FleetQueries, 'heldAt'>, store: Pick<EventStore, 'getObjectGeneration'>, refOf: (name: string) => ObjectRef, goneGraceMs: number): TrueWriteJudge {
  const result: TrueChecks = { judged: 0, unjudged: [], joinRace: 0, violations: [] };
  let next = 0;
  const firstTrue = new Set<string>();
  return {
    result,
    async judgeUntil(writes, until) {
      const targets: HeldTarget[] = [];
      const described = new Map<string, string>();
      while (next < writes.length && (writes[next]?.at ?? Number.POSITIVE_INFINITY) <= until) {
        const write = writes[next] as ConditionWrite;
        next++;
        if (write.condition.status !== 'True') continue;
        const observed = write.condition.observedGeneration;
        const read = await store.getObjectGeneration(refOf(write.name), observed);
        const record: ObjectGeneration | undefined = read.status === 'found' ? read.value : undefined;
        const lineages = record === undefined ? {} : Object.fromEntries(Object.entries(record.watermarks).map(([lineage, watermark]) => [lineage, { ...watermark.types }]));
        if (Object.keys(lineages).length === 0) {
          result.unjudged.push(`${write.name} True@${observed} seen at ${new Date(write.at).toISOString()}: ${record === undefined ? `OBJECT item ${read.status}` : 'no watermark'}`);
          continue;
        }
        // The first True write of a generation is the one the item's programmedAt records.
        const key = `${write.name}@${observed}`;
        const recordedAt = !firstTrue.has(key) && record?.programmedAt !== undefined ? record.programmedAt : Number.POSITIVE_INFINITY;
        firstTrue.add(key);
        const at = Math.min(write.at, recordedAt);
        const targetKey = `${key}#${targets.length}`;
        targets.push({ key: targetKey, at, seqByTypeByLineage: lineages });
        described.set(targetKey, `${write.name} True at generation ${observed} (written by ${new Date(at).toISOString()})`);
      }
      if (targets.length === 0) return;
      const { missing } = await fleet.heldAt(targets, JOIN_RACE_MS, goneGraceMs);
      for (const target of targets) {
        result.judged++;
        const found = missing[target.key];
        if (found === undefined || found.notHolding === 0) continue;
        result.joinRace += found.joinedRecently;
        const failing = found.notHolding - found.joinedRecently;
        if (failing <= 0) continue;
        result.violations.push({
          check: 'true-while-not-held',
          detail: `${described.get(target.key) ?? target.key}: ${failing} of the ${found.live} Envoys it had to count then did not hold it (e.g. ${found.examples.join(', ')})`,
        });
      }
    },
  };
}
