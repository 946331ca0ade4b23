// The handoff's message refresh sweep (functions/lib/status-handoff.ts): on a convergence batch, at
// most every quarter interval per container, it rewrites exactly the not-True conditions whose
// message is out of date and due, among the pending generations of live lineages, through the status
// function's path (which records the write's time); and nothing while the handoff is paused.
import pino from 'pino';

import type { Condition, ConditionDraft, Decision, ItemRead, LineageRegistry, ObjectGeneration, ObjectRef, PendingEntry } from '../../../common/core';
import type { WriteOutcome } from '../../../functions/kube/status-writer';
import { StatusHandoff } from '../../../functions/lib/status-handoff';
import { staleMessageDue } from '../../../functions/status/apply';
import type { StatusProcessorDeps } from '../../../functions/status/process';

const silent = pino({ level: 'silent' });
const T0 = 1_800_000_000_000;
const R = 10_000;
const TTL = 60_000;

const ref = (name: string): ObjectRef => ({ group: 'example.com', kind: 'Widget', namespace: 'default', name });
const decision = (state: Decision['state'], programmed: number): Decision => ({ state, programmed, total: 10, blockers: [], blockersOmitted: 0, decidedAt: T0, evaluatedRev: 1 });
const held = (status: Condition['status'], reason: string, message: string): Condition => ({ type: 'EnvoyProgrammed', status, reason, message, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' });

/** The items, by name: what each one's recorded condition and stored decision say. */
function items(now: number): Map<string, ObjectGeneration> {
  const item = (name: string, fields: Partial<ObjectGeneration>): [string, ObjectGeneration] => [name, { object: ref(name), generation: 1, watermarks: {}, firstSeenAt: T0, ...fields }];
  return new Map([
    item('due', { decision: decision('Pending', 8), lastCondition: held('False', 'Pending', '0/10 Envoys programmed at generation 1'), conditionWrittenAt: now - R - 1 }),
    item('young', { decision: decision('Pending', 8), lastCondition: held('False', 'Pending', '0/10 Envoys programmed at generation 1'), conditionWrittenAt: now - 3_000 }),
    item('current', { decision: decision('Pending', 8), lastCondition: held('False', 'Pending', '8/10 Envoys programmed at generation 1'), conditionWrittenAt: now - 60_000 }),
    item('true', { decision: decision('Programmed', 10), lastCondition: held('True', 'Programmed', '9/9 Envoys programmed at generation 1'), conditionWrittenAt: now - 60_000 }),
    item('verdict', { decision: decision('Rejected', 8), lastCondition: held('False', 'Pending', '0/10 Envoys programmed at generation 1'), conditionWrittenAt: now - 60_000 }),
    item('unwritten', { decision: decision('Pending', 8) }),
  ]);
}

function world(options: { registry?: LineageRegistry } = {}) {
  let now = T0;
  const stored = items(now);
  const writes: Array<{ name: string; draft: ConditionDraft }> = [];
  const recorded: Array<{ name: string; writtenAt: number | undefined }> = [];
  const reads: string[] = [];
  const pending: PendingEntry[] = [...stored.keys()].map((name, i) => ({ lineage: 'gw-a.boot.edge', seq: i, object: ref(name), generation: 1 }));
  const status: StatusProcessorDeps = {
    writer: {
      write: async (object: ObjectRef, draft: ConditionDraft): Promise<WriteOutcome> => {
        writes.push({ name: object.name, draft });
        return { outcome: 'written', condition: { ...draft, lastTransitionTime: '2026-01-01T00:00:00Z' }, previous: undefined, resourceVersion: '2', conflicts: 0, refresh: true };
      },
    },
    store: {
      recordCondition: async (object: ObjectRef, _generation: number, _condition: Condition, _programmedAt?: number, writtenAt?: number) => {
        recorded.push({ name: object.name, writtenAt });
      },
      getObjectGeneration: async (object: ObjectRef): Promise<ItemRead<ObjectGeneration>> => {
        reads.push(object.name);
        const value = stored.get(object.name);
        return value === undefined ? { status: 'missing' } : { status: 'found', value };
      },
    },
    cleanup: { markDeleted: async () => 0 },
    logger: silent,
    conditionType: 'EnvoyProgrammed',
    writeOnMessageChange: false,
    messageRefreshMs: R,
    now: () => now,
  };
  const handoff = new StatusHandoff({
    status,
    logger: silent,
    now: () => now,
    refreshSweep: {
      aggregates: {
        getLineageRegistry: async () => options.registry ?? { v: 1, lineages: { 'gw-a.boot.edge': now - 1_000 } },
        listPending: async (lineage: string) => ({ items: pending.filter((entry) => entry.lineage === lineage), corrupt: [] }),
      },
      ttlMs: TTL,
    },
  });
  return { handoff, writes, recorded, reads, status, advance: (ms: number) => (now += ms), now: () => now };
}

describe('staleMessageDue', () => {
  it.each([
    ['due', true],
    ['young', false],
    ['current', false],
    ['true', false],
    ['verdict', false],
    ['unwritten', false],
  ])('%s → %s', (name, expected) => {
    const w = world();
    const record = items(T0).get(name) as ObjectGeneration;
    expect(staleMessageDue(record, w.status)).toBe(expected);
  });
});

describe('the refresh sweep', () => {
  it('rewrites only the due stale message, records the write time, and sweeps at most every quarter interval', async () => {
    const w = world();
    const report = await w.handoff.begin().settle();
    expect(report.sweep).toEqual({ checked: 6, refreshed: 1, failed: 0, deferred: 0 });
    expect(w.writes.map((write) => [write.name, write.draft.message])).toEqual([['due', '8/10 Envoys programmed at generation 1']]);
    expect(w.recorded).toEqual([{ name: 'due', writtenAt: T0 }]);
    // The next batch in the same container, 1 s later: no sweep.
    w.advance(1_000);
    expect((await w.handoff.begin().settle()).sweep).toBeUndefined();
    // A quarter interval after the first: sweeps again.
    w.advance(R / 4);
    expect((await w.handoff.begin().settle()).sweep).toMatchObject({ checked: 6 });
  });

  it('reads nothing of lineages dead for twice the TTL', async () => {
    const w = world({ registry: { v: 1, lineages: { 'gw-a.boot.edge': T0 - 2 * TTL - 1 } } });
    expect((await w.handoff.begin().settle()).sweep).toEqual({ checked: 0, refreshed: 0, failed: 0, deferred: 0 });
    expect(w.reads).toEqual([]);
  });

  it('is off without a refresh interval', async () => {
    const w = world();
    w.status.messageRefreshMs = 0;
    expect((await w.handoff.begin().settle()).sweep).toBeUndefined();
    expect(w.reads).toEqual([]);
  });
});
