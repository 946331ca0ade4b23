// Evaluating a pending generation reads its OBJECT item and the object's newest generation in one
// Query (one round trip less between the last ACK and the decision). A generation not among
// the newest few is read by key and found superseded, as before.
import type { EventStore } from '../../../common/core';
import { AggregateSnapshot, evaluateCandidate, type EvaluationDeps } from '../../../functions/lib/evaluate';
import { decisionOf, FakeGateway, objectRef, silentLogger, startWorld, CDS, type World } from './convergence-support';

const LINEAGE = 'gw-r.boot1.edge';

let world: World;
let gateway: FakeGateway;
beforeAll(async () => {
  world = await startWorld('reads');
  gateway = new FakeGateway(world, LINEAGE, Date.now());
  gateway.change(CDS);
  await gateway.save(Date.now());
});
afterAll(async () => {
  await world.close();
});

type ReadCalls = { getObjectGeneration: number; listObjectGenerations: number };

function countingDeps(): { deps: EvaluationDeps; calls: ReadCalls } {
  const calls: ReadCalls = { getObjectGeneration: 0, listObjectGenerations: 0 };
  const store: Pick<EventStore, 'getObjectGeneration' | 'listObjectGenerations' | 'getLineageState'> = {
    getObjectGeneration: (ref, generation) => {
      calls.getObjectGeneration++;
      return world.store.getObjectGeneration(ref, generation);
    },
    listObjectGenerations: (ref, options) => {
      calls.listObjectGenerations++;
      return world.store.listObjectGenerations(ref, options);
    },
    getLineageState: (lineage) => world.store.getLineageState(lineage),
  };
  return { deps: { aggregates: world.aggregates, store, logger: silentLogger, policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 }, now: () => Date.now() }, calls };
}

test('one Query reads the candidate and tells whether a newer generation exists', async () => {
  const ref = objectRef('reads-latest');
  await gateway.watermark(ref, 1, Date.now());
  const { deps, calls } = countingDeps();
  expect(await evaluateCandidate(deps, new AggregateSnapshot(deps), { object: ref, generation: 1 })).toBe('written');
  expect(calls).toEqual({ getObjectGeneration: 0, listObjectGenerations: 1 });
  expect((await decisionOf(world, ref, 1))?.supersededBy).toBeUndefined();
});

test('a generation below the newest few is read by key and superseded by the newest', async () => {
  const ref = objectRef('reads-old');
  for (let generation = 1; generation <= 5; generation++) await gateway.watermark(ref, generation, Date.now());
  const { deps, calls } = countingDeps();
  expect(await evaluateCandidate(deps, new AggregateSnapshot(deps), { object: ref, generation: 1 })).toBe('superseded');
  expect(calls).toEqual({ getObjectGeneration: 1, listObjectGenerations: 1 });
  expect((await decisionOf(world, ref, 1))?.supersededBy).toBe(5);

  // The generation just below the newest is among them: one Query, superseded too.
  const again = countingDeps();
  expect(await evaluateCandidate(again.deps, new AggregateSnapshot(again.deps), { object: ref, generation: 4 })).toBe('superseded');
  expect(again.calls).toEqual({ getObjectGeneration: 0, listObjectGenerations: 1 });
});
