// Convergence hands a changed verdict straight to the status writer (functions/lib/status-handoff.ts):
// real local DynamoDB with its stream, the real convergence and status handlers, the local Kubernetes
// API server. (1) With no status mapping running, a converged generation becomes True through
// convergence alone. (2) The status function processing an older record of the same generation (its
// Pending decision) after the direct write must not flip True back — neither through the stream image
// nor in the narrower race where the object is read after the direct write. (3) A failing API server
// does not fail the convergence batch, and the status function still writes the condition later.
// (4) In a normal rollout, Kubernetes status writes per object per generation stay ≤ 2.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import pino from 'pino';

import { type ObjectRef } from '../../../common/core';
import { objectGenerationFromItem, objectGenerationKey, parseItem } from '../../../common/store';
import { configureStatusHandoff, handleConvergence } from '../../../functions/convergence';
import { createKubeAccess } from '../../../functions/kube/access';
import { StatusWriter } from '../../../functions/kube/status-writer';
import { TrackedKinds } from '../../../functions/kube/tracked-kinds';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { createStatusHandler } from '../../../functions/status';
import { applyStatusUpdate } from '../../../functions/status/apply';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { openWatch, request, startTestServer, WIDGET_CRD, type OpenWatch, type TestServer } from '../kube/helpers';
import { CDS, FakeEnvoy, FakeGateway, LDS, silentLogger, startWorld, streamDeliveryFor, waitFor, waitForDecision, type World } from './convergence-support';
import { WIDGET_KIND, widgetRef, type WidgetObject } from './status-support';

const CONDITION = 'EnvoyProgrammed';
type Condition = Record<string, unknown>;


/** A pino logger whose JSON lines are kept, to see what the handoff reported. */
function capturingLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

async function createWidget(kube: TestServer, name: string): Promise<void> {
  const created = await request(kube, 'POST', '/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace: 'default' }, spec: { size: 1 } });
  if (created.status !== 201) throw new Error(`widget ${name} not created: ${JSON.stringify(created.body)}`);
}

async function bumpSpec(kube: TestServer, name: string, size: number): Promise<number> {
  const patched = await request(kube, 'PATCH', `/apis/example.com/v1/namespaces/default/widgets/${name}`, { spec: { size } }, 'application/merge-patch+json');
  return (patched.body as WidgetObject).metadata.generation;
}

async function conditionOf(kube: TestServer, name: string): Promise<Condition | undefined> {
  const object = (await request(kube, 'GET', `/apis/example.com/v1/namespaces/default/widgets/${name}`)).body as WidgetObject;
  return object.status?.conditions?.find((c) => c['type'] === CONDITION);
}

function conditionWhere(kube: TestServer, name: string, what: string, predicate: (c: Condition) => boolean): Promise<Condition> {
  return waitFor(`${name}: ${what}`, async () => {
    const found = await conditionOf(kube, name);
    return found !== undefined && predicate(found) ? found : undefined;
  });
}

/** Status writes seen by a watch: MODIFIED events whose `status.conditions` differ from the object's previous event. */
function statusWrites(watch: OpenWatch): Array<{ name: string; condition: Condition | undefined }> {
  const last = new Map<string, string>();
  const writes: Array<{ name: string; condition: Condition | undefined }> = [];
  for (const event of watch.events) {
    const object = event.object as unknown as WidgetObject;
    const name = object.metadata?.name ?? '';
    const conditions = JSON.stringify(object.status?.conditions ?? []);
    if (event.type === 'MODIFIED' && last.has(name) && last.get(name) !== conditions) {
      writes.push({ name, condition: object.status?.conditions?.find((c) => c['type'] === CONDITION) });
    }
    last.set(name, conditions);
  }
  return writes;
}

/** Envoys and a gateway lineage, all at the gateway's current config. */
async function fleet(world: World, lineage: string, ids: readonly string[]): Promise<{ gateway: FakeGateway; envoys: FakeEnvoy[] }> {
  const now = Date.now();
  const gateway = new FakeGateway(world, lineage, now);
  gateway.change(CDS);
  gateway.change(LDS);
  await gateway.save(now);
  const envoys = ids.map((id) => new FakeEnvoy(world, gateway, id, now));
  for (const envoy of envoys) await envoy.ackAll(now);
  return { gateway, envoys };
}

/** A new config reflecting these objects at these generations reaches the gateway (one rebuild). */
async function rebuild(gateway: FakeGateway, objects: ReadonlyArray<[ObjectRef, number]>): Promise<void> {
  gateway.change(CDS);
  await gateway.save(Date.now());
  for (const [ref, generation] of objects) await gateway.watermark(ref, generation, Date.now());
}

function kubeEnv(world: World, kube: TestServer): Record<string, string> {
  return { ...world.env, TRACKED_KINDS: JSON.stringify([WIDGET_KIND]), KUBECONFIG_PATH: kube.kubeconfig };
}

describe('convergence hands changed verdicts to the status writer', () => {
  let world: World;
  let kube: TestServer;
  let context: FunctionContext;
  let convergence: StreamDelivery;
  let gateway: FakeGateway;
  let envoys: FakeEnvoy[];

  beforeAll(async () => {
    world = await startWorld('handoff');
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    context = buildFunctionContext(world.env, silentLogger);
    expect(configureStatusHandoff(context, kubeEnv(world, kube))).toBe(true);
    convergence = streamDeliveryFor(world, (event) => handleConvergence(event, context));
    ({ gateway, envoys } = await fleet(world, 'gw-a.boot1.edge', ['envoy-a', 'envoy-b']));
    await convergence.idle();
  });
  afterAll(async () => {
    await convergence.stop();
    context.close();
    await kube.cleanup();
    await world.close();
  });

  it('(1) with no status mapping running, the converged generation becomes True through convergence alone', async () => {
    await createWidget(kube, 'direct');
    const watch = await openWatch(kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true&fieldSelector=metadata.name%3Ddirect');
    try {
      await rebuild(gateway, [[widgetRef('direct'), 1]]);
      await waitForDecision(world, widgetRef('direct'), 1, (d) => d.state === 'Pending', 'Pending at generation 1');
      await convergence.idle();
      // Pending is left to the status function (not running here): nothing written yet.
      expect(await conditionOf(kube, 'direct')).toBeUndefined();
      for (const envoy of envoys) await envoy.ackAll(Date.now());
      const written = await conditionWhere(kube, 'direct', 'True', (c) => c['status'] === 'True');
      expect(written).toMatchObject({ reason: 'Programmed', observedGeneration: 1, message: '2/2 Envoys programmed at generation 1' });
      // Recorded on the item exactly as the status function records it (its stream echo is a no-op).
      const item = await waitFor('the written condition recorded on the item', async () => {
        const read = await world.store.getObjectGeneration(widgetRef('direct'), 1);
        return read.status === 'found' && read.value.lastCondition !== undefined ? read.value : undefined;
      });
      expect(item.lastCondition).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 1 });
      expect(typeof item.programmedAt).toBe('number');
      await convergence.idle();
      expect(statusWrites(watch)).toHaveLength(1);
    } finally {
      watch.close();
      await watch.ended;
    }
  });

  it('(2) the status function meeting an older record of the same generation after the direct write does not flip it back', async () => {
    await createWidget(kube, 'race');
    await rebuild(gateway, [[widgetRef('race'), 1]]);
    await waitForDecision(world, widgetRef('race'), 1, (d) => d.state === 'Pending', 'Pending at generation 1');
    await convergence.idle();
    // The stream image of the Pending decision, kept for later (what a slow status shard still holds).
    const pendingImage = await world.table.rawItems.getItem(objectGenerationKey(widgetRef('race'), 1), { consistent: true });
    expect(pendingImage?.['decision']).toMatchObject({ state: 'Pending' });
    for (const envoy of envoys) await envoy.ackAll(Date.now());
    await conditionWhere(kube, 'race', 'True by the handoff', (c) => c['status'] === 'True');
    await convergence.idle();

    const watch = await openWatch(kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true&fieldSelector=metadata.name%3Drace');
    try {
      // (a) Through the stream: the real status handler gets the older record.
      const status = createStatusHandler({ env: kubeEnv(world, kube), logger: silentLogger });
      const stale = { Records: [{ eventName: 'MODIFY', dynamodb: { SequenceNumber: '1', Keys: marshall({ pk: pendingImage?.['pk'], sk: pendingImage?.['sk'] }), NewImage: marshall(pendingImage ?? {}, { removeUndefinedValues: true }) } }] } as unknown as DynamoDBStreamEvent;
      expect((await status(stale)).batchItemFailures).toEqual([]);

      // (b) The narrower race: the item was read (Pending) before the direct write, the object after
      // it. The writer sees our True at the same generation and revalidates against the stored
      // decision (Programmed, final) instead of writing the older draft.
      const parsed = parseItem(pendingImage ?? {});
      if (!parsed.ok || parsed.item.kind !== 'ObjectGeneration') throw new Error('the Pending image does not parse');
      const olderRecord = objectGenerationFromItem(parsed.item);
      const writer = new StatusWriter({ access: createKubeAccess({ source: 'kubeconfigFile', path: kube.kubeconfig }), kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger });
      const deps = { writer, store: world.store, cleanup: { markDeleted: async () => 0 }, logger: silentLogger, conditionType: CONDITION, writeOnMessageChange: false, now: Date.now };
      expect(await applyStatusUpdate({ source: 'handoff', record: olderRecord }, deps)).toMatchObject({ result: 'skipped', detail: 'unchanged' });
      expect(await conditionOf(kube, 'race')).toMatchObject({ status: 'True', observedGeneration: 1 });
      expect(statusWrites(watch)).toHaveLength(0);

      // (c) Resync's update takes the same path, so the same guard: the older record, as if its
      // Pending condition had been recorded (resync re-asserts only what was written once), does not
      // flip True back either.
      const pendingCondition = { type: CONDITION, status: 'False' as const, reason: 'Pending', message: '0/2 Envoys programmed at generation 1', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
      expect(await applyStatusUpdate({ source: 'resync', record: { ...olderRecord, lastCondition: pendingCondition } }, deps)).toMatchObject({ result: 'skipped', detail: 'unchanged' });
      expect(await conditionOf(kube, 'race')).toMatchObject({ status: 'True', observedGeneration: 1 });
      expect(statusWrites(watch)).toHaveLength(0);

      // Without the store's read (the guard off), the same call flips the condition: what (b) prevents.
      const unguarded = { ...deps, store: { recordCondition: async () => undefined } };
      expect(await applyStatusUpdate({ source: 'handoff', record: olderRecord }, unguarded)).toMatchObject({ result: 'written' });
      expect(await conditionOf(kube, 'race')).toMatchObject({ status: 'False', reason: 'Pending' });
    } finally {
      watch.close();
      await watch.ended;
    }
  });

  it('(2b) revalidation does not keep a True nobody earned: a competitor\'s flip is undone from the stored decision', async () => {
    await createWidget(kube, 'rival');
    await rebuild(gateway, [[widgetRef('rival'), 1]]);
    await waitForDecision(world, widgetRef('rival'), 1, (d) => d.state === 'Pending', 'Pending at generation 1');
    await convergence.idle();
    const object = (await request(kube, 'GET', '/apis/example.com/v1/namespaces/default/widgets/rival')).body as WidgetObject;
    const unearned = { type: CONDITION, status: 'True', reason: 'Programmed', message: 'tampered', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    const tampered = await request(kube, 'PATCH', '/apis/example.com/v1/namespaces/default/widgets/rival/status', { metadata: { resourceVersion: object.metadata.resourceVersion }, status: { conditions: [unearned] } }, 'application/merge-patch+json');
    expect(tampered.status).toBe(200);
    const read = await world.store.getObjectGeneration(widgetRef('rival'), 1);
    if (read.status !== 'found') throw new Error('no item');
    const writer = new StatusWriter({ access: createKubeAccess({ source: 'kubeconfigFile', path: kube.kubeconfig }), kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger });
    const deps = { writer, store: world.store, cleanup: { markDeleted: async () => 0 }, logger: silentLogger, conditionType: CONDITION, writeOnMessageChange: false, now: Date.now };
    expect(await applyStatusUpdate({ source: 'handoff', record: read.value }, deps)).toMatchObject({ result: 'written' });
    expect(await conditionOf(kube, 'rival')).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
  });

  it('(4) a normal rollout with both paths running: ≤ 2 status writes per object per generation, ending True', async () => {
    const names = ['roll-0', 'roll-1', 'roll-2', 'roll-3', 'roll-4'];
    const status = streamDeliveryFor(world, createStatusHandler({ env: kubeEnv(world, kube), logger: silentLogger }));
    const watch = await openWatch(kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true');
    try {
      for (const name of names) await createWidget(kube, name);
      for (const generation of [1, 2]) {
        if (generation === 2) for (const name of names) expect(await bumpSpec(kube, name, 2)).toBe(2);
        await rebuild(gateway, names.map((name) => [widgetRef(name), generation]));
        await Promise.all(names.map((name) => waitForDecision(world, widgetRef(name), generation, (d) => d.state === 'Pending', `${name} Pending at ${generation}`)));
        for (const envoy of envoys) await envoy.ackAll(Date.now());
        for (const name of names) await conditionWhere(kube, name, `True at ${generation}`, (c) => c['status'] === 'True' && c['observedGeneration'] === generation);
      }
      await convergence.idle();
      await status.idle();
      const writes = statusWrites(watch).filter((w) => names.includes(w.name));
      const perGeneration = new Map<string, number>();
      for (const write of writes) {
        const key = `${write.name}@${String(write.condition?.['observedGeneration'])}`;
        perGeneration.set(key, (perGeneration.get(key) ?? 0) + 1);
      }
      expect(perGeneration.size).toBe(names.length * 2);
      expect(Math.max(...perGeneration.values())).toBeLessThanOrEqual(2);
      // Never True and then something else for the same generation.
      for (const name of names) {
        const sequence = writes.filter((w) => w.name === name).map((w) => `${String(w.condition?.['observedGeneration'])}:${String(w.condition?.['status'])}`);
        for (const generation of [1, 2]) {
          const ofGeneration = sequence.filter((s) => s.startsWith(`${generation}:`));
          expect(ofGeneration.indexOf(`${generation}:True`)).toBe(ofGeneration.length - 1);
        }
      }
    } finally {
      watch.close();
      await watch.ended;
      await status.stop();
    }
  });
});

describe('convergence handoff against a failing API server', () => {
  let world: World;
  let kube: TestServer;
  let failing: Server;
  let failingRequests = 0;
  let failingDir: { kubeconfig: string };
  let context: FunctionContext;
  let convergence: StreamDelivery;
  let status: StreamDelivery;
  let openStatusGate: () => void = () => undefined;
  const responses: DynamoDBBatchResponse[] = [];
  const captured = capturingLogger();

  beforeAll(async () => {
    world = await startWorld('handoff-fail');
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    failing = createServer((_req, res) => {
      failingRequests++;
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500, reason: 'InternalError', message: 'etcdserver: request timed out' }));
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const port = (failing.address() as AddressInfo).port;
    failingDir = {
      kubeconfig: [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: failing, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: u, user: {token: x}}]',
        'contexts: [{name: failing, context: {cluster: failing, user: u}}]',
        'current-context: failing',
        '',
      ].join('\n'),
    };
    context = buildFunctionContext(world.env, captured.logger);
    expect(configureStatusHandoff(context, { ...world.env, TRACKED_KINDS: JSON.stringify([WIDGET_KIND]), KUBECONFIG_YAML: failingDir.kubeconfig })).toBe(true);
    convergence = streamDeliveryFor(world, async (event) => {
      const response = await handleConvergence(event, context);
      responses.push(response);
      return response;
    });
    // The status mapping exists from the start (the local change log keeps records only until every
    // reader has passed them) but is held back, like a shard that is behind.
    const statusHandler = createStatusHandler({ env: kubeEnv(world, kube), logger: silentLogger });
    const gate = new Promise<void>((resolve) => {
      openStatusGate = resolve;
    });
    status = streamDeliveryFor(world, async (event) => {
      await gate;
      return statusHandler(event);
    });
  });
  afterAll(async () => {
    openStatusGate();
    await status.stop();
    await convergence.stop();
    context.close();
    await new Promise((resolve) => failing.close(resolve));
    await kube.cleanup();
    await world.close();
  });

  it('(3) the decision is stored, no record fails, and the status function writes the condition later', async () => {
    const { gateway, envoys } = await fleet(world, 'gw-b.boot1.edge', ['envoy-c', 'envoy-d']);
    await createWidget(kube, 'down');
    await rebuild(gateway, [[widgetRef('down'), 1]]);
    await waitForDecision(world, widgetRef('down'), 1, (d) => d.state === 'Pending', 'Pending');
    for (const envoy of envoys) await envoy.ackAll(Date.now());
    await waitForDecision(world, widgetRef('down'), 1, (d) => d.state === 'Programmed', 'Programmed');
    await convergence.idle();
    expect(failingRequests).toBeGreaterThanOrEqual(1);
    expect(responses.length).toBeGreaterThan(0);
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
    const failure = captured.lines.find((line) => line['msg'] === 'status handoff failed; left to the status function');
    expect(failure).toMatchObject({ object: 'example.com/Widget/default/down', generation: 1, state: 'Programmed' });
    expect(String(failure?.['reason'])).toMatch(/500/);
    const batches = captured.lines.filter((line) => line['msg'] === 'convergence batch done' && line['handoff'] !== undefined);
    expect(batches.some((line) => (line['handoff'] as { failed: number }).failed === 1)).toBe(true);
    // Nothing reached the object, and nothing was recorded as written.
    expect(await conditionOf(kube, 'down')).toBeUndefined();
    const item = await world.store.getObjectGeneration(widgetRef('down'), 1);
    expect(item.status === 'found' && item.value.lastCondition).toBe(undefined);

    // The backstop: the status function's mapping, held back until now (a slow shard), writes the
    // stored decision.
    openStatusGate();
    await conditionWhere(kube, 'down', 'True by the status function', (c) => c['status'] === 'True');
    expect(await conditionOf(kube, 'down')).toMatchObject({ reason: 'Programmed', observedGeneration: 1, message: '2/2 Envoys programmed at generation 1' });
  });
});
