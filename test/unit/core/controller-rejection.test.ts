// A generation the controller processed but rejected (HTTPProxy `Valid=False` at observedGeneration
// G): the tracked kind reads it, the barrier marks it instead of taking a watermark, and convergence
// decides Invalid whatever Envoys ACK, with a condition quoting the controller's message (made safe).
import pino from 'pino';
import {
  computeConvergence,
  conditionForDecision,
  decisionFromConvergence,
  DecisionSchema,
  evaluateFromAggregates,
  memberFromEnvoyState,
  shardOf,
  applyMember,
  emptyShard,
  watermarkOf,
  type ObjectGeneration,
  type ObjectRef,
} from '../../../common/core';
import { ObservedGenerationBarrier } from '../../../xds-gateway/tracking/barrier';
import type { Recorder } from '../../../xds-gateway/tracking/recorder';
import { HTTPPROXY_KIND, HTTPROUTE_KIND, observeObject, type TrackedKind } from '../../../xds-gateway/tracking/tracked-kinds';
import { CDS, envoy, L1, T0 } from './fixtures';

const ref: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'app-1' };
const CONTOUR_MESSAGE = 'Service "default/app-1-v2" not found';

function proxy(generation: number, valid: { status: string; observedGeneration: number; message?: string } | undefined): unknown {
  return {
    metadata: { name: 'app-1', namespace: 'default', generation },
    status: valid === undefined ? {} : { currentStatus: valid.status === 'True' ? 'valid' : 'invalid', conditions: [{ type: 'Valid', reason: 'ErrorPresent', ...valid }] },
  };
}

describe('tracked kinds: reading a rejection', () => {
  it.each<[string, TrackedKind, unknown, { processed: number | undefined; rejected?: string }]>([
    ['HTTPProxy Valid=False at G', HTTPPROXY_KIND, proxy(3, { status: 'False', observedGeneration: 3, message: CONTOUR_MESSAGE }), { processed: 3, rejected: CONTOUR_MESSAGE }],
    ['HTTPProxy Valid=True', HTTPPROXY_KIND, proxy(3, { status: 'True', observedGeneration: 3, message: 'Valid HTTPProxy' }), { processed: 3 }],
    ['HTTPProxy Valid=False without a message', HTTPPROXY_KIND, proxy(3, { status: 'False', observedGeneration: 3 }), { processed: 3, rejected: 'Valid is False' }],
    ['HTTPProxy Valid=False with no observedGeneration: nothing processed', HTTPPROXY_KIND, proxy(3, { status: 'False', observedGeneration: 0, message: 'x' }), { processed: undefined }],
    ['a custom condition without rejectedWhenStatus: False is not a rejection', { ...HTTPPROXY_KIND, signal: { type: 'condition', conditionType: 'Valid' } }, proxy(3, { status: 'False', observedGeneration: 3, message: 'x' }), { processed: 3 }],
  ])('%s', (_name, kind, object, expected) => {
    const observed = observeObject(kind, object);
    expect(observed).toBeDefined();
    expect({ processed: observed?.processed, ...(observed?.rejected === undefined ? {} : { rejected: observed.rejected }) }).toEqual(expected);
  });

  describe('Gateway API routes: Accepted or ResolvedRefs False on the controller\'s entries', () => {
    const ref = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default', name: 'r' };
    const route = (parents: unknown[]) => ({ metadata: { name: 'r', namespace: 'default', generation: 2 }, status: { parents } });
    const entry = (controllerName: string, conditions: Array<{ type: string; status: string; observedGeneration: number; message?: string }>) => ({ controllerName, conditions });
    const contour = 'projectcontour.io/gateway-controller';

    it.each<[string, unknown[], { processed?: number; rejected?: string }]>([
      ['Accepted=False at the processed generation', [entry(contour, [{ type: 'Accepted', status: 'False', observedGeneration: 2, message: 'no listener allows it' }])], { processed: 2, rejected: 'Accepted: no listener allows it' }],
      ['ResolvedRefs=False (a missing Service)', [entry(contour, [{ type: 'Accepted', status: 'True', observedGeneration: 2 }, { type: 'ResolvedRefs', status: 'False', observedGeneration: 2, message: 'service "default/nope" not found' }])], { processed: 2, rejected: 'ResolvedRefs: service "default/nope" not found' }],
      ['a False condition of another type is not a rejection', [entry(contour, [{ type: 'Accepted', status: 'True', observedGeneration: 2 }, { type: 'PartiallyInvalid', status: 'False', observedGeneration: 2 }])], { processed: 2 }],
      ['all True: processed, not rejected', [entry(contour, [{ type: 'Accepted', status: 'True', observedGeneration: 2 }, { type: 'ResolvedRefs', status: 'True', observedGeneration: 2 }])], { processed: 2 }],
      ['our own entries are neither progress nor rejection', [entry('xds-programmed.dev/status', [{ type: 'Accepted', status: 'False', observedGeneration: 2 }])], {}],
    ])('%s', (_name, parents, expected) => {
      const observed = observeObject(HTTPROUTE_KIND, route(parents));
      expect(observed?.ref).toEqual(ref);
      expect({ ...(observed?.processed === undefined ? {} : { processed: observed.processed }), ...(observed?.rejected === undefined ? {} : { rejected: observed.rejected }) }).toEqual(expected);
    });
  });

  it('caps a long controller message', () => {
    const observed = observeObject(HTTPPROXY_KIND, proxy(1, { status: 'False', observedGeneration: 1, message: 'x'.repeat(5000) }));
    expect(observed?.rejected).toHaveLength(1024);
  });
});

describe('barrier: a rejected generation is marked once, never watermarked', () => {
  it('marks G rejected once, and a later valid generation goes to the barrier as before', async () => {
    const rejected: [number, string][] = [];
    const watermarks: number[] = [];
    const recorder = {
      enqueueRejectedByController: (_ref: ObjectRef, generation: number, message: string) => rejected.push([generation, message]),
      enqueueWatermark: (_ref: ObjectRef, generation: number) => watermarks.push(generation),
      enqueueNotObservable: () => undefined,
    } as unknown as Recorder;
    const relay = { groups: () => [{ group: 'edge', lineage: L1 }], reopenUpstream: async () => ({ lineage: L1, seq: 9, types: {} }) } as never;
    const barrier = new ObservedGenerationBarrier({ relay, recorder, logger: pino({ level: 'silent' }), clock: { now: () => T0 } });
    const signal = HTTPPROXY_KIND.signal;
    const at = (object: unknown): ReturnType<typeof observeObject> & object => observeObject(HTTPPROXY_KIND, object) as ReturnType<typeof observeObject> & object;
    barrier.observe(at(proxy(3, { status: 'False', observedGeneration: 3, message: CONTOUR_MESSAGE })), signal);
    barrier.observe(at(proxy(3, { status: 'False', observedGeneration: 3, message: CONTOUR_MESSAGE })), signal);
    await barrier.whenIdle();
    expect(rejected).toEqual([[3, CONTOUR_MESSAGE]]);
    expect(watermarks).toEqual([]);
    barrier.observe(at(proxy(4, { status: 'True', observedGeneration: 4, message: 'Valid HTTPProxy' })), signal);
    await barrier.whenIdle();
    expect(watermarks).toEqual([4]);
    expect(rejected).toHaveLength(1);
    barrier.stop();
  });
});

describe('convergence: Invalid whatever Envoys ACK', () => {
  const rejectedItem: ObjectGeneration = {
    object: ref,
    generation: 3,
    // Even with a watermark (e.g. the controller re-validated G later): the rejection wins.
    watermarks: { [L1]: { seq: 1, types: { [CDS]: 1 }, at: T0 } },
    rejectedByController: `${CONTOUR_MESSAGE}\n\u202Eforged line`,
    firstSeenAt: T0,
  };
  const acked = envoy('envoy-0', { [CDS]: { acked: 5, lineage: L1 } });

  it('core computeConvergence and evaluateFromAggregates agree', () => {
    const policy = { ttlMs: 60_000, ackTimeoutMs: 10_000 };
    const watermark = watermarkOf(rejectedItem);
    expect(watermark).toEqual({ observable: false, reason: rejectedItem.rejectedByController, rejectedByController: true });
    const core = computeConvergence({ object: ref, generation: 3, watermark, envoys: [acked], now: T0, policy });
    expect(core).toMatchObject({ state: 'Invalid', programmed: 0, total: 1, controllerMessage: rejectedItem.rejectedByController });
    const shard = applyMember(emptyShard(L1, shardOf('envoy-0', 1)), 'envoy-0', memberFromEnvoyState(acked, [])).shard;
    const fromAggregates = evaluateFromAggregates({ object: ref, generation: 3, watermark, aggregates: [{ lineage: L1, shards: [shard], envoysRecorded: 1 }], now: T0, policy });
    expect(fromAggregates).toMatchObject({ state: 'Invalid', controllerMessage: rejectedItem.rejectedByController });
  });

  it('the decision round-trips and its condition is False/Invalid at G with the controller message, sanitised', () => {
    const convergence = computeConvergence({ object: ref, generation: 3, watermark: watermarkOf(rejectedItem), envoys: [acked], now: T0, policy: { ttlMs: 60_000, ackTimeoutMs: 10_000 } });
    const decision = DecisionSchema.parse(decisionFromConvergence(convergence, T0, 1));
    const condition = conditionForDecision(ref, 3, decision);
    expect(condition).toEqual({
      type: 'EnvoyProgrammed',
      status: 'False',
      observedGeneration: 3,
      reason: 'Invalid',
      message: 'the controller rejected generation 3: Service "default/app-1-v2" not found\uFFFD\uFFFDforged line',
    });
  });

  it('a not-observable item without a rejection is unchanged', () => {
    const item: ObjectGeneration = { object: ref, generation: 2, watermarks: {}, notObservable: 'no signal', firstSeenAt: T0 };
    expect(watermarkOf(item)).toEqual({ observable: false, reason: 'no signal' });
  });
});
