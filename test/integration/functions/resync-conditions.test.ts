// Resync's condition pass against the local Kubernetes API server and the local DynamoDB: a competing
// writer removes or rewrites our condition → the next run puts it back with exactly one write, other
// writers' conditions untouched; a deleted object's items (and pending entries) get a ttl; a second
// run writes nothing anywhere; a pass over the table can span several bounded runs via its cursor.

import { type ObjectRef } from '../../../common/core';
import { objectGenerationKey, pendingKey, type DynamoAggregateStore } from '../../../common/store';
import { createKubeAccess } from '../../../functions/kube/access';
import { StatusWriter } from '../../../functions/kube/status-writer';
import { TrackedKinds } from '../../../functions/kube/tracked-kinds';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { CONDITION_CURSOR_KEY, runConditionResync } from '../../../functions/lib/resync-conditions';
import { buildConditionResync, type ConditionResync } from '../../../functions/lib/resync-conditions-context';
import { handleResync } from '../../../functions/resync';
import { createStatusHandler } from '../../../functions/status';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { openWatch, request, type OpenWatch } from '../kube/helpers';
import {
  createWidget,
  decisions,
  deliver,
  getWidget,
  LINEAGE,
  patchWidgetStatus,
  putDecision,
  silentLogger,
  startStatusWorld,
  waitFor,
  WIDGET_KIND,
  widgetRef,
  type StatusWorld,
} from './status-support';

const UNREACHABLE_KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'http://127.0.0.1:1' } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;
const FOREIGN = { type: 'Valid', status: 'True', reason: 'Valid', message: 'valid HTTPProxy', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };

describe('resync re-asserts drifted conditions and collects deleted objects', () => {
  let world: StatusWorld;
  let status: StreamDelivery;
  let records: StreamDelivery;
  let recordCount = 0;
  let context: FunctionContext;
  let conditions: ConditionResync;
  let aggregates: DynamoAggregateStore;

  const ours = async (name: string): Promise<Record<string, unknown> | undefined> => (await getWidget(world, name))?.status?.conditions?.find((c) => c['type'] === 'EnvoyProgrammed');
  const modifiedOf = (watch: OpenWatch, name: string): number => watch.events.filter((e) => e.type === 'MODIFIED' && e.object.metadata?.name === name).length;
  const raw = async (key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> =>
    world.table.rawItems.getItem(key, { consistent: true });

  async function widgetWithCondition(name: string, decision: unknown): Promise<ObjectRef> {
    const ref = widgetRef(name);
    await createWidget(world, name);
    await putDecision(world, ref, 1, decision);
    await waitFor(`condition on ${name}`, ours.bind(null, name));
    await waitFor(`lastCondition recorded for ${name}`, async () => {
      const read = await world.store.getObjectGeneration(ref, 1);
      return read.status === 'found' && read.value.lastCondition !== undefined ? true : undefined;
    });
    return ref;
  }

  /** A Contour-like writer replacing the whole conditions list (merge patch, RFC 7386). */
  async function replaceConditions(name: string, list: unknown[]): Promise<void> {
    const current = await getWidget(world, name);
    expect(await patchWidgetStatus(world, name, { conditions: list }, current?.metadata.resourceVersion)).toBe(200);
  }

  beforeAll(async () => {
    world = await startStatusWorld();
    status = deliver(world, createStatusHandler({ env: world.env, logger: silentLogger }));
    records = deliver(world, async (event) => {
      recordCount += event.Records.length;
    });
    context = buildFunctionContext(world.env, silentLogger);
    aggregates = world.table.aggregates;
    const built = buildConditionResync(world.env, silentLogger, { aggregates });
    if (built === undefined) throw new Error('condition resync not enabled by TRACKED_KINDS');
    conditions = built;
  });

  afterAll(async () => {
    await status.stop();
    await records.stop();
    conditions.close();
    context.close();
    await world.close();
  });

  it('puts a removed or rewritten condition back once, keeps foreign ones, and marks a deleted object for expiry', async () => {
    await widgetWithCondition('removed', decisions.pending3of5);
    await widgetWithCondition('flipped', decisions.programmed);
    await widgetWithCondition('steady', decisions.programmed);
    await widgetWithCondition('reworded', decisions.pending3of5);
    const gone = await widgetWithCondition('gone', decisions.pending3of5);
    await aggregates.putPending({ lineage: LINEAGE, seq: 10, object: gone, generation: 1 });
    expect(await raw(pendingKey(LINEAGE, 10, gone, 1))).toMatchObject({ lineage: LINEAGE });
    const expectedRemoved = await ours('removed');
    const expectedFlipped = await ours('flipped');
    await status.idle();

    await replaceConditions('removed', [FOREIGN]);
    await replaceConditions('flipped', [FOREIGN, { ...expectedFlipped, status: 'False', reason: 'Hijacked', message: 'not ours' }]);
    // Only the message differs: not drift (status, reason and observedGeneration are what readers act on).
    const reworded = { ...(await ours('reworded')), message: 'edited by hand' };
    await replaceConditions('reworded', [reworded]);
    expect((await request(world.kube, 'DELETE', '/apis/example.com/v1/namespaces/default/widgets/gone')).status).toBe(200);
    expect(await ours('removed')).toBeUndefined();

    const watch = await openWatch(world.kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true');
    try {
      await watch.waitForEvents(4); // the initial ADDED events of the four remaining widgets
      const first = await handleResync(context, conditions);
      expect(first.conditions).toMatchObject({ checked: 5, reasserted: 2, inSync: 2, collected: 1, failed: 0, corrupt: 0, complete: true });

      await waitFor('both re-assertions seen by the watch', async () => (modifiedOf(watch, 'removed') + modifiedOf(watch, 'flipped') >= 2 ? true : undefined));
      const removed = await getWidget(world, 'removed');
      // Ours is back as the decision says (a fresh transition time: it had disappeared); Valid untouched.
      expect(removed?.status?.conditions).toEqual([FOREIGN, { ...expectedRemoved, lastTransitionTime: expect.any(String) }]);
      const flipped = await getWidget(world, 'flipped');
      expect(flipped?.status?.conditions?.[0]).toEqual(FOREIGN);
      expect(flipped?.status?.conditions?.[1]).toMatchObject({ type: 'EnvoyProgrammed', status: 'True', reason: 'Programmed', observedGeneration: 1, message: expectedFlipped?.['message'] });

      // Deleted object: its generation item carries a ttl, its pending entry is resolved (the
      // aggregate port deletes it, or marks it done with a ttl): expire and resync stop reading it.
      expect((await raw(objectGenerationKey(gone, 1)))?.['ttl']).toEqual(expect.any(Number));
      const pending = await raw(pendingKey(LINEAGE, 10, gone, 1));
      if (pending !== undefined) expect(pending).toMatchObject({ done: true, ttl: expect.any(Number) });
      expect((await aggregates.listPending(LINEAGE)).items).toEqual([]);

      // Second run: nothing drifted, the deleted object is not looked at again, and nothing is written.
      await status.idle();
      await records.idle();
      const recordsBefore = recordCount;
      const eventsBefore = watch.events.length;
      const second = await handleResync(context, conditions);
      expect(second.conditions).toMatchObject({ checked: 4, reasserted: 0, inSync: 4, collected: 0, failed: 0, complete: true });
      await status.idle();
      await records.idle();
      await new Promise((resolve) => setTimeout(resolve, 300)); // a late watch event would show here
      expect(watch.events.length).toBe(eventsBefore);
      expect(recordCount).toBe(recordsBefore);
      expect(modifiedOf(watch, 'removed')).toBe(1);
      expect(modifiedOf(watch, 'flipped')).toBe(1);
      expect(modifiedOf(watch, 'steady')).toBe(0);
      expect(modifiedOf(watch, 'reworded')).toBe(0);
      expect(await ours('reworded')).toEqual(reworded);
    } finally {
      watch.close();
      await watch.ended;
    }
  });

  it('spreads a pass over several bounded runs with a cursor, fixing each drifted object once', async () => {
    await replaceConditions('steady', [FOREIGN]);
    const bounded = { ...conditions.deps, maxObjectsPerRun: 1 };
    const runs = [];
    for (let run = 0; run < 50; run++) {
      const report = await runConditionResync(bounded);
      runs.push(report);
      expect(report.checked).toBeLessThanOrEqual(1);
      if (report.complete) break;
      expect(await raw(CONDITION_CURSOR_KEY)).toMatchObject({ startKey: { pk: expect.any(String), sk: expect.any(String) } });
    }
    expect(runs.length).toBeGreaterThan(3);
    expect(runs.at(-1)?.complete).toBe(true);
    expect(runs.reduce((sum, r) => sum + r.checked, 0)).toBe(4);
    expect(runs.reduce((sum, r) => sum + r.reasserted, 0)).toBe(1);
    expect(await ours('steady')).toMatchObject({ status: 'True', reason: 'Programmed' });
    expect((await getWidget(world, 'steady'))?.status?.conditions?.[0]).toEqual(FOREIGN);
    expect(await raw(CONDITION_CURSOR_KEY)).toMatchObject({ startKey: null });
  });

  it('keeps going past a corrupt item, an untracked kind and an unreachable API server; is configured from the environment', async () => {
    const lastCondition = { type: 'EnvoyProgrammed', status: 'True', reason: 'Programmed', message: 'x', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    // Written by someone else's bug: an ObjectGeneration without watermarks.
    await world.table.rawItems.putItem({ pk: 'OBJECT#example.com/Widget/default/corrupt', sk: 'GEN#0000000000000001', kind: 'ObjectGeneration', schemaVersion: 1, lastCondition });
    // A kind this deployment does not track (TRACKED_KINDS lists only Widget).
    const untracked = { group: 'other.example.com', kind: 'Gadget', namespace: 'default', name: 'g' };
    await world.store.putWatermark(untracked, 1, LINEAGE, { seq: 10, types: {}, at: 1795000000000 });
    await world.table.rawItems.setAttributes(objectGenerationKey(untracked, 1), { decision: decisions.programmed, lastCondition });
    const report = await runConditionResync(conditions.deps);
    expect(report).toMatchObject({ corrupt: 1, notWritten: 1, reasserted: 0, failed: 0, complete: true });
    expect(report.inSync).toBe(4);

    // The API server unreachable: each object fails (counted, logged), the pass still ends.
    const unreachable = createKubeAccess({ source: 'kubeconfig', yaml: UNREACHABLE_KUBECONFIG });
    const writer = new StatusWriter({ access: unreachable, kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger, backoffMs: () => 0 });
    const down = await runConditionResync({ ...conditions.deps, writer });
    expect(down).toMatchObject({ failed: 4, corrupt: 1, notWritten: 1, reasserted: 0, complete: true });

    expect(buildConditionResync({ ...world.env, TRACKED_KINDS: '' }, silentLogger, { aggregates })).toBeUndefined();
    expect(() => buildConditionResync({ ...world.env, RESYNC_MAX_OBJECTS: 'many' }, silentLogger, { aggregates })).toThrow(/RESYNC_MAX_OBJECTS/);
    expect(() => buildConditionResync({ ...world.env, KUBECONFIG_PATH: '' }, silentLogger, { aggregates })).toThrow(/KUBECONFIG_YAML, KUBECONFIG_PATH or EKS_CLUSTER_NAME/);
  });
});
