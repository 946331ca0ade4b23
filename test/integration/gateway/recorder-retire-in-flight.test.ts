// A lineage retired while a flush is writing one of its states (a node group moved or was freed while
// the store was slow). What the recorder keeps per lineage is forgotten once nothing of it is queued;
// a state taken by the running flush is not queued, so retiring forgot the lineage under it, and when
// that write failed and the state was re-queued, the next flush dropped it as a late state of a
// forgotten lineage: the Envoy's disconnect was never stored (it stayed CONNECTED in the table).
// The real recorder over the in-memory store, whose first state write is held, then fails.
import { applyDisconnect, newEnvoyState, newLineageState, type EnvoyState, type EventStore } from '../../../common/core';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { testLogger } from '../gateway-relay/helpers';

const T0 = 1_700_000_000_000;

/** The in-memory store, except that its next updateEnvoyState waits for `release` and then throws. */
function storeWithHeldWrite(): { store: EventStore; writeStarted: Promise<void>; release: () => void } {
  const inner = new InMemoryEventStore();
  let started: () => void = () => undefined;
  const writeStarted = new Promise<void>((resolve) => (started = resolve));
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = true;
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'updateEnvoyState') {
        return async (state: EnvoyState, expectedRev: number | undefined) => {
          if (held) {
            held = false;
            started();
            await released;
            throw new Error('DynamoDB request timed out');
          }
          return target.updateEnvoyState(state, expectedRev);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as EventStore;
  return { store, writeStarted, release };
}

test('a state in flight when its lineage is retired is still stored once its write succeeds', async () => {
  const now = T0;
  const clock = { now: (): number => now };
  const { store, writeStarted, release } = storeWithHeldWrite();
  const recorder = new Recorder({ store, logger: testLogger, clock, flushIntervalMs: 5, retryBaseMs: 5, retryMaxMs: 20 });
  try {
    const lineage = newLineageState({ instanceId: 'gw-a', bootId: 'boot1', group: 'edge', now });
    if (!lineage.ok) throw new Error(lineage.error);
    recorder.enqueueLineageState(lineage.value);
    const connected = newEnvoyState({ identity: { nodeId: 'envoy-1', cluster: 'edge', metadata: {} }, group: 'edge', lineage: lineage.value.lineage, now });
    const disconnected = applyDisconnect(connected, now + 1);
    recorder.enqueueEnvoyState(disconnected);

    await writeStarted;
    // The group's last stream is gone and the relay retires its lineage while the write is out.
    recorder.retireLineage(lineage.value.lineage);
    release();
    await recorder.whenIdle();

    const stored = await store.getEnvoyState('envoy-1');
    expect(stored.status).toBe('found');
    if (stored.status === 'found') expect(stored.value).toMatchObject({ status: 'DISCONNECTED', lineage: lineage.value.lineage });
  } finally {
    await recorder.close(1000);
  }
});
