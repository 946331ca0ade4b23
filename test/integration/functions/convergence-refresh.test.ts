// DECISION_REFRESH_MS on (the local system's setting): count-only decision rewrites are throttled and
// pending generations are re-evaluated from the container's cache of OBJECT items. The verdict must
// still move at once: Pending → Programmed is written by the batch that completes the fleet, and a
// decision written by another writer (expire, resync) is not hidden by the cache.
import { buildFunctionContext } from '../../../functions/lib/context';
import { configureDecisionRefresh, handleConvergence } from '../../../functions/convergence';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, LDS, decisionOf, deliver, FakeEnvoy, FakeGateway, objectRef, silentLogger, startWorld, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-r.boot1.edge';

describe('convergence with DECISION_REFRESH_MS (local DynamoDB stream)', () => {
  let world: World;
  let delivery: StreamDelivery;
  let gateway: FakeGateway;
  let envoys: FakeEnvoy[];
  let context: ReturnType<typeof buildFunctionContext>;

  beforeAll(async () => {
    world = await startWorld('refresh');
    context = buildFunctionContext(world.env, silentLogger);
    // Longer than the test: every count-only change after the first decision is throttled.
    configureDecisionRefresh(context, 60_000);
    delivery = deliver(world, (event) => handleConvergence(event, context));
    const now = Date.now();
    gateway = new FakeGateway(world, LINEAGE, now);
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(now);
    envoys = ['envoy-a', 'envoy-b', 'envoy-c'].map((id) => new FakeEnvoy(world, gateway, id, now));
    for (const envoy of envoys) await envoy.ackAll(now);
    await delivery.idle();
  });

  afterAll(async () => {
    await delivery.stop();
    context.close();
    await world.close();
  });

  it('writes the verdict change at once while count-only changes wait', async () => {
    const ref = objectRef('route-r1');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    const first = await waitForDecision(world, ref, 1, (d) => d.total === 3, 'a first decision');
    expect(first).toMatchObject({ state: 'Pending', programmed: 0 });
    await delivery.idle();
    expect(context.deps.generationCache?.size).toBeGreaterThan(0);

    await envoys[0]!.ackAll(Date.now());
    await delivery.idle();
    // Same verdict (Pending), younger than the refresh: not rewritten, the stored counts lag.
    expect(await decisionOf(world, ref, 1)).toMatchObject({ state: 'Pending', programmed: 0, decidedAt: first.decidedAt });

    await envoys[1]!.ackAll(Date.now());
    await envoys[2]!.ackAll(Date.now());
    await delivery.idle();
    // The verdict changed: written by the batch that completed the fleet, not after the refresh.
    expect(await decisionOf(world, ref, 1)).toMatchObject({ state: 'Programmed', programmed: 3, total: 3, blockers: [] });
  });

  it('does not let the cache hide a decision another writer stored', async () => {
    const ref = objectRef('route-r2');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    const first = await waitForDecision(world, ref, 1, (d) => d.total === 3 && d.state === 'Pending', 'Pending');
    // Another writer (e.g. expire at a later tick) stores Stuck with a fresher snapshot.
    const foreign = { ...first, state: 'Stuck' as const, decidedAt: first.decidedAt + 1, evaluatedRev: first.evaluatedRev + 1000, ...(first.evaluatedRevs ? { evaluatedRevs: Object.fromEntries(Object.entries(first.evaluatedRevs).map(([l, r]) => [l, r])) } : {}) };
    expect(await context.aggregates.writeDecision(ref, 1, foreign)).toBe('written');
    await delivery.idle();
    // The cached copy was dropped when the OBJECT record arrived; the next Envoy batch reads the item
    // and finds the verdict differs (Pending, not Stuck), so it writes it back.
    await envoys[0]!.write((s) => ({ ...s, lastSeenAt: Date.now() }));
    await delivery.idle();
    expect((await decisionOf(world, ref, 1))?.state).toBe('Pending');
  });
});
