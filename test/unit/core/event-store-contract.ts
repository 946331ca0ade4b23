// The EventStore port's contract (common/core/ports.ts) as a reusable jest suite. Any adapter can be
// checked with `describeEventStoreContract('name', async () => ({ store, putCorrupt?, close? }))`; the
// in-memory reference store runs it in event-store-contract.test.ts.
import {
  newEnvoyState,
  toCarriedEvent,
  applyAck,
  applySubscribe,
  type Condition,
  type EnvoyEvent,
  type LineageState,
  type ObjectRef,
  type Page,
  type PageRequest,
} from '../../../common/core';
import type { TableStore } from '../../../common/store';
import { CDS, L1, L2, RDS, T0 } from './fixtures';

export interface ContractStore {
  store: TableStore;
  /** Writes a raw (possibly corrupt) item, to check that reads report it instead of throwing. */
  putCorrupt?: (raw: Record<string, unknown> & { pk: string; sk: string }) => Promise<void>;
  close?: () => Promise<void>;
}

async function all<T>(list: (request: PageRequest) => Promise<Page<T>>, limit: number): Promise<{ items: T[]; pages: number; corrupt: number }> {
  const items: T[] = [];
  let cursor: string | undefined;
  let pages = 0;
  let corrupt = 0;
  do {
    const page = await list({ limit, ...(cursor === undefined ? {} : { cursor }) });
    items.push(...page.items);
    corrupt += page.corrupt.length;
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== undefined && pages < 1000);
  return { items, pages, corrupt };
}

const ref: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
const condition = (status: Condition['status'], generation: number): Condition => ({
  type: 'EnvoyProgrammed', status, observedGeneration: generation, lastTransitionTime: '2026-11-29T00:00:00.000Z', reason: status === 'True' ? 'Programmed' : 'Pending', message: 'm',
});
const event = (nodeId: string, lineage: string, seq: number, typeUrl: string, outcome: EnvoyEvent['outcome']): EnvoyEvent => ({
  nodeId, lineage, seq, typeUrl, outcome, at: T0 + seq, ttl: 2_000_000_000, ...(outcome === 'NACK' ? { message: `bad ${seq}` } : {}),
});

export function describeEventStoreContract(name: string, open: () => Promise<ContractStore>): void {
  describe(`EventStore contract: ${name}`, () => {
    let subject: ContractStore;
    beforeEach(async () => {
      subject = await open();
    });
    afterEach(async () => {
      await subject.close?.();
    });

    it('Envoy state: missing, then conditional on rev, conflicts return the current value', async () => {
      const { store } = subject;
      expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'missing' });
      let state = newEnvoyState({ identity: { nodeId: 'envoy-1', cluster: 'edge', metadata: { zone: 'a' } }, group: 'edge', lineage: L1, now: T0 });
      state = applySubscribe(state, { typeUrl: CDS, lineage: L1, now: T0 });
      expect(await store.updateEnvoyState(state, undefined)).toEqual({ ok: true });
      expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'found', value: state });
      // A second creator loses.
      const conflict = await store.updateEnvoyState({ ...state, lastSeenAt: T0 + 5 }, undefined);
      expect(conflict).toEqual({ ok: false, reason: 'conflict', current: { status: 'found', value: state } });
      const next = { ...applyAck(state, { typeUrl: CDS, version: { lineage: L1, seq: 3 }, now: T0 + 10 }), rev: 1 };
      expect(await store.updateEnvoyState(next, 0)).toEqual({ ok: true });
      // A writer that read rev 0 loses now.
      const stale = await store.updateEnvoyState({ ...state, rev: 1 }, 0);
      expect(stale.ok).toBe(false);
      expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'found', value: next });
    });

    it('events: idempotent, ordered by lineage then seq, filtered by lineage, paged', async () => {
      const { store } = subject;
      const events = [event('e', L1, 10, CDS, 'ACK'), event('e', L1, 2, RDS, 'NACK'), event('e', L2, 1, CDS, 'ACK'), event('e', L1, 9, CDS, 'STUCK'), event('other', L1, 1, CDS, 'ACK')];
      expect((await store.putEvents(events)).failed).toEqual([]);
      expect((await store.putEvents(events)).failed).toEqual([]); // replay
      const listed = await all((page) => store.listEnvoyEvents('e', page), 2);
      expect(listed.items.map((e) => `${e.lineage}:${e.seq}:${e.outcome}`)).toEqual([`${L1}:2:NACK`, `${L1}:9:STUCK`, `${L1}:10:ACK`, `${L2}:1:ACK`]);
      expect(listed.items.find((e) => e.outcome === 'NACK')?.message).toBe('bad 2');
      const onlyL2 = await all((page) => store.listEnvoyEvents('e', { ...page, lineage: L2 }), 10);
      expect(onlyL2.items.map((e) => e.seq)).toEqual([1]);
      const descending = await all((page) => store.listEnvoyEvents('e', { ...page, descending: true }), 10);
      expect(descending.items.map((e) => e.seq)).toEqual([1, 10, 9, 2]);
    });

    it('event log: log items, events carried by the STATE and single items, listed once each; a replayed batch is one item', async () => {
      const { store } = subject;
      await store.putEvents([event('e', L1, 1, CDS, 'ACK')]);
      const batch = { nodeId: 'e', lineage: L1, events: [event('e', L1, 2, RDS, 'NACK'), event('e', L1, 3, CDS, 'ACK')].map(toCarriedEvent) };
      expect(await store.putEventLogs([batch])).toEqual({ written: 1, failed: [] });
      expect(await store.putEventLogs([batch])).toEqual({ written: 1, failed: [] }); // replay
      const base = applySubscribe(newEnvoyState({ identity: { nodeId: 'e', cluster: 'edge', metadata: {} }, group: 'edge', lineage: L1, now: T0 }), { typeUrl: CDS, lineage: L1, now: T0 });
      const state = { ...applyAck(base, { typeUrl: CDS, version: { lineage: L1, seq: 4 }, now: T0 }), unlogged: [event('e', L1, 3, CDS, 'ACK'), event('e', L1, 4, CDS, 'ACK'), event('e', L2, 1, CDS, 'STUCK')].map(toCarriedEvent) };
      expect(await store.updateEnvoyState(state, undefined)).toEqual({ ok: true });
      expect(await store.getEnvoyState('e')).toEqual({ status: 'found', value: state });
      const listed = await all((page) => store.listEnvoyEvents('e', page), 100);
      expect(listed.items.map((e) => `${e.lineage === L1 ? 1 : 2}:${e.seq}:${e.outcome}`)).toEqual(['1:1:ACK', '1:2:NACK', '1:3:ACK', '1:4:ACK', '2:1:STUCK']);
      expect(listed.items.find((e) => e.outcome === 'NACK')?.message).toBe('bad 2');
      const onlyL2 = await all((page) => store.listEnvoyEvents('e', { ...page, lineage: L2 }), 100);
      expect(onlyL2.items.map((e) => e.outcome)).toEqual(['STUCK']);
      const scanned = await all((page) => store.scanItems({ ...page, kind: 'EnvoyEventLog' }), 100);
      expect(scanned.items).toHaveLength(1);
    });

    it('watermarks: first write wins per lineage; not observable; conditions keep the first programmedAt', async () => {
      const { store } = subject;
      const first = { seq: 5, types: { [CDS]: 5 }, at: T0 };
      expect(await store.putWatermark(ref, 7, L1, first)).toBe('written');
      expect(await store.putWatermark(ref, 7, L1, { seq: 9, types: { [CDS]: 9 }, at: T0 + 1 })).toBe('alreadySet');
      expect(await store.putWatermark(ref, 7, L2, { seq: 1, types: {}, at: T0 + 2 })).toBe('written');
      let read = await store.getObjectGeneration(ref, 7);
      expect(read).toMatchObject({ status: 'found', value: { object: ref, generation: 7, firstSeenAt: T0, watermarks: { [L1]: first, [L2]: { seq: 1 } } } });
      await store.recordCondition(ref, 7, condition('False', 7), undefined, T0 + 50);
      await store.recordCondition(ref, 7, condition('True', 7), T0 + 100, T0 + 100);
      // A condition found already in Kubernetes (no write of ours) keeps the time of our last write.
      await store.recordCondition(ref, 7, condition('True', 7), T0 + 200);
      read = await store.getObjectGeneration(ref, 7);
      expect(read).toMatchObject({ status: 'found', value: { programmedAt: T0 + 100, conditionWrittenAt: T0 + 100, lastCondition: condition('True', 7), watermarks: { [L1]: first } } });
      await store.markNotObservable(ref, 8, 'no status signal', T0 + 300);
      expect(await store.getObjectGeneration(ref, 8)).toMatchObject({ status: 'found', value: { notObservable: 'no status signal', generation: 8 } });
      expect(await store.getObjectGeneration(ref, 9)).toEqual({ status: 'missing' });
      await store.markRejectedByController(ref, 10, 'Service "default/app-1-v2" not found', T0 + 400);
      expect(await store.getObjectGeneration(ref, 10)).toMatchObject({ status: 'found', value: { rejectedByController: 'Service "default/app-1-v2" not found', generation: 10, watermarks: {} } });
    });

    it('object generations list in numeric order, both ways, across pages', async () => {
      const { store } = subject;
      for (const generation of [100, 2, 10, 1]) await store.putWatermark(ref, generation, L1, { seq: generation, types: {}, at: T0 });
      const up = await all((page) => store.listObjectGenerations(ref, page), 3);
      expect(up.items.map((g) => g.generation)).toEqual([1, 2, 10, 100]);
      const down = await all((page) => store.listObjectGenerations(ref, { ...page, descending: true }), 3);
      expect(down.items.map((g) => g.generation)).toEqual([100, 10, 2, 1]);
    });

    it('lineage state is conditional on rev', async () => {
      const { store } = subject;
      const lineage: LineageState = { lineage: L1, instanceId: 'gw-a', bootId: 'boot1', group: 'edge', currentSeq: 0, typeHistory: {}, historyStart: 0, startedAt: T0, heartbeatAt: T0, rev: 0 };
      expect(await store.putLineageState(lineage, undefined)).toEqual({ ok: true });
      expect((await store.putLineageState({ ...lineage, rev: 1 }, undefined)).ok).toBe(false);
      const next = { ...lineage, currentSeq: 1, typeHistory: { [CDS]: [1] }, rev: 1 };
      expect(await store.putLineageState(next, 0)).toEqual({ ok: true });
      expect(await store.getLineageState(L1)).toEqual({ status: 'found', value: next });
    });

    it('listing states by group and scanning by kind see everything once', async () => {
      const { store } = subject;
      for (let i = 0; i < 7; i++) {
        const state = newEnvoyState({ identity: { nodeId: `n${i}`, cluster: i % 2 === 0 ? 'even' : 'odd', metadata: {} }, group: i % 2 === 0 ? 'even' : 'odd', lineage: L1, now: T0 });
        expect((await store.updateEnvoyState(state, undefined)).ok).toBe(true);
      }
      await store.putEvents([event('n0', L1, 1, CDS, 'ACK')]);
      const even = await all((page) => store.listEnvoyStates({ ...page, group: 'even' }), 2);
      expect(even.items.map((s) => s.nodeId).sort()).toEqual(['n0', 'n2', 'n4', 'n6']);
      const states = await all((page) => store.scanItems({ ...page, kind: 'EnvoyState' }), 3);
      expect(states.items.map((s) => (s.kind === 'EnvoyState' ? s.nodeId : '?')).sort()).toEqual(['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6']);
      const everything = await all((page) => store.scanItems(page), 4);
      expect(everything.items).toHaveLength(8);
    });

    it('a corrupt item is reported, never thrown', async () => {
      if (subject.putCorrupt === undefined) return;
      await subject.putCorrupt({ pk: 'ENVOY#broken', sk: 'STATE', kind: 'EnvoyState', schemaVersion: 1, nodeId: 'broken', rev: 4, status: 'ONLINE' });
      const read = await subject.store.getEnvoyState('broken');
      expect(read).toMatchObject({ status: 'corrupt', rev: 4 });
      const scanned = await all((page) => subject.store.scanItems(page), 10);
      expect(scanned.corrupt).toBe(1);
      expect(scanned.items).toHaveLength(0);
    });
  });
}
