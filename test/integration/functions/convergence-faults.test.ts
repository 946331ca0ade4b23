// Failure paths of the convergence function against the local DynamoDB stream: batches redelivered
// after a handler failure must not double-count (aggregates equal a from-scratch recount, checked by
// resync finding no drift), and throttled DynamoDB requests are retried without losing an update.
import type { DynamoDBStreamEvent } from 'aws-lambda';
import pino from 'pino';

import { handler } from '../../../functions/convergence';
import { buildFunctionContext } from '../../../functions/lib/context';
import { runResync } from '../../../functions/lib/resync-run';
import { fromLambdaHandler, type StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, deliver, FakeEnvoy, FakeGateway, LDS, liveCount, objectRef, startWorld, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-f.boot1.edge';

describe('convergence under redelivery and throttling', () => {
  let world: World;
  let delivery: StreamDelivery;
  let gateway: FakeGateway;
  let envoys: FakeEnvoy[];
  const failedOnce = new Set<string>();
  let failAfterSuccess = true;

  beforeAll(async () => {
    world = await startWorld('convergence-faults');
    Object.assign(process.env, world.env);
    const real = fromLambdaHandler(handler, { functionName: 'convergence' });
    // The handler does all its work, then the invocation fails (e.g. a timeout after the writes):
    // Lambda redelivers the whole batch, so every record is processed twice.
    delivery = deliver(world, async (event: DynamoDBStreamEvent) => {
      const result = await real(event);
      const first = event.Records[0]?.dynamodb?.SequenceNumber ?? '';
      if (failAfterSuccess && !failedOnce.has(first)) {
        failedOnce.add(first);
        throw new Error('injected failure after the batch was processed');
      }
      return result;
    });
    const now = Date.now();
    gateway = new FakeGateway(world, LINEAGE, now);
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(now);
    envoys = Array.from({ length: 6 }, (_, i) => new FakeEnvoy(world, gateway, `envoy-${i}`, now));
    for (const envoy of envoys) await envoy.ackAll(now);
  });

  afterAll(async () => {
    await delivery.stop();
    await world.close();
  });

  async function expectNoDrift(): Promise<void> {
    const context = buildFunctionContext(world.env, pino({ level: 'silent' }));
    try {
      const report = await runResync(context.deps);
      expect(report).toMatchObject({ states: 6, shardsFixed: 0, membersFixed: 0, failed: 0 });
    } finally {
      context.close();
    }
  }

  it('processes redelivered batches without double counting', async () => {
    const ref = objectRef('redelivered');
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    for (const envoy of envoys) await envoy.ackAll(Date.now());
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed');
    await delivery.idle();
    expect(delivery.stats.failedInvocations).toBeGreaterThan(0);
    expect(await liveCount(world, LINEAGE)).toBe(6);
    await expectNoDrift();
  });

  it('loses nothing when DynamoDB throttles (SDK retries, conditional writes retried)', async () => {
    failAfterSuccess = false;
    const ref = objectRef('throttled');
    world.dynamo.faults.set({ throttleRate: 0.2, seed: 11 });
    try {
      gateway.change(LDS);
      await gateway.save(Date.now());
      await gateway.watermark(ref, 1, Date.now());
      for (const envoy of envoys.slice(0, 5)) await envoy.ackAll(Date.now());
      await envoys[5]!.nack(LDS, 'listener 0.0.0.0:443: duplicate filter chain', Date.now());
      const rejected = await waitForDecision(world, ref, 1, (d) => d.state === 'Rejected' && d.programmed === 5, 'Rejected 5/6');
      expect(rejected.blockers[0]).toMatchObject({ nodeId: 'envoy-5', reason: 'nacked' });
      await envoys[5]!.ackAll(Date.now());
      await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed' && d.programmed === 6, 'Programmed 6/6');
      await delivery.idle();
      expect(world.dynamo.faults.counts.throttled).toBeGreaterThan(0);
    } finally {
      world.dynamo.faults.set({});
    }
    expect(await liveCount(world, LINEAGE)).toBe(6);
    await expectNoDrift();
  });
});
