// The denominator, as a property (fast-check): random interleavings of what a gateway does (Envoys
// connect, restart under the same node id, ACK, disconnect; the expire function marks them EXPIRED;
// DynamoDB's TTL deletes expired states), of the LINEAGE writes that carry `envoysRecorded`, of the
// DynamoDB stream applying each item's records (in order per item, in any order across items), and of
// evaluations (shards read, then the LINEAGE item read later). Property: an evaluation never says
// Programmed while an Envoy the gateway had recorded, live at the time the shards were read, is below
// the watermark (invariant 1, docs/ARCHITECTURE.md).
//
// The gateway model follows the recorder (xds-gateway/tracking/recorder/; its rule is
// common/core/envoy-count.ts): a state carrying a new incarnation (first
// state, new connection, or less programmed than the last) is written only after a LINEAGE write whose
// count includes it. The same run with the count disabled (every lineage count "all applied") must find
// a counterexample: the property is not vacuous.
import fc from 'fast-check';

import {
  applyMember,
  emptyShard,
  evaluateFromAggregates,
  memberFromEnvoyState,
  removeMember,
  shardOf,
  type AggregateShard,
  type EnvoyState,
  type Watermark,
} from '../../../common/core';
import { CDS, envoy, L1, T0 } from './fixtures';

const SHARDS = 2;
const NODES = 3;
const WATERMARK_SEQ = 3;
const WATERMARK: Watermark = { observable: true, lineages: { [L1]: { seq: WATERMARK_SEQ, types: { [CDS]: WATERMARK_SEQ }, at: T0 } } };
const POLICY = { ttlMs: 10 ** 12, ackTimeoutMs: 10 ** 12 };
const OBJECT = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };

type Action =
  | { kind: 'connect'; node: number; restart: boolean }
  | { kind: 'ack'; node: number; seq: number }
  | { kind: 'disconnect'; node: number }
  | { kind: 'expire'; node: number }
  | { kind: 'delete'; node: number }
  /** A LINEAGE write with nothing new to count (a heartbeat): the count as it is. */
  | { kind: 'countWrite' }
  | { kind: 'stateWrite'; node: number }
  | { kind: 'deliver'; node: number }
  | { kind: 'readShards' }
  | { kind: 'decide' }
  /** readShards then decide with nothing in between (the common case). */
  | { kind: 'evaluate' };

const node = fc.integer({ min: 0, max: NODES - 1 });
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('connect' as const), node, restart: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('ack' as const), node, seq: fc.integer({ min: 0, max: 5 }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('disconnect' as const), node }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('expire' as const), node }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('delete' as const), node }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'countWrite' as const }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('stateWrite' as const), node }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('deliver' as const), node }), weight: 4 },
  { arbitrary: fc.constant({ kind: 'readShards' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'decide' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'evaluate' as const }), weight: 3 },
);

/** What the Envoy really is (the gateway's in-memory view). */
interface Truth {
  /** Incremented on every connection (and restart): the gateway can only vouch for an epoch it has written. */
  epoch: number;
  connected: boolean;
  expired: boolean;
  acked: number;
  connectedAt: number;
}

/**
 * incarnations: the design (common/core/envoy-count.ts, as the recorder applies it). distinctNodes: counting node ids only
 * (misses an Envoy restarted under the same id). off: no count (the aggregates alone).
 */
type CountMode = 'incarnations' | 'distinctNodes' | 'off';

type StreamRecord = { kind: 'set'; state: EnvoyState } | { kind: 'remove'; old: EnvoyState };

class World {
  private clock = T0;
  readonly truth = new Map<string, Truth>();
  readonly table = new Map<string, EnvoyState>();
  private readonly streams = new Map<string, StreamRecord[]>();
  private shards = new Map<number, AggregateShard>();
  /** Gateway (recorder): per node the incarnation stamped and the count that includes it. */
  private readonly stamped = new Map<string, { incarnation: number; connectedAt: number; programmedThrough: number; countedAt: number; epoch: number }>();
  private wanted = 0;
  /** envoysRecorded on the stored LINEAGE item. */
  private stored = 0;
  private snapshot: { shards: AggregateShard[]; liveBelow: Map<string, number> } | undefined;
  violations: string[] = [];

  constructor(private readonly mode: CountMode) {}

  apply(action: Action): void {
    this.clock++;
    const id = 'node' in action ? `envoy-${action.node}` : '';
    const truth = this.truth.get(id);
    switch (action.kind) {
      case 'connect':
        if (truth?.connected === true && !action.restart) return;
        // A restart under the same node id runs nothing yet; a reconnect resumes what it ACKed.
        this.truth.set(id, { epoch: (truth?.epoch ?? 0) + 1, connected: true, expired: false, acked: action.restart || truth === undefined ? -1 : truth.acked, connectedAt: truth?.connected === true ? truth.connectedAt : this.clock });
        return;
      case 'ack':
        if (truth?.connected === true) truth.acked = Math.max(truth.acked, action.seq);
        return;
      case 'disconnect':
        if (truth !== undefined) truth.connected = false;
        return;
      case 'expire': {
        // The expire function: a disconnected Envoy's stored state becomes EXPIRED (rev + 1).
        const state = this.table.get(id);
        if (truth === undefined || truth.connected || state === undefined || state.status === 'EXPIRED') return;
        truth.expired = true;
        this.write({ ...state, status: 'EXPIRED', rev: state.rev + 1 });
        return;
      }
      case 'delete': {
        const state = this.table.get(id);
        if (state?.status !== 'EXPIRED') return;
        this.table.delete(id);
        this.push(id, { kind: 'remove', old: state });
        return;
      }
      case 'countWrite':
        this.stored = this.wanted;
        return;
      case 'stateWrite':
        this.gatewayWrite(id);
        return;
      case 'deliver':
        this.deliver(id);
        return;
      case 'readShards':
        this.readShards();
        return;
      case 'decide':
        this.decide();
        return;
      case 'evaluate':
        this.readShards();
        this.decide();
        return;
    }
  }

  /** The gateway writes the Envoy's current state, once the stored count includes its incarnation. */
  private gatewayWrite(id: string): void {
    const truth = this.truth.get(id);
    if (truth === undefined || truth.expired) return;
    const programmedThrough = truth.acked >= 0 ? truth.acked : undefined;
    const last = this.stamped.get(id);
    const renewed = this.mode === 'incarnations' && last !== undefined && (last.connectedAt !== truth.connectedAt || (programmedThrough ?? -1) < last.programmedThrough);
    if (last === undefined || renewed) this.wanted++;
    const incarnation = last === undefined ? 1 : renewed ? last.incarnation + 1 : last.incarnation;
    const countedAt = last === undefined || renewed ? this.wanted : last.countedAt;
    this.stamped.set(id, { incarnation, connectedAt: truth.connectedAt, programmedThrough: programmedThrough ?? -1, countedAt, epoch: truth.epoch });
    // Write-ahead, as in one recorder flush: the LINEAGE item with the new count is stored first.
    if (countedAt > this.stored) this.stored = this.wanted;
    const stored = this.table.get(id);
    const base = envoy(id, { [CDS]: truth.acked >= 0 ? { acked: truth.acked } : {} }, { lineage: L1, connectedAt: truth.connectedAt, lastSeenAt: this.clock, status: truth.connected ? 'CONNECTED' : 'DISCONNECTED' });
    this.write({ ...base, ...(programmedThrough === undefined ? {} : { programmedThrough }), incarnation, rev: stored === undefined ? 0 : stored.rev + 1 });
  }

  private write(state: EnvoyState): void {
    this.table.set(state.nodeId, state);
    this.push(state.nodeId, { kind: 'set', state });
  }

  private push(id: string, record: StreamRecord): void {
    this.streams.set(id, [...(this.streams.get(id) ?? []), record]);
  }

  /** The stream applies the oldest record of one item (per-item order; any order across items). */
  private deliver(id: string): void {
    const [record, ...rest] = this.streams.get(id) ?? [];
    if (record === undefined) return;
    this.streams.set(id, rest);
    const index = shardOf(id, SHARDS);
    const shard = this.shards.get(index) ?? emptyShard(L1, index);
    const next = record.kind === 'set' ? applyMember(shard, id, memberFromEnvoyState(record.state)) : removeMember(shard, id, record.old.rev, record.old.lastSeenAt);
    this.shards.set(index, next.shard);
  }

  private readShards(): void {
    const liveBelow = new Map<string, number>(); // node → its connection epoch
    for (const [id, truth] of this.truth) if (!truth.expired && truth.acked < WATERMARK_SEQ) liveBelow.set(id, truth.epoch);
    this.snapshot = { shards: [...this.shards.values()], liveBelow };
  }

  /** Reads the LINEAGE count (after the shards) and decides. */
  private decide(): void {
    if (this.snapshot === undefined) return;
    const { shards, liveBelow } = this.snapshot;
    // Recorded: the gateway has written (so counted, in a LINEAGE item stored by now) a state of the
    // Envoy's connection as it was when the shards were read. A connection or restart the gateway has
    // not written yet is the window docs/CONVERGENCE.md states (the recorder's flush latency).
    const recorded = (id: string, epoch: number): boolean => {
      const stamp = this.stamped.get(id);
      return stamp !== undefined && stamp.epoch === epoch && stamp.countedAt <= this.stored;
    };
    const applied = shards.reduce((sum, shard) => sum + Object.values(shard.members).reduce((n, m) => n + (m.k ?? 1), 0), 0);
    const result = evaluateFromAggregates({
      object: OBJECT,
      generation: 1,
      watermark: WATERMARK,
      aggregates: [{ lineage: L1, shards, envoysRecorded: this.mode === 'off' ? applied : this.stored }],
      now: this.clock,
      policy: POLICY,
    });
    if (result.state !== 'Programmed') return;
    const missed = [...liveBelow].filter(([id, epoch]) => recorded(id, epoch)).map(([id]) => id);
    if (missed.length > 0) this.violations.push(`Programmed while ${missed.join(', ')} (recorded, live) below the watermark`);
  }
}

function run(actions: readonly Action[], mode: CountMode): string[] {
  const world = new World(mode);
  for (const action of actions) world.apply(action);
  return world.violations;
}

const actionsArb = fc.array(actionArb, { minLength: 10, maxLength: 120 });

describe('the denominator check (fast-check)', () => {
  it('never Programmed while a recorded live Envoy is below the watermark, under any interleaving', () => {
    fc.assert(
      fc.property(actionsArb, (actions) => {
        expect(run(actions, 'incarnations')).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('a known interleaving: the held Envoy', () => {
    const script: Action[] = [
      { kind: 'connect', node: 0, restart: false },
      { kind: 'ack', node: 0, seq: 4 },
      { kind: 'connect', node: 1, restart: false },
      { kind: 'stateWrite', node: 0 },
      { kind: 'stateWrite', node: 1 },
      { kind: 'deliver', node: 0 },
      { kind: 'readShards' },
      { kind: 'decide' },
    ];
    expect(run(script, 'incarnations')).toEqual([]);
    expect(run(script, 'off')).toEqual(['Programmed while envoy-1 (recorded, live) below the watermark']);
  });

  it('a known interleaving: an Envoy restarted under the same node id, its new state held back', () => {
    const script: Action[] = [
      { kind: 'connect', node: 0, restart: false },
      { kind: 'ack', node: 0, seq: 4 },
      { kind: 'stateWrite', node: 0 },
      { kind: 'deliver', node: 0 },
      { kind: 'connect', node: 0, restart: true },
      { kind: 'stateWrite', node: 0 },
      { kind: 'readShards' },
      { kind: 'decide' },
    ];
    expect(run(script, 'incarnations')).toEqual([]);
    expect(run(script, 'incarnations')).toEqual([]);
    expect(run(script, 'distinctNodes')).toEqual(['Programmed while envoy-0 (recorded, live) below the watermark']);
  });

  it.each<[CountMode]>([['off'], ['distinctNodes']])('is not vacuous: with the count %s, some interleaving decides Programmed too early', (mode) => {
    const found = fc.check(
      fc.property(actionsArb, (actions) => run(actions, mode).length === 0),
      { numRuns: 5000, seed: 42 },
    );
    expect(found.failed).toBe(true);
  });
});
