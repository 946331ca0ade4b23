// The recorder writes a flush's watermarks before its Envoy states (recorder/index.ts `flushOnce`): a
// generation cannot be decided before its watermark is stored, and during a fleet-wide push the
// watermark used to wait behind one conditional state write per Envoy (~29 s at 1,000
// Envoys). Writes of one object generation keep their order, and a failed one holds the later ones.
import { newEnvoyState, type ConditionalWriteResult, type EnvoyState, type LineageWatermark, type ObjectRef } from '../../../common/core';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { testLogger } from './helpers';

const LINEAGE = 'gw-wm.boot1.edge';
const TYPE = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';

/** The in-memory store, logging the order of the writes it receives; watermark writes can fail. */
class OrderedStore extends InMemoryEventStore {
  readonly writes: string[] = [];
  failWatermarks = false;
  override async updateEnvoyState(state: EnvoyState, expectedRev: number | undefined): Promise<ConditionalWriteResult<EnvoyState>> {
    this.writes.push(`state:${state.nodeId}`);
    return super.updateEnvoyState(state, expectedRev);
  }
  override async putWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): Promise<'written' | 'alreadySet'> {
    if (this.failWatermarks) throw new Error('store unreachable (test)');
    this.writes.push(`watermark:${ref.name}@${generation}`);
    return super.putWatermark(ref, generation, lineage, watermark);
  }
  override async markNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): Promise<void> {
    this.writes.push(`notObservable:${ref.name}@${generation}`);
    return super.markNotObservable(ref, generation, reason, at);
  }
}

const ref = (name: string): ObjectRef => ({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name });
const watermark = (seq: number): LineageWatermark => ({ seq, types: { [TYPE]: seq }, at: 1 });
const stateOf = (nodeId: string): EnvoyState => newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now: 1 });

describe('Recorder: watermarks before Envoy states', () => {
  let store: OrderedStore;
  let recorder: Recorder;

  beforeEach(() => {
    store = new OrderedStore();
    recorder = new Recorder({ store, logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 60_000, retryBaseMs: 1, retryMaxMs: 5, maxStatesPerFlush: 1000 });
  });

  afterEach(async () => {
    store.failWatermarks = false;
    await recorder.close(1000);
  });

  it('writes every queued watermark before the first Envoy state of the same flush', async () => {
    // States queued first, as in a push: the relay records each Envoy's send before the rebuild's
    // watermarks reach the recorder in the same flush window.
    for (let i = 0; i < 200; i++) recorder.enqueueEnvoyState(stateOf(`n${i}`));
    recorder.enqueueWatermark(ref('a'), 2, LINEAGE, watermark(7));
    recorder.enqueueWatermark(ref('b'), 5, LINEAGE, watermark(7));
    await recorder.flushNow();
    const lastWatermark = Math.max(store.writes.indexOf('watermark:a@2'), store.writes.indexOf('watermark:b@5'));
    const firstState = store.writes.findIndex((write) => write.startsWith('state:'));
    expect(store.writes.filter((write) => write.startsWith('state:'))).toHaveLength(200);
    expect(lastWatermark).toBeGreaterThanOrEqual(0);
    expect(lastWatermark).toBeLessThan(firstState);
  });

  it('keeps one generation\'s writes in order and holds them behind a failed watermark', async () => {
    recorder.enqueueWatermark(ref('c'), 3, LINEAGE, watermark(9));
    recorder.enqueueNotObservable(ref('c'), 3, 'provenance missing', 2);
    store.failWatermarks = true;
    await recorder.flushNow();
    // Neither written: the mark stays behind its generation's failed watermark.
    expect(store.writes).toEqual([]);
    store.failWatermarks = false;
    await recorder.flushNow();
    expect(store.writes).toEqual(['watermark:c@3', 'notObservable:c@3']);
  });
});
