// The PROGRESS publisher (xds-gateway/tracking/progress/progress-publisher.ts) over dynalite: the
// tracker's states carry no incarnation, so the publisher stamps them by the recorder's rule (core
// countEnvoyState): an Envoy that reconnects under the same node id moves the item's `incarnations`
// while `members` stays; a node leaving the lineage leaves both. A watermark becomes an anchor, and
// the item says when every member reached it.
import pino from 'pino';
import type { EnvoyState, LineageProgress, LineageWatermark, ProgressStore } from '../../../common/core';
import { eventually } from '../../support/eventually';
import { ProgressPublisher } from '../../../xds-gateway/tracking/progress/progress-publisher';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs } from '../../support/store-logger';
import { CDS, envoy, L1, L2, T0 } from '../../unit/core/fixtures';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

test('stamps incarnations as the recorder counts them, and follows members and anchors', async () => {
  const tableName = await fixture.newTable();
  const table = fixture.openTable(tableName, captureLogs().logger);
  const clock = { now: () => T0 };
  // refreshMs 0: a move of `incarnations` alone is written with the counts refresh (progress-timing.ts),
  // here at once, so each step's item can be read back.
  const publisher = new ProgressPublisher({ store: table.progress, logger: pino({ level: 'silent' }), clock, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, requiredTypeUrls: [], timing: { refreshMs: 0 } });
  try {
    const a = envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 3, connectedAt: T0 - 10_000 });
    const b = envoy('b', { [CDS]: { acked: 5 } }, { programmedThrough: 5, connectedAt: T0 - 10_000 });
    publisher.noteEnvoyState(a);
    publisher.noteEnvoyState(b);
    const mark: LineageWatermark = { seq: 5, types: { [CDS]: 5 }, at: T0 };
    publisher.noteWatermark(L1, mark);
    await publisher.whenIdle();
    const stored = async () => {
      const read = await table.progress.getProgress(L1);
      if (read.status !== 'found') throw new Error(`PROGRESS of ${L1} is ${read.status}`);
      return read.value;
    };
    expect(await stored()).toMatchObject({ members: 2, incarnations: 2, anchors: [5] });

    // a reaches the anchor on the same connection: same incarnation.
    publisher.noteEnvoyState({ ...a, programmedThrough: 5, types: { [CDS]: { ...a.types[CDS]!, acked: 5 } } });
    await publisher.whenIdle();
    expect(await stored()).toMatchObject({ members: 2, incarnations: 2 });

    // a reconnects (new connectedAt): one member, a new incarnation, as the LINEAGE count has it.
    publisher.noteEnvoyState({ ...a, connectedAt: T0 - 1_000, programmedThrough: 5, types: { [CDS]: { ...a.types[CDS]!, acked: 5 } } });
    await publisher.whenIdle();
    expect(await stored()).toMatchObject({ members: 2, incarnations: 3 });

    // b moves to another lineage: it leaves this one's members and incarnations.
    publisher.noteEnvoyState({ ...b, lineage: L2, types: { [CDS]: { ...b.types[CDS]!, lineage: L2 } } });
    await publisher.whenIdle();
    expect(await stored()).toMatchObject({ members: 1, incarnations: 2 });
    expect(publisher.stats().conflicts).toBe(0);
  } finally {
    await publisher.close();
    table.close();
  }
});

/**
 * The table's PROGRESS port with the writes of some lineages refused while `refused` names them, and
 * every stored item recorded in store order: what a reader could find at each moment.
 */
function recordingStore(real: ProgressStore): { store: ProgressStore; refused: Set<string>; stored: LineageProgress[] } {
  const refused = new Set<string>();
  const stored: LineageProgress[] = [];
  const store: ProgressStore = {
    async putProgress(progress) {
      if (refused.has(progress.lineage)) throw new Error(`injected: PROGRESS writes of ${progress.lineage} refused`);
      const outcome = await real.putProgress(progress);
      if (outcome === 'written') stored.push(progress);
      return outcome;
    },
    getProgress: (lineage) => real.getProgress(lineage),
    getProgresses: (lineages) => real.getProgresses(lineages),
  };
  return { store, refused, stored };
}

/** An Envoy that connected at `at` on `lineage`, CDS ACKed at `acked`. */
function connected(nodeId: string, acked: number, lineage = L1, at = Date.now()): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked, lineage } }, { programmedThrough: acked, connectedAt: at, lastSeenAt: at, lineage });
}

/** After each stored item in turn: whether `nodeId` is counted by at least one lineage's latest item. */
function alwaysCounted(stored: readonly LineageProgress[], nodeId: string): boolean[] {
  const latest = new Map<string, LineageProgress>();
  return stored.map((item) => {
    latest.set(item.lineage, item);
    return [...latest.values()].some((progress) => progress.listed.some(([listed]) => listed === nodeId));
  });
}

test('a node that moves lineage stays counted on the old one until an item of the new one counts it', async () => {
  const tableName = await fixture.newTable();
  const table = fixture.openTable(tableName, captureLogs().logger);
  const { store, refused, stored } = recordingStore(table.progress);
  const publisher = new ProgressPublisher({ store, logger: pino({ level: 'silent' }), clock: { now: () => Date.now() }, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, requiredTypeUrls: [], retryBaseMs: 10, retryMaxMs: 20 });
  try {
    const now = Date.now();
    publisher.noteEnvoyState(connected('a', 3, L1, now));
    publisher.noteEnvoyState(connected('b', 3, L1, now));
    publisher.noteEnvoyState(connected('c', 1, L2, now));
    await publisher.whenIdle();

    // b reconnects on L2 while L2's items cannot be stored: L1 keeps counting it, as disconnected.
    refused.add(L2);
    publisher.noteEnvoyState(connected('b', 1, L2, now + 1));
    await eventually(() => publisher.stats().failedWrites >= 3, 'L2 writes refused a few times');
    const l1 = await table.progress.getProgress(L1);
    expect(l1.status === 'found' && l1.value.members).toBe(2);
    expect(l1.status === 'found' && l1.value.listed.some(([nodeId]) => nodeId === 'b')).toBe(true);

    // L2's item counting b is stored, and only then does L1 let b go.
    refused.delete(L2);
    await eventually(async () => {
      const read = await table.progress.getProgress(L1);
      return read.status === 'found' && read.value.members === 1;
    }, 'b leaves L1 once L2 counts it');
    const l2 = await table.progress.getProgress(L2);
    expect(l2.status === 'found' && l2.value.members).toBe(2);
    expect(alwaysCounted(stored, 'b')).not.toContain(false);
  } finally {
    await publisher.close();
    table.close();
  }
});

test('a retired lineage is written while members are left on it, then dropped', async () => {
  const tableName = await fixture.newTable();
  const table = fixture.openTable(tableName, captureLogs().logger);
  const { store, stored } = recordingStore(table.progress);
  const ttlMs = 1_500;
  const publisher = new ProgressPublisher({ store, logger: pino({ level: 'silent' }), clock: { now: () => Date.now() }, policy: { ttlMs, ackTimeoutMs: 30_000 }, requiredTypeUrls: [], timing: { heartbeatMs: 200 } });
  try {
    const now = Date.now();
    const a = connected('a', 3, L1, now);
    const b = connected('b', 3, L1, now);
    publisher.noteEnvoyState(a);
    publisher.noteEnvoyState(b);
    await publisher.whenIdle();

    // The relay moves the group: its streams end, then the lineage is retired.
    const retiredAt = Date.now();
    publisher.noteEnvoyState({ ...a, status: 'DISCONNECTED', lastSeenAt: retiredAt });
    publisher.noteEnvoyState({ ...b, status: 'DISCONNECTED', lastSeenAt: retiredAt });
    publisher.retireLineage(L1);

    // Both disconnected Envoys still hold L1's content: its item keeps them, heartbeat included.
    await eventually(() => stored.some((item) => item.lineage === L1 && item.heartbeatAt >= retiredAt + 200 && item.members === 2), 'a heartbeat write of the retired lineage with both members');

    // a is back on L2: it leaves L1 once L2's item counts it; b never comes back and leaves at its TTL.
    publisher.noteEnvoyState(connected('a', 1, L2));
    await eventually(() => stored.some((item) => item.lineage === L1 && item.members === 1), 'a leaves L1');
    await eventually(() => stored.some((item) => item.lineage === L1 && item.members === 0), 'b leaves L1 at its TTL', { timeoutMs: 10_000 });
    const emptyAt = stored.findIndex((item) => item.lineage === L1 && item.members === 0);
    const memberless = stored[emptyAt]!;
    expect(memberless.heartbeatAt).toBeGreaterThanOrEqual(retiredAt + ttlMs);

    // Then nothing of L1 is written any more, while L2 keeps its heartbeat: not even for a late state on it.
    publisher.noteEnvoyState({ ...b, status: 'DISCONNECTED', lastSeenAt: Date.now() });
    await eventually(() => stored.filter((item) => item.lineage === L2).length >= stored.slice(0, emptyAt + 1).filter((item) => item.lineage === L2).length + 3, 'three more L2 heartbeats');
    expect(stored.slice(emptyAt + 1).filter((item) => item.lineage === L1)).toEqual([]);
    expect(alwaysCounted(stored, 'a')).not.toContain(false);
  } finally {
    await publisher.close();
    table.close();
  }
});

test('an item of a lineage not yet registered is not written: a node moving onto it stays counted where readers look', async () => {
  const tableName = await fixture.newTable();
  const table = fixture.openTable(tableName, captureLogs().logger);
  const { store, stored } = recordingStore(table.progress);
  const registered = new Set<string>([L1]);
  const publisher = new ProgressPublisher({ store, logger: pino({ level: 'silent' }), clock: { now: () => Date.now() }, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, requiredTypeUrls: [], retryBaseMs: 10, retryMaxMs: 20, registered: (lineage) => registered.has(lineage) });
  try {
    const now = Date.now();
    publisher.noteEnvoyState(connected('a', 3, L1, now));
    publisher.noteEnvoyState(connected('b', 3, L1, now));
    await publisher.whenIdle();
    // b moves to L2, which the registry does not name yet: no L2 item, and L1 keeps b.
    publisher.noteEnvoyState(connected('b', 1, L2, now + 1));
    // Several flushes (retried every 10-20 ms) go by without an L2 write.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stored.some((item) => item.lineage === L2)).toBe(false);
    const l1 = await table.progress.getProgress(L1);
    expect(l1.status === 'found' && l1.value.listed.some(([nodeId]) => nodeId === 'b')).toBe(true);
    // Registered: L2's item is written, then L1 lets b go.
    registered.add(L2);
    await eventually(async () => {
      const read = await table.progress.getProgress(L1);
      return read.status === 'found' && read.value.members === 1;
    }, 'b leaves L1 once registered L2 counts it');
    expect(stored.findIndex((item) => item.lineage === L2)).toBeGreaterThan(-1);

    // The recorder forgets a lineage it retires (its registration with it): L1's item, stored long
    // since, is still written as its members leave, not held for a registration that never comes.
    registered.delete(L1);
    publisher.retireLineage(L1);
    publisher.noteEnvoyState(connected('a', 1, L2, now + 2));
    await eventually(async () => {
      const read = await table.progress.getProgress(L1);
      return read.status === 'found' && read.value.members === 0;
    }, 'a leaves retired L1, whose registration the recorder forgot, once L2 counts it');
  } finally {
    await publisher.close();
    table.close();
  }
});

test('an anchor reached by a names-hold relief, and later reached for every object, is written at once each time', async () => {
  const tableName = await fixture.newTable();
  const table = fixture.openTable(tableName, captureLogs().logger);
  // Builds after ordinary changes wait an hour here: only a build the publisher calls urgent is written in the test's time.
  const publisher = new ProgressPublisher({ store: table.progress, logger: pino({ level: 'silent' }), clock: { now: () => Date.now() }, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, requiredTypeUrls: [], buildWindowMs: 3_600_000, timing: { refreshMs: 3_600_000, heartbeatMs: 3_600_000 } });
  const stored = async (): Promise<LineageProgress | undefined> => {
    const read = await table.progress.getProgress(L1);
    return read.status === 'found' ? read.value : undefined;
  };
  try {
    const now = Date.now();
    const held = envoy('h', { [CDS]: { acked: 7, namesChange: { at: now, sent: false } } }, { connectedAt: now, lastSeenAt: now });
    publisher.noteEnvoyState(connected('p', 7, L1, now));
    publisher.noteEnvoyState(held);
    publisher.noteWatermark(L1, { seq: 7, types: { [CDS]: 7 }, at: now });
    const first = await eventually(async () => ((await stored())?.anchors.includes(7) === true ? stored() : undefined), 'the item with anchor 7');
    expect(first).toMatchObject({ anchors: [7], unprogrammed: 1 });
    expect(first?.relief).toBeUndefined();
    // Relieved at 7 for every object but Y: done for the others.
    publisher.noteEnvoyState({ ...held, lastSeenAt: now + 1 }, { t: 7, o: ['x.dev/Route/ns/y'] });
    const relieved = await eventually(async () => ((await stored())?.relief !== undefined ? stored() : undefined), 'the item with the relief');
    expect(relieved?.relief).toEqual([{ seq: 7, o: ['x.dev/Route/ns/y'], n: 1, stuck: 0 }]);
    // Its names served: programmed through 7, done for every object (Y too).
    publisher.noteEnvoyState({ ...held, lastSeenAt: now + 2, programmedThrough: 7, types: { [CDS]: { lineage: L1, subscribed: true, acked: 7 } } });
    const served = await eventually(async () => ((await stored())?.unprogrammed === 0 ? stored() : undefined), 'the item with every member programmed');
    expect(served).toMatchObject({ unprogrammed: 0, through: [[7, 2]] });
    expect(served?.relief).toBeUndefined();
    expect(publisher.stats().writesBy['programmed']).toBe(2);
  } finally {
    await publisher.close();
    table.close();
  }
});
