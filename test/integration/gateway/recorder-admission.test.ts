// Recorder.whenStateWritten, the signal stream admission waits on (docs/GATEWAY.md, "Stream
// admission"): it resolves only once a state enqueued no earlier than the call is stored, and that
// state is counted by the stored LINEAGE item; a failed write keeps it waiting; a newer state that
// supersedes the awaited one resolves it too. Flushes are driven by hand (flushNow).
import { newEnvoyState, type EnvoyState, type LineageState } from '../../../common/core';
import type { ConditionalWriteResult } from '../../../common/core';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { testLogger } from './helpers';

const LINEAGE = 'gw-adm.boot1.edge';

/** The in-memory store, whose Envoy state writes can be made to fail (an unreachable store). */
class FailingStateStore extends InMemoryEventStore {
  failStates = false;
  override async updateEnvoyState(state: EnvoyState, expectedRev: number | undefined): Promise<ConditionalWriteResult<EnvoyState>> {
    if (this.failStates) throw new Error('store unreachable (test)');
    return super.updateEnvoyState(state, expectedRev);
  }
}

function stateOf(nodeId: string, now: number): EnvoyState {
  return newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now });
}

async function storedLineage(store: InMemoryEventStore): Promise<LineageState | undefined> {
  const read = await store.getLineageState(LINEAGE);
  return read.status === 'found' ? read.value : undefined;
}

describe('Recorder.whenStateWritten', () => {
  let store: FailingStateStore;
  let recorder: Recorder;

  beforeEach(() => {
    store = new FailingStateStore();
    recorder = new Recorder({ store, logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 60_000, retryBaseMs: 1, retryMaxMs: 5 });
  });

  afterEach(async () => {
    store.failStates = false;
    await recorder.close(1000);
  });

  it('resolves only after the state is stored and counted; a failed write keeps it waiting', async () => {
    let admitted = false;
    recorder.enqueueEnvoyState(stateOf('n1', 1));
    const waiting = recorder.whenStateWritten('n1').then(() => {
      admitted = true;
    });
    store.failStates = true;
    await recorder.flushNow();
    await Promise.resolve();
    expect(admitted).toBe(false);
    store.failStates = false;
    await recorder.flushNow();
    await waiting;
    expect(admitted).toBe(true);
    const read = await store.getEnvoyState('n1');
    expect(read.status).toBe('found');
    expect((await storedLineage(store))?.envoysRecorded).toBe(1);
  });

  it('waits for a state enqueued after an earlier one was written, and a superseding state resolves it', async () => {
    recorder.enqueueEnvoyState(stateOf('n2', 1));
    await recorder.flushNow();
    await expect(recorder.whenStateWritten('n2')).resolves.toBeUndefined();
    let admitted = false;
    recorder.enqueueEnvoyState({ ...stateOf('n2', 2), connectedAt: 2 });
    const waiting = recorder.whenStateWritten('n2').then(() => {
      admitted = true;
    });
    await Promise.resolve();
    expect(admitted).toBe(false);
    // A newer state of the same node before the flush: the one write covers both.
    recorder.enqueueEnvoyState({ ...stateOf('n2', 3), connectedAt: 3 });
    await recorder.flushNow();
    await waiting;
    expect(admitted).toBe(true);
    // The reconnect is a new incarnation, counted before the state was written.
    expect((await storedLineage(store))?.envoysRecorded).toBe(2);
  });

  it('a node never queued is admitted at once', async () => {
    await expect(recorder.whenStateWritten('never-seen')).resolves.toBeUndefined();
  });
});
