// Evaluation from per-lineage aggregates must give the same answer as computeConvergence over the
// whole fleet. The fleet is driven through the core's transitions by the shared Simulation; every
// state change becomes a "stream record" (state, rev). The records are then applied to the shards in a
// random order with duplicates (redelivery) — per-node order is NOT preserved — and since a member
// only takes a newer rev, the result must not depend on that order.
import fc from 'fast-check';
import {
  attributedTo,
  applyMember,
  computeConvergence,
  emptyShard,
  evaluateFromAggregates,
  goneMember,
  memberFromEnvoyState,
  recount,
  shardOf,
  shortTypeName,
  withProgrammedThrough,
  type AggregateShard,
  type EnvoyState,
  type LineageAggregate,
  type Member,
} from '../../../common/core';
import { actionArb, fleetArb, LINEAGES, policy, SCENARIOS, Simulation, TYPES } from './fleet-model';

const SHARDS = 4;
const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
/** The object the fleet model's NACKs blame when they blame another one. */
const otherObject = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'other' };

interface StreamRecord {
  lineage: string;
  nodeId: string;
  member: Member;
}

/** Simulation + what the gateway adds: per-type change histories, programmedThrough and revs. */
class Recorder {
  readonly histories: Record<string, Record<string, number[]>> = {};
  readonly revs = new Map<string, number>();
  readonly states = new Map<string, EnvoyState>();
  readonly records: StreamRecord[] = [];

  constructor(readonly sim: Simulation) {
    for (const lineage of LINEAGES) this.histories[lineage] = Object.fromEntries(TYPES.map((t) => [t, [0]]));
    this.capture();
  }

  apply(action: Parameters<Simulation['apply']>[0]): void {
    this.sim.apply(action);
    if (action.k === 'change') {
      const lineage = LINEAGES[action.lineage]!;
      this.histories[lineage]![TYPES[action.type]!]!.push(this.sim.seqs[lineage]!);
    }
    this.capture();
  }

  /** Writes every changed state with rev+1 (what the gateway's conditional writes do) and records it. */
  private capture(): void {
    for (const [nodeId, raw] of this.sim.core) {
      const computed = withProgrammedThrough(raw, this.histories[raw.lineage]!, { currentSeq: this.sim.seqs[raw.lineage]! });
      const previous = this.states.get(nodeId);
      if (previous !== undefined && JSON.stringify({ ...previous, rev: 0 }) === JSON.stringify({ ...computed, rev: 0 })) continue;
      const rev = (this.revs.get(nodeId) ?? -1) + 1;
      this.revs.set(nodeId, rev);
      const state = { ...computed, rev };
      this.records.push({ lineage: state.lineage, nodeId, member: memberFromEnvoyState(state) });
      if (previous !== undefined && previous.lineage !== state.lineage) {
        this.records.push({ lineage: previous.lineage, nodeId, member: goneMember(rev, state.lastSeenAt) });
      }
      this.states.set(nodeId, state);
    }
  }
}

function buildAggregates(records: readonly StreamRecord[], heartbeats: ReadonlyMap<string, number>): LineageAggregate[] {
  const shards = new Map<string, AggregateShard>();
  for (const record of records) {
    const index = shardOf(record.nodeId, SHARDS);
    const key = `${record.lineage}|${index}`;
    const shard = shards.get(key) ?? emptyShard(record.lineage, index);
    shards.set(key, applyMember(shard, record.nodeId, record.member).shard);
  }
  // Every record was delivered, so the gateway's count equals the distinct members applied.
  const recorded = (lineage: string): number => new Set(records.filter((r) => r.lineage === lineage).map((r) => r.nodeId)).size;
  return LINEAGES.map((lineage) => ({ lineage, envoysRecorded: recorded(lineage), heartbeatAt: heartbeats.get(lineage), shards: [...shards.values()].filter((s) => s.lineage === lineage) }));
}

function isSplit(state: EnvoyState): boolean {
  return Object.values(state.types).some((type) => type.subscribed && type.lineage !== state.lineage);
}

/** Per lineage: how old its heartbeat is (up to twice the TTL: the live set's window), or none known. */
const heartbeatAgesArb = fc.array(fc.option(fc.nat(2 * policy.ttlMs)), { minLength: LINEAGES.length, maxLength: LINEAGES.length });

describe('evaluateFromAggregates equals computeConvergence (fast-check)', () => {
  it('for random fleets and event sequences, with records redelivered and reordered', () => {
    fc.assert(
      fc.property(fleetArb as fc.Arbitrary<{ lineage: number; types: string[] }[]>, fc.array(actionArb, { maxLength: 80, size: 'max' }), fc.array(fc.nat(), { maxLength: 40 }), fc.integer(), heartbeatAgesArb, (fleet, actions, duplicates, seed, heartbeatAges) => {
        const recorder = new Recorder(new Simulation(fleet));
        for (const action of actions) recorder.apply(action);
        const { sim } = recorder;
        // Redeliver some records, then shuffle everything (deterministically from the seed).
        const delivered = [...recorder.records, ...duplicates.filter(() => recorder.records.length > 0).map((i) => recorder.records[i % recorder.records.length]!)];
        let state = seed >>> 0;
        for (let i = delivered.length - 1; i > 0; i--) {
          state = (Math.imul(state, 1103515245) + 12345) >>> 0;
          const j = state % (i + 1);
          [delivered[i], delivered[j]] = [delivered[j]!, delivered[i]!];
        }
        // Each lineage's heartbeat (or none known): it vouches for the lineage's CONNECTED Envoys in both evaluators.
        const heartbeats = new Map(LINEAGES.flatMap((lineage, i) => (heartbeatAges[i] === undefined || heartbeatAges[i] === null ? [] : [[lineage, sim.now - heartbeatAges[i]!] as const])));
        const aggregates = buildAggregates(delivered, heartbeats);
        // Incremental counts equal a recount.
        for (const aggregate of aggregates) for (const shard of aggregate.shards) expect({ counts: shard.counts, live: shard.live }).toEqual(recount(shard.members));
        const envoys = [...recorder.states.values()];
        const expected = computeConvergence({ object, generation: 3, watermark: sim.watermark(), envoys, now: sim.now, policy, lineageHeartbeats: heartbeats });
        const actual = evaluateFromAggregates({ object, generation: 3, watermark: sim.watermark(), aggregates, now: sim.now, policy });
        // Generations sharing a watermark share one evaluation (functions/lib/evaluate.ts): the result
        // for another object (the one the model's NACKs may blame), re-attributed, is this object's.
        const forOther = evaluateFromAggregates({ object: otherObject, generation: 3, watermark: sim.watermark(), aggregates, now: sim.now, policy });
        expect(attributedTo(forOther, object)).toEqual(actual);
        expect(actual.total).toBe(expected.total);
        if (envoys.some(isSplit)) {
          // Split Envoys are blocked by the aggregates (documented limitation): safe, never more programmed.
          expect(actual.programmed).toBeLessThanOrEqual(expected.programmed);
          if (actual.state === 'Programmed') expect(expected.state).toBe('Programmed');
          return;
        }
        expect(actual.state).toBe(expected.state);
        expect(actual.programmed).toBe(expected.programmed);
        expect(actual.blockers.map((b) => [b.nodeId, b.reason])).toEqual(expected.blockers.map((b) => [b.nodeId, b.reason]));
        for (const blocker of actual.blockers) {
          const core = expected.blockers.find((b) => b.nodeId === blocker.nodeId)!;
          if (blocker.reason === 'nacked' && core.reason === 'nacked') expect(blocker.nacks.map((n) => [n.typeUrl, n.seq])).toEqual(core.nacks.map((n) => [n.typeUrl, n.seq]));
          if (blocker.reason === 'pending' && core.reason === 'pending') expect(blocker.typeUrls.map(shortTypeName).sort()).toEqual(core.typeUrls.map(shortTypeName).sort());
          if (blocker.reason === 'stuck' && core.reason === 'stuck') expect([blocker.typeUrls, blocker.since]).toEqual([core.typeUrls, core.since]);
        }
      }),
      { numRuns: 500, examples: SCENARIOS.map(([fleet, actions]): [typeof fleet, typeof actions, number[], number, (number | null)[]] => [fleet, actions, [], 1, LINEAGES.map(() => null)]) },
    );
  });
});
