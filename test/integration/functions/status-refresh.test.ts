// The message refresh rule end to end (docs/CONVERGENCE.md, "Freshness of the message"): real local
// DynamoDB with its stream, the real convergence handler (handoff and refresh sweep on) and status
// handler, the local Kubernetes API server, a gateway-shaped writer heartbeating every 5 s as the
// real gateway does. A generation that stays Pending: the count changes right after the first write,
// no Envoy record follows, and the object's message must still be corrected within the interval
// (plus the sweep's delay), in one write; a later change that arrives when a write is due is written
// by its own record at once; the object's Kubernetes writes stay within the bound.
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../../common/core/status-update';
import { waitFor, waitForDecision } from './convergence-support';
import { startRefreshWorld, widget, type Condition, type RefreshWorld } from './status-refresh-support';

jest.setTimeout(120_000);

const R = DEFAULT_MESSAGE_REFRESH_MS;
const HEARTBEAT_MS = 5000;
/** Stream hops, the watch and timer jitter on a loaded 2-core machine. */
const SLACK_MS = 1500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a not-True condition tells its own counts (message refresh)', () => {
  let w: RefreshWorld;

  beforeAll(async () => {
    w = await startRefreshWorld({ envoys: 10, heartbeatMs: HEARTBEAT_MS });
    await w.idle();
  });
  afterAll(async () => {
    await w?.close();
  });

  const message = (condition: Condition | undefined): string => String(condition?.['message'] ?? '');
  const writesOf = (name: string) => w.writes().filter((write) => write.name === name);

  it('corrects a stale message within the interval with one write, and stays within 2 + one per interval', async () => {
    await w.createWidget('slow');
    await w.rebuild(['slow']);
    await waitFor('Pending 0/10 written', async () => (message(await w.conditionOf('slow')).startsWith('0/10 Envoys') ? true : undefined));
    const [first] = writesOf('slow');
    expect(first?.condition).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
    const firstAt = first?.at ?? 0;

    // Eight Envoys ACK at once: the stored decision says 8/10 straight away…
    for (const envoy of w.envoys.slice(0, 8)) await envoy.ackAll(Date.now());
    await waitForDecision(w.world, widget('slow'), 1, (d) => d.programmed === 8, 'decision 8/10');
    const staleFrom = Date.now();
    // …but our last write is younger than the interval: no write yet (≤ 1 per interval).
    await sleep(2000);
    expect(writesOf('slow')).toHaveLength(1);
    expect(message(await w.conditionOf('slow'))).toContain('0/10 Envoys programmed');

    // No Envoy record comes any more (only the gateway's heartbeat): the sweep corrects it.
    await waitFor('message corrected to 8/10', async () => (message(await w.conditionOf('slow')).startsWith('8/10 Envoys') ? true : undefined), R + HEARTBEAT_MS + 10_000);
    const refresh = writesOf('slow')[1];
    expect(refresh?.condition).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
    expect(message(refresh?.condition)).toMatch(/^8\/10 Envoys programmed at generation 1; waiting for envoy-008 \(CDS\), envoy-009 \(CDS\)$/);
    const refreshAt = refresh?.at ?? 0;
    // Spaced from the previous write by the interval, and stale for at most the interval plus the
    // sweep's clock (one heartbeat).
    expect(refreshAt - firstAt).toBeGreaterThanOrEqual(R - 50);
    expect(refreshAt - staleFrom).toBeLessThanOrEqual(R + HEARTBEAT_MS + SLACK_MS);
    process.stdout.write(`message refresh: first write → refresh ${refreshAt - firstAt} ms; stale for ${refreshAt - staleFrom} ms (interval ${R} ms, heartbeat ${HEARTBEAT_MS} ms)\n`);

    // A change arriving once a write is due is written by its own record, at once.
    await sleep(Math.max(0, refreshAt + R - Date.now()) + 200);
    const ackedAt = Date.now();
    await w.envoys[8]?.ackAll(ackedAt);
    await waitFor('message 9/10', async () => (message(await w.conditionOf('slow')).startsWith('9/10 Envoys') ? true : undefined), 10_000);
    const third = writesOf('slow')[2];
    expect((third?.at ?? 0) - ackedAt).toBeLessThan(SLACK_MS + 1000);

    // The last Envoy: True, and nothing after it.
    await w.envoys[9]?.ackAll(Date.now());
    await waitFor('True', async () => ((await w.conditionOf('slow'))?.['status'] === 'True' ? true : undefined));
    await w.idle();
    await sleep(HEARTBEAT_MS + 500);
    const writes = writesOf('slow');
    expect(writes.map((write) => `${String(write.condition?.['reason'])} ${message(write.condition).split(' ')[0] ?? ''}`)).toEqual(['Pending 0/10', 'Pending 8/10', 'Pending 9/10', 'Programmed 10/10']);
    const duration = (writes[writes.length - 1]?.at ?? 0) - firstAt;
    expect(writes.length).toBeLessThanOrEqual(2 + Math.floor(duration / R));
    // Each write's time is recorded on the item: what the next refresh is spaced from.
    const item = await w.world.store.getObjectGeneration(widget('slow'), 1);
    expect(item.status === 'found' && typeof item.value.conditionWrittenAt).toBe('number');
  });
});
