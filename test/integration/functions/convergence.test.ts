// End to end through the local DynamoDB stream: a gateway-like writer (the real store adapter) writes
// Envoy states, lineage states and watermarks; the stream delivers them to the convergence Lambda
// handler (run unchanged through fromLambdaHandler); the decision lands on the OBJECT item.

import { handler } from '../../../functions/convergence';
import { fromLambdaHandler, type StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, LDS, decisionOf, deliver, FakeEnvoy, FakeGateway, liveCount, objectRef, startWorld, waitFor, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-a.boot1.edge';

describe('convergence function (local DynamoDB stream)', () => {
  let world: World;
  let delivery: StreamDelivery;
  let gateway: FakeGateway;
  let envoys: FakeEnvoy[];
  let other: FakeGateway;

  beforeAll(async () => {
    world = await startWorld('convergence');
    Object.assign(process.env, world.env);
    delivery = deliver(world, fromLambdaHandler(handler, { functionName: 'convergence' }));
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
    await world.close();
  });

  it('keeps aggregates of the live Envoys per lineage', async () => {
    await waitFor('three live members', async () => ((await liveCount(world, LINEAGE)) === 3 ? true : undefined));
  });

  it('decides Programmed only after the last Envoy reaches the watermark', async () => {
    const ref = objectRef('route-1');
    const now = Date.now();
    gateway.change(CDS); // generation 1 of route-1 changes the clusters
    await gateway.save(now);
    await gateway.watermark(ref, 1, now);
    const pending = await waitForDecision(world, ref, 1, (d) => d.total === 3, 'a first decision');
    expect(pending).toMatchObject({ state: 'Pending', programmed: 0, total: 3 });
    expect(pending.blockers.map((b) => b.nodeId)).toEqual(['envoy-a', 'envoy-b', 'envoy-c']);

    await envoys[0]!.ackAll(Date.now());
    await envoys[1]!.ackAll(Date.now());
    await delivery.idle();
    const two = await waitForDecision(world, ref, 1, (d) => d.programmed === 2, '2/3');
    expect(two.state).toBe('Pending');
    expect(two.blockers).toEqual([{ nodeId: 'envoy-c', reason: 'pending', typeUrls: [CDS] }]);

    await envoys[2]!.ackAll(Date.now());
    const done = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed');
    expect(done).toMatchObject({ programmed: 3, total: 3, blockers: [], blockersOmitted: 0 });
  });

  it('keeps a generation Rejected with the Envoy message while an Envoy NACKs it', async () => {
    const ref = objectRef('route-2');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    await envoys[0]!.ackAll(Date.now());
    await envoys[1]!.ackAll(Date.now());
    await envoys[2]!.nack(CDS, 'cluster "payments": invalid lb_policy', Date.now());
    const rejected = await waitForDecision(world, ref, 1, (d) => d.state === 'Rejected' && d.programmed === 2, 'Rejected');
    expect(rejected.blockers).toHaveLength(1);
    const blocker = rejected.blockers[0]!;
    expect(blocker.reason === 'nacked' && blocker.nacks[0]?.message).toBe('cluster "payments": invalid lb_policy');
    // Unrelated writes (a heartbeat) leave it Rejected: only an ACK of the version clears a NACK.
    await envoys[2]!.write((s) => ({ ...s, lastSeenAt: Date.now() }));
    await delivery.idle();
    expect((await decisionOf(world, ref, 1))?.state).toBe('Rejected');
    await envoys[2]!.ackAll(Date.now());
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed after the fix');
  });

  it('decides only the latest generation: an older one is marked superseded', async () => {
    const ref = objectRef('route-3');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    await waitForDecision(world, ref, 1, (d) => d.state === 'Pending', 'gen 1 pending');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 2, Date.now());
    await waitForDecision(world, ref, 1, (d) => d.supersededBy === 2, 'gen 1 superseded');
    for (const envoy of envoys) await envoy.ackAll(Date.now());
    await waitForDecision(world, ref, 2, (d) => d.state === 'Programmed', 'gen 2 programmed');
    expect((await decisionOf(world, ref, 1))?.supersededBy).toBe(2);
  });

  it('a generation with a watermark on a lineage that is not live yet: noWatermark for live lineages without one', async () => {
    const ref = objectRef('route-4');
    other = new FakeGateway(world, 'gw-b.boot1.edge', Date.now());
    other.change(CDS);
    await other.save(Date.now());
    const envoyOnB = new FakeEnvoy(world, other, 'envoy-d', Date.now());
    await envoyOnB.ackAll(Date.now());
    await gateway.watermark(ref, 1, Date.now()); // only gateway A has served route-4 yet
    const decision = await waitForDecision(world, ref, 1, (d) => d.total === 4 && d.state === 'Pending', 'noWatermark on B');
    expect(decision.blockers).toEqual([{ nodeId: 'envoy-d', reason: 'noWatermark', lineages: ['gw-b.boot1.edge'] }]);
    await other.watermark(ref, 1, Date.now());
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed' && d.total === 4, 'Programmed on both lineages');
  });

  it('logs and skips a corrupt state item without blocking the stream', async () => {
    await world.table.rawItems.putItem({ pk: 'ENVOY#broken', sk: 'STATE', kind: 'EnvoyState', schemaVersion: 1, nodeId: 'broken' });
    const ref = objectRef('route-5');
    await gateway.watermark(ref, 1, Date.now());
    await other.watermark(ref, 1, Date.now());
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'decided after the corrupt record');
    expect(delivery.stats.droppedRecords).toBe(0);
  });
});
