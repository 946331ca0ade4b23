// The recorder's event log under random interleavings and store faults (fast-check, against the
// in-memory reference store): ACKs, sends, STUCK events, flushes, lost answers (applied, then an
// error), failures before applying, and gateway crashes (a new recorder with no memory). Checked after
// every flush: no stored state claims an ACK the log lacks (sent-only states are held for up to 3 ticks
// of the step clock unless the flush writes held states). At the end: every event the recorder
// confirmed (metrics.eventsWritten) is in the log exactly once, and nothing is left queued.
import fc from 'fast-check';
import pino from 'pino';

import {
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  applyAck,
  applySent,
  applySubscribe,
  dedupeEvents,
  eventIdentity,
  newEnvoyState,
  type EnvoyEvent,
  type EnvoyState,
  type EventStore,
} from '../../../common/core';
import { mergeEnvoyState } from '../../../xds-gateway/tracking/envoy-state-merge';
import { lineageStateFor } from '../../../xds-gateway/tracking/lineage-mirror';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from './in-memory-store';

const NODES = ['n0', 'n1', 'n2'];
const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL];
const TTL = 2_000_000_000;
const logger = pino({ level: 'silent' });

type Fault = 'none' | 'before' | 'after';
type Command =
  | { kind: 'ack'; node: number; type: number }
  | { kind: 'sent'; node: number; type: number }
  | { kind: 'stuck'; node: number; type: number }
  | { kind: 'flush'; fault: Fault; logFault: Fault; writeHeld: boolean }
  | { kind: 'crash' };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ kind: fc.constant('ack' as const), node: fc.nat(2), type: fc.nat(1) }),
  fc.record({ kind: fc.constant('sent' as const), node: fc.nat(2), type: fc.nat(1) }),
  fc.record({ kind: fc.constant('stuck' as const), node: fc.nat(2), type: fc.nat(1) }),
  fc.record({ kind: fc.constant('flush' as const), fault: fc.constantFrom<Fault>('none', 'none', 'before', 'after'), logFault: fc.constantFrom<Fault>('none', 'none', 'before', 'after'), writeHeld: fc.boolean() }),
  fc.constant({ kind: 'crash' as const }),
);

/** The store with switchable faults on STATE writes and event-log writes. */
function faulty(store: InMemoryEventStore, faults: { state: Fault; log: Fault }): EventStore {
  return Object.assign(Object.create(store) as EventStore, {
    updateEnvoyState: async (state: EnvoyState, expectedRev: number | undefined) => {
      if (faults.state === 'before') throw new Error('refused before applying');
      const result = await store.updateEnvoyState(state, expectedRev);
      if (faults.state === 'after') throw new Error('applied, then the answer was lost');
      return result;
    },
    putEventLogs: async (batches: Parameters<EventStore['putEventLogs']>[0]) => {
      if (faults.log === 'before') throw new Error('refused before applying');
      const result = await store.putEventLogs(batches);
      if (faults.log === 'after') throw new Error('applied, then the answer was lost');
      return result;
    },
  });
}

async function listed(store: EventStore, nodeId: string): Promise<EnvoyEvent[]> {
  return (await store.listEnvoyEvents(nodeId, { limit: 1000 })).items;
}

test('every confirmed event is logged exactly once and no state is ever ahead of the log', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 80 }), async (commands) => {
      const inner = new InMemoryEventStore();
      const faults = { state: 'none' as Fault, log: 'none' as Fault };
      const store = faulty(inner, faults);
      const confirmed: EnvoyEvent[] = [];
      let boot = 0;
      // A crash loses the tracker with the recorder: the next process serves a new lineage.
      let lineage = 'gw-a.boot1.edge';
      const states = new Map<string, EnvoyState>();
      let seq = 0;
      const newRecorder = (): Recorder => {
        boot++;
        lineage = `gw-a.boot${boot}.edge`;
        states.clear();
        const recorder = new Recorder({
          store, logger, clock: { now: () => 1_000_000 + seq }, flushIntervalMs: 3_600_000, retryBaseMs: 1, retryMaxMs: 2, pendingStateHoldMs: 3,
          eventLog: { maxCarriedEvents: 3, maxCarriedChars: 100_000 },
          metrics: { eventsWritten: (events) => confirmed.push(...events), writeLatency: () => undefined, writeFailed: () => undefined },
        });
        recorder.enqueueLineageState(lineageStateFor(lineage, 'edge', 1_000_000));
        return recorder;
      };
      let recorder = newRecorder();
      const stateOf = (nodeId: string): EnvoyState => {
        let state = states.get(nodeId);
        if (state === undefined) {
          state = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage, now: 1_000 });
          for (const typeUrl of TYPES) state = applySubscribe(state, { typeUrl, lineage, now: 1_000 });
        }
        return state;
      };
      for (const step of commands) {
        if (step.kind === 'crash') {
          // SIGKILL: whatever was queued is lost with the process (it was never confirmed).
          recorder = newRecorder();
          continue;
        }
        if (step.kind === 'flush') {
          faults.state = step.fault;
          faults.log = step.logFault;
          await recorder.flushNow(step.writeHeld);
          faults.state = 'none';
          faults.log = 'none';
          for (const nodeId of NODES) {
            const read = await inner.getEnvoyState(nodeId);
            if (read.status !== 'found') continue;
            const log = new Set((await listed(inner, nodeId)).map(eventIdentity));
            for (const [typeUrl, type] of Object.entries(read.value.types)) {
              if (type.acked !== undefined) expect(log.has(eventIdentity({ lineage: type.lineage, seq: type.acked, typeUrl, outcome: 'ACK' }))).toBe(true);
            }
          }
          continue;
        }
        const nodeId = NODES[step.node] as string;
        const typeUrl = TYPES[step.type] as string;
        seq++;
        let state = stateOf(nodeId);
        if (step.kind === 'sent') {
          state = applySent(state, { typeUrl, version: { lineage, seq }, now: 1_000 + seq });
        } else if (step.kind === 'ack') {
          state = applyAck(state, { typeUrl, version: { lineage, seq }, now: 1_000 + seq });
          recorder.enqueueEvent({ nodeId, outcome: 'ACK', lineage, seq, typeUrl, at: 1_000 + seq, ttl: TTL });
        } else {
          recorder.enqueueEvent({ nodeId, outcome: 'STUCK', lineage, seq, typeUrl, at: 1_000 + seq, sentAt: 1_000, ttl: TTL });
        }
        states.set(nodeId, state);
        if (step.kind !== 'stuck') recorder.enqueueEnvoyState(state);
      }
      await recorder.close(5_000);
      expect(recorder.stats().queuedEvents).toBe(0);
      for (const nodeId of NODES) {
        const log = await listed(inner, nodeId);
        // One record per event (a page is deduplicated; the listing fits one page here).
        expect(dedupeEvents(log)).toHaveLength(log.length);
        const identities = new Set(log.map(eventIdentity));
        for (const event of confirmed.filter((e) => e.nodeId === nodeId)) expect(identities.has(eventIdentity(event))).toBe(true);
      }
      expect(boot).toBeGreaterThanOrEqual(1);
    }),
    { numRuns: 200 },
  );
}, 60_000);

test('two gateways writing the same STATEs (per-type streams on two instances): no carried event of either is lost', async () => {
  type Step = { kind: 'ack'; gateway: number; node: number } | { kind: 'flush'; gateway: number; fault: Fault };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('ack' as const), gateway: fc.nat(1), node: fc.nat(2) }),
    fc.record({ kind: fc.constant('flush' as const), gateway: fc.nat(1), fault: fc.constantFrom<Fault>('none', 'none', 'before', 'after') }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 80 }), async (steps) => {
      const inner = new InMemoryEventStore();
      const confirmed: EnvoyEvent[] = [];
      const gateways = [
        { lineage: 'gw-a.boot1.edge', typeUrl: CDS_TYPE_URL },
        { lineage: 'gw-b.boot1.edge', typeUrl: EDS_TYPE_URL },
      ].map(({ lineage, typeUrl }) => {
        const faults = { state: 'none' as Fault, log: 'none' as Fault };
        const recorder = new Recorder({
          store: faulty(inner, faults), logger, clock: { now: () => 1_000_000 }, flushIntervalMs: 3_600_000, retryBaseMs: 1, retryMaxMs: 2,
          eventLog: { maxCarriedEvents: 2, maxCarriedChars: 100_000 }, mergeEnvoyState,
          metrics: { eventsWritten: (events) => confirmed.push(...events), writeLatency: () => undefined, writeFailed: () => undefined },
        });
        recorder.enqueueLineageState(lineageStateFor(lineage, 'edge', 1_000_000));
        return { lineage, typeUrl, faults, recorder, states: new Map<string, EnvoyState>(), seq: 0 };
      });
      for (const s of steps) {
        const gateway = gateways[s.gateway] as (typeof gateways)[number];
        if (s.kind === 'flush') {
          gateway.faults.state = s.fault;
          gateway.faults.log = s.fault;
          await gateway.recorder.flushNow(true);
          gateway.faults.state = 'none';
          gateway.faults.log = 'none';
          continue;
        }
        const nodeId = NODES[s.node] as string;
        gateway.seq++;
        let state = gateway.states.get(nodeId);
        if (state === undefined) {
          state = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: gateway.lineage, now: 1_000 });
          state = applySubscribe(state, { typeUrl: gateway.typeUrl, lineage: gateway.lineage, now: 1_000 });
        }
        state = applyAck(state, { typeUrl: gateway.typeUrl, version: { lineage: gateway.lineage, seq: gateway.seq }, now: 1_000 + gateway.seq });
        gateway.states.set(nodeId, state);
        gateway.recorder.enqueueEvent({ nodeId, outcome: 'ACK', lineage: gateway.lineage, seq: gateway.seq, typeUrl: gateway.typeUrl, at: 1_000, ttl: TTL });
        gateway.recorder.enqueueEnvoyState(state);
      }
      for (const gateway of gateways) await gateway.recorder.close(5_000);
      for (const gateway of gateways) expect(gateway.recorder.stats().queuedEvents).toBe(0);
      for (const nodeId of NODES) {
        const identities = new Set((await listed(inner, nodeId)).map(eventIdentity));
        for (const event of confirmed.filter((e) => e.nodeId === nodeId)) expect(identities.has(eventIdentity(event))).toBe(true);
      }
    }),
    { numRuns: 150 },
  );
}, 60_000);
