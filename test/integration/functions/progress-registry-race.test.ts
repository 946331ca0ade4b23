// Evaluation from PROGRESS reads the registry, then the live lineages' items. A node moving from L1
// to a new lineage L2 leaves L1's item once an L2 item counting it is stored; if L2 was registered
// after the registry was read, the items read afterwards count the node nowhere, and the generation
// was Programmed without it: a false True (truth checker seed 70676, docs/RELIABILITY.md). The
// snapshot reads the registry again after the items and, with a lineage added, reads again.
// On dynalite; the registry read is slowed by hand so that the move falls between it and the items.
import { progressFromStates, type AggregateStore, type EnvoyState, type LineageProgress, type ObjectGeneration } from '../../../common/core';
import { registerLineageHeartbeats } from '../../../common/store';
import { AggregateSnapshot, type EvaluationDeps } from '../../../functions/lib/evaluate';
import { CDS, envoy } from '../../unit/core/fixtures';
import { objectRef, silentLogger, startWorld, type World } from './convergence-support';

const L1 = 'gw-race.boot1.edge';
const L2 = 'gw-race.boot1-l1.edge';
const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };

let world: World;
beforeAll(async () => {
  world = await startWorld('registry-race');
});
afterAll(async () => {
  await world.close();
});

function on(lineage: string, nodeId: string, through: number): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked: through, lineage } }, { programmedThrough: through, lineage, lastSeenAt: Date.now() });
}

function item(lineage: string, v: number, states: readonly EnvoyState[]): LineageProgress {
  return progressFromStates({ lineage, v, heartbeatAt: Date.now(), states, openWatermarks: [], requiredTypeUrls: [], policy });
}

test('a lineage registered while the items are read is read too: the moving node is counted', async () => {
  const now = Date.now();
  await registerLineageHeartbeats(world.aggregates, new Map([[L1, now]]));
  // a is programmed at the watermark; b is behind it, on L1 for now.
  expect(await world.table.progress.putProgress(item(L1, 1, [on(L1, 'a', 5), on(L1, 'b', 3)]))).toBe('written');

  const deps = (slowRegistry: boolean): EvaluationDeps => {
    let reads = 0;
    const aggregates = Object.create(world.aggregates) as AggregateStore;
    aggregates.getLineageRegistry = async () => {
      reads++;
      const registry = await world.aggregates.getLineageRegistry();
      if (slowRegistry && reads === 1) {
        // The gateway moves b meanwhile, in its order: L2 registered, L2's item counting b, then L1's without it.
        await registerLineageHeartbeats(world.aggregates, new Map([[L2, Date.now()]]));
        expect(await world.table.progress.putProgress(item(L2, 1, [on(L2, 'b', 3)]))).toBe('written');
        expect(await world.table.progress.putProgress(item(L1, 2, [on(L1, 'a', 5)]))).toBe('written');
      }
      return registry;
    };
    return { aggregates, store: world.store, progress: world.table.progress, logger: silentLogger, policy, now: () => Date.now() };
  };
  const record: ObjectGeneration = {
    object: objectRef('registry-race'),
    generation: 2,
    watermarks: { [L1]: { seq: 5, types: { [CDS]: 5 }, at: now }, [L2]: { seq: 5, types: { [CDS]: 5 }, at: now } },
    firstSeenAt: now,
  };
  const { convergence } = await new AggregateSnapshot(deps(true)).evaluate(record);
  // b is behind: Pending, and counted.
  expect(convergence).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
  expect(convergence.blockers).toEqual([expect.objectContaining({ nodeId: 'b', reason: 'pending' })]);
  // A later snapshot (no race) agrees.
  expect((await new AggregateSnapshot(deps(false)).evaluate(record)).convergence).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
});
