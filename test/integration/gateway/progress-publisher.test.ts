// The PROGRESS publisher (xds-gateway/tracking/progress/progress-publisher.ts) over dynalite: the
// tracker's states carry no incarnation, so the publisher stamps them by the recorder's rule (core
// countEnvoyState): an Envoy that reconnects under the same node id moves the item's `incarnations`
// while `members` stays; a node leaving the lineage leaves both. A watermark becomes an anchor, and
// the item says when every member reached it.
import pino from 'pino';
import type { LineageWatermark } from '../../../common/core';
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
  const publisher = new ProgressPublisher({ store: table.progress, logger: pino({ level: 'silent' }), clock, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, requiredTypeUrls: [] });
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
