// Invariant 4 (bounded writes) at the core's level: while a fleet converges without faults, the
// condition the status writer would write changes O(1) times per generation, whatever the fleet size,
// when message-only changes do not count (conditionChanged with includeMessage: false).
import fc from 'fast-check';
import {
  applyAck,
  applySent,
  buildCondition,
  computeConvergence,
  conditionChanged,
  newEnvoyState,
  applySubscribe,
  type ConditionDraft,
  type EnvoyState,
  type Watermark,
} from '../../../common/core';
import { CDS, EDS, L1, LDS, RDS, T0 } from './fixtures';

const TYPES = [CDS, EDS, LDS, RDS];
const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };

describe('bounded condition writes', () => {
  /** Every Envoy behind on every type; they ACK one type at a time in `picks` order; the writer decides after each ACK. */
  function rollout(fleetSize: number, picks: Iterable<number>, gaps: number[]): { writes: number; written: ConditionDraft | undefined } {
    let now = T0;
    const envoys = new Map<string, EnvoyState>();
    for (let i = 0; i < fleetSize; i++) {
      let state = newEnvoyState({ identity: { nodeId: `envoy-${i}`, cluster: 'edge', metadata: {} }, group: 'edge', lineage: L1, now });
      for (const typeUrl of TYPES) {
        state = applySubscribe(state, { typeUrl, lineage: L1, resume: { lineage: L1, seq: 1 }, now });
        state = applySent(state, { typeUrl, version: { lineage: L1, seq: 2 }, now });
      }
      envoys.set(state.nodeId, state);
    }
    const watermark: Watermark = { observable: true, lineages: { [L1]: { seq: 2, types: Object.fromEntries(TYPES.map((t) => [t, 2])), at: now } } };
    const remaining = [...envoys.keys()].flatMap((nodeId) => TYPES.map((typeUrl) => ({ nodeId, typeUrl })));
    let written: ConditionDraft | undefined;
    let writes = 0;
    const decide = (): void => {
      const next = buildCondition(computeConvergence({ object, generation: 7, watermark, envoys: [...envoys.values()], now, policy }), {}, now);
      if (conditionChanged(written, next, { includeMessage: false })) {
        writes++;
        written = next;
      }
    };
    decide();
    const pick = picks[Symbol.iterator]();
    let step = 0;
    while (remaining.length > 0) {
      const [ack] = remaining.splice((pick.next().value as number) % remaining.length, 1);
      now += (gaps[step++ % gaps.length] as number) % 10; // well inside the ACK timeout
      envoys.set(ack!.nodeId, applyAck(envoys.get(ack!.nodeId)!, { typeUrl: ack!.typeUrl, version: { lineage: L1, seq: 2 }, now }));
      decide();
    }
    return { writes, written };
  }

  it('a fault-free rollout changes the condition at most twice (Pending, then Programmed) (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 25 }), fc.infiniteStream(fc.nat()), fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 20 }), (fleetSize, picks, gaps) => {
        const { writes, written } = rollout(fleetSize, picks, gaps);
        expect(written).toMatchObject({ status: 'True', reason: 'Programmed' });
        expect(writes).toBeLessThanOrEqual(2);
      }),
      { numRuns: 500 },
    );
  });

  it.each([[50], [200]])('the same holds for %d Envoys (independent of fleet size)', (fleetSize) => {
    let seed = 12345;
    const picks = { *[Symbol.iterator]() { for (;;) { seed = (seed * 1103515245 + 12345) % 2147483648; yield seed; } } };
    expect(rollout(fleetSize, picks, [3, 0, 7])).toMatchObject({ writes: 2, written: { status: 'True' } });
  });
});
