// Evaluation from PROGRESS items must give the answer evaluateFromAggregates gives from shards holding
// the same states: the verdict, programmed and total, and the blockers (those it names are the shard
// evaluator's, in its order; named + omitted = the shard evaluator's count). The fleet is driven
// through the core's transitions by the shared Simulation (fleet-model.ts); the gateway's part
// (programmedThrough from the lineage histories) is added as the recorder does.
//
// Differences by design (common/core/lineage-progress.ts, file comment), and how this test keeps to
// the rest:
//  - the denominator in transit cannot arise from PROGRESS: the shards here hold every state, with the
//    lineage count equal to what they applied, so the shard evaluator's check never fires either (the
//    in-transit case is asserted in lineage-progress.test.ts);
//  - liveness is judged at the gateway's write, so both are evaluated at that moment;
//  - a watermark the gateway did not know as open is judged conservatively: in runs where the gateway
//    is not told of it, only the safe-side relations are asserted.
import fc from 'fast-check';
import {
  appliedMembers,
  applyMember,
  emptyShard,
  evaluateFromAggregates,
  evaluateFromProgress,
  LineageProgressSchema,
  memberFromEnvoyState,
  progressFromStates,
  shardOf,
  typeVersionAt,
  withProgrammedThrough,
  type AggregateShard,
  type Convergence,
  type EnvoyState,
  type LineageAggregate,
  type LineageProgress,
  type LineageWatermark,
} from '../../../common/core';
import { actionArb, fleetArb, LINEAGES, policy, SCENARIOS, Simulation, TYPES, type Action } from './fleet-model';

const SHARDS = 4;
/** A third gateway instance's lineage, besides the fleet model's two. */
const L3 = 'gw-c.boot1.edge';
/** Lineages a type may be moved to: the fleet model's two and one no Envoy connects to. */
const FOREIGN = [...LINEAGES, L3] as const;

interface Move {
  e: number;
  type: number;
  to: number;
}
const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
/** The object the fleet model's NACKs blame when they blame another one. */
const otherObject = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'other' };

/** The Simulation plus what the gateway adds: per-lineage type histories and programmedThrough. */
class Gateway {
  readonly histories: Record<string, Record<string, number[]>> = {};

  constructor(readonly sim: Simulation) {
    for (const lineage of LINEAGES) this.histories[lineage] = Object.fromEntries(TYPES.map((t) => [t, [0]]));
  }

  apply(action: Action): void {
    this.sim.apply(action);
    if (action.k === 'change') this.histories[LINEAGES[action.lineage]!]![TYPES[action.type]!]!.push(this.sim.seqs[LINEAGES[action.lineage]!]!);
  }

  /**
   * The states as the gateway records them. `moves` put types on other lineages, as per-type streams
   * on different gateway instances do (the fleet model's Envoys use one stream); programmedThrough is
   * then over the own-lineage types, as the gateway's merge keeps it (docs/CONVERGENCE.md, "Limitations").
   */
  states(moves: readonly Move[] = []): EnvoyState[] {
    return [...this.sim.core.values()].map((raw, rev) => {
      const types = { ...raw.types };
      for (const move of moves.filter((m) => this.sim.model[m.e % this.sim.model.length]!.nodeId === raw.nodeId)) {
        const typeUrl = Object.keys(types).sort()[move.type % Object.keys(types).length];
        if (typeUrl !== undefined) types[typeUrl] = { ...types[typeUrl]!, lineage: FOREIGN[move.to]! };
      }
      const own = Object.fromEntries(Object.entries(types).filter(([, type]) => type.lineage === raw.lineage));
      const { programmedThrough } = withProgrammedThrough({ ...raw, types: own }, this.histories[raw.lineage]!, { currentSeq: this.sim.seqs[raw.lineage]! });
      const { programmedThrough: _stale, ...rest } = raw;
      return { ...rest, types, ...(programmedThrough === undefined ? {} : { programmedThrough }), rev };
    });
  }

  /** A watermark at a seq up to the current one (`seq` modulo it) as the gateway would record it: each type's version current at that seq. */
  watermarkAt(lineage: string, seq: number): LineageWatermark {
    const at = seq % (this.sim.seqs[lineage]! + 1);
    return { seq: at, types: Object.fromEntries(TYPES.map((t) => [t, typeVersionAt(this.histories[lineage]![t], at) ?? 0])), at: this.sim.now };
  }
}

/**
 * Shards holding every state (what the convergence function has once all records arrived), with the
 * LINEAGE items' heartbeat the PROGRESS items carry (it vouches for CONNECTED members in both).
 */
function shardsOf(states: readonly EnvoyState[], lineages: readonly string[], requiredTypeUrls: readonly string[], heartbeatAt: number): LineageAggregate[] {
  const shards = new Map<string, AggregateShard>();
  for (const state of states) {
    const index = shardOf(state.nodeId, SHARDS);
    const key = `${state.lineage}|${index}`;
    shards.set(key, applyMember(shards.get(key) ?? emptyShard(state.lineage, index), state.nodeId, memberFromEnvoyState(state, requiredTypeUrls)).shard);
  }
  return lineages.map((lineage) => {
    const aggregate = { lineage, envoysRecorded: 0, shards: [...shards.values()].filter((s) => s.lineage === lineage) };
    // Nothing in transit: the gateway's count is what the shards applied.
    return { ...aggregate, envoysRecorded: appliedMembers(aggregate), heartbeatAt };
  });
}

interface Options {
  /** Lineages out of the live set (their gateway is dead): neither evaluator reads them. */
  dead: string[];
  /** After the first actions: every Envoy reconnects and ACKs the latest, so programmedThrough values spread with the actions after. */
  heal: boolean;
  after: Action[];
  /** At the end, every connected Envoy heartbeats (fewer runs where the TTL left nobody live). */
  freshen: boolean;
  moves: Move[];
  requiredTypeUrls: string[];
  /** Whether the gateway knew the evaluated watermark as open when it wrote. */
  knows: boolean;
  /** Further open watermarks (seqs), so the histogram folds at several anchors. */
  extraAnchors: number[];
  maxListed: number | undefined;
}

/** Changes reaching some Envoys and not others: programmedThrough values spread across the anchors. */
const rolloutStepArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ k: fc.constant('change' as const), lineage: fc.nat(1), type: fc.nat(3) }),
  fc.record({ k: fc.constant('send' as const), e: fc.nat(20), type: fc.nat(20) }),
  fc.record({ k: fc.constant('ack' as const), e: fc.nat(20), type: fc.nat(20) }),
);

const optionsArb: fc.Arbitrary<Options> = fc.record({
  // The first lineage stays live, so fewer runs have nobody to decide by.
  dead: fc.subarray(FOREIGN.slice(1)),
  heal: fc.boolean(),
  after: fc.array(fc.oneof({ arbitrary: rolloutStepArb, weight: 3 }, { arbitrary: actionArb, weight: 1 }), { maxLength: 40, size: 'max' }),
  freshen: fc.boolean(),
  moves: fc.array(fc.record({ e: fc.nat(20), type: fc.nat(3), to: fc.nat(FOREIGN.length - 1) }), { maxLength: 3 }),
  requiredTypeUrls: fc.subarray([...TYPES], { maxLength: 2 }),
  knows: fc.integer({ min: 0, max: 4 }).map((n) => n > 0),
  extraAnchors: fc.array(fc.nat(30), { maxLength: 3 }),
  maxListed: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
});

function check(fleet: { lineage: number; types: string[] }[], actions: Action[], options: Options): void {
  const gateway = new Gateway(new Simulation(fleet));
  for (const action of actions) gateway.apply(action);
  const { sim } = gateway;
  if (options.heal) {
    sim.heal();
    for (const action of options.after) gateway.apply(action);
  }
  if (options.freshen) sim.model.forEach((_m, e) => gateway.apply({ k: 'heartbeat', e }));
  const states = gateway.states(options.moves);
  const live = LINEAGES.filter((lineage) => !options.dead.includes(lineage));
  const dead = new Set(options.dead);
  const evaluationPolicy = { ...policy, requiredTypeUrls: options.requiredTypeUrls };
  const items = new Map<string, LineageProgress>();
  for (const lineage of live) {
    const recorded = sim.watermarks[lineage];
    const open = [...(options.knows && recorded !== undefined ? [recorded] : []), ...options.extraAnchors.map((seq) => gateway.watermarkAt(lineage, seq))];
    const item = progressFromStates({
      lineage,
      v: 1,
      heartbeatAt: sim.now,
      states: states.filter((state) => state.lineage === lineage),
      openWatermarks: open,
      requiredTypeUrls: options.requiredTypeUrls,
      policy,
      ...(options.maxListed === undefined ? {} : { maxListed: options.maxListed }),
    });
    // What the gateway writes is what the store's schema accepts.
    expect(LineageProgressSchema.safeParse(item)).toEqual({ success: true, data: item });
    items.set(lineage, item);
  }
  const aggregates = shardsOf(states, live, options.requiredTypeUrls, sim.now);
  const watermark = sim.watermark();
  // Whether the evaluated watermark is an anchor of every lineage it is on.
  const anchored = live.every((lineage) => {
    const seq = sim.watermarks[lineage]?.seq;
    return seq === undefined || items.get(lineage)!.anchors.includes(seq);
  });
  for (const decided of [object, otherObject]) {
    const expected = evaluateFromAggregates({ object: decided, generation: 3, watermark, aggregates, deadLineages: dead, now: sim.now, policy: evaluationPolicy });
    const actual = evaluateFromProgress({ object: decided, generation: 3, watermark, lineages: live.map((lineage) => ({ lineage, progress: items.get(lineage) })), deadLineages: dead, now: sim.now, policy: evaluationPolicy });
    expect(actual.total).toBe(expected.total);
    expect(actual.programmed + actual.blockers.length + actual.blockersOmitted).toBe(actual.total);
    // The blockers it names are the shard evaluator's, in its order.
    const namedIds = new Set(actual.blockers.map((b) => b.nodeId));
    expect(actual.blockers).toEqual(expected.blockers.filter((b) => namedIds.has(b.nodeId)));
    if (anchored) {
      expect(actual.state).toBe(expected.state);
      expect(actual.programmed).toBe(expected.programmed);
      expect(actual.blockers.length + actual.blockersOmitted).toBe(expected.blockers.length);
      // Within the listing bound, every blocker is named.
      const bound = options.maxListed ?? 20;
      if (live.every((lineage) => items.get(lineage)!.members <= bound)) expect(actual.blockers).toEqual(expected.blockers);
    } else {
      safeSide(actual, expected);
    }
  }
}

/** A watermark off the anchors: never more programmed, never a verdict the shards would not give but Pending. */
function safeSide(actual: Convergence, expected: Convergence): void {
  expect(actual.programmed).toBeLessThanOrEqual(expected.programmed);
  if (actual.state === 'Programmed') expect(expected.state).toBe('Programmed');
  if (['Rejected', 'Blocked', 'NoEnvoys'].includes(expected.state)) expect(actual.state).toBe(expected.state);
  if (actual.state !== expected.state) expect(actual.state).toBe('Pending');
}

describe('evaluateFromProgress equals evaluateFromAggregates over the same states (fast-check)', () => {
  it('for random fleets and event sequences, dead lineages, required types and listing bounds', () => {
    const plain: Options = { dead: [], heal: false, after: [], freshen: false, moves: [], requiredTypeUrls: [], knows: true, extraAnchors: [], maxListed: undefined };
    fc.assert(
      fc.property(fleetArb as fc.Arbitrary<{ lineage: number; types: string[] }[]>, fc.array(actionArb, { maxLength: 80, size: 'max' }), optionsArb, check),
      { numRuns: 500, examples: SCENARIOS.map(([fleet, actions]): [typeof fleet, typeof actions, Options] => [fleet, actions, plain]) },
    );
  });
});
