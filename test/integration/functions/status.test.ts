// The status function end to end: OBJECT items with decisions in local DynamoDB → stream delivery →
// functions/status.ts → the local Kubernetes API server, checked with the real kubectl.
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';

import { createStatusHandler } from '../../../functions/status';
import type { StreamDelivery } from '../../../infra/local/dynamo';

import { objectGenerationKey } from '../../../common/store';
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../../common/core/status-update';
import { kubectl, openWatch } from '../kube/helpers';
import {
  createWidget,
  decisions,
  deliver,
  getWidget,
  patchWidgetStatus,
  putDecision,
  silentLogger,
  startStatusWorld,
  widgetRef,
  type StatusWorld,
  type WidgetObject,
} from './status-support';

type Handler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

function ourCondition(object: WidgetObject | undefined, type = 'EnvoyProgrammed'): Record<string, unknown> | undefined {
  return object?.status?.conditions?.find((condition) => condition['type'] === type);
}

describe('status function', () => {
  let world: StatusWorld;
  let delivery: StreamDelivery;
  let invocations: DynamoDBBatchResponse[];

  beforeAll(async () => {
    world = await startStatusWorld();
    const handler: Handler = createStatusHandler({ env: world.env, logger: silentLogger });
    invocations = [];
    delivery = deliver(world, async (event) => {
      const response = await handler(event);
      invocations.push(response);
      return response;
    });
  });
  afterAll(async () => {
    await delivery.stop();
    await world.close();
  });

  it('writes the condition from a decision, and kubectl wait --for=condition=EnvoyProgrammed returns', async () => {
    await createWidget(world, 'ready');
    await putDecision(world, widgetRef('ready'), 1, decisions.programmed);
    await delivery.idle();
    const object = await getWidget(world, 'ready');
    expect(ourCondition(object)).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 1, message: '5/5 Envoys programmed at generation 1' });
    const waited = await kubectl(world.kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/ready', '-n', 'default', '--timeout=20s']);
    expect(waited.stderr).toBe('');
    expect(waited.code).toBe(0);
    // The written condition is remembered on the item, with programmedAt.
    const item = await world.store.getObjectGeneration(widgetRef('ready'), 1);
    expect(item.status === 'found' && item.value.lastCondition?.status).toBe('True');
    expect(item.status === 'found' && typeof item.value.programmedAt).toBe('number');
  });

  it('kubectl wait blocks on a False condition until the decision flips to True', async () => {
    await createWidget(world, 'later');
    await putDecision(world, widgetRef('later'), 1, decisions.pending3of5);
    await delivery.idle();
    const pending = ourCondition(await getWidget(world, 'later'));
    expect(pending).toMatchObject({ status: 'False', reason: 'Pending' });
    expect(String(pending?.['message'])).toContain('waiting for envoy-d (RDS), envoy-e (RDS)');
    const waiting = kubectl(world.kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/later', '-n', 'default', '--timeout=20s']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await putDecision(world, widgetRef('later'), 1, decisions.programmed);
    const waited = await waiting;
    expect(waited.code).toBe(0);
    const flipped = ourCondition(await getWidget(world, 'later'));
    expect(flipped).toMatchObject({ status: 'True' });
    // lastTransitionTime moves on a status flip.
    expect(flipped?.['lastTransitionTime']).not.toBe(pending?.['lastTransitionTime']);
  });

  it('does not write when nothing a reader acts on changed (same decision, or only the count in the message)', async () => {
    await createWidget(world, 'quiet');
    await putDecision(world, widgetRef('quiet'), 1, decisions.pending3of5);
    await delivery.idle();
    const first = await getWidget(world, 'quiet');
    expect(ourCondition(first)).toMatchObject({ status: 'False', reason: 'Pending' });
    // An ACK moves 3/5 to 4/5: same status, reason, generation. No Kubernetes write (invariant 4)
    // while our last write is younger than the message refresh interval (status-refresh.test.ts).
    await putDecision(world, widgetRef('quiet'), 1, decisions.pending4of5);
    await putDecision(world, widgetRef('quiet'), 1, decisions.pending3of5);
    await putDecision(world, widgetRef('quiet'), 1, decisions.pending4of5);
    await delivery.idle();
    const after = await getWidget(world, 'quiet');
    expect(after?.metadata.resourceVersion).toBe(first?.metadata.resourceVersion);
    // A change of reason is written, once.
    await putDecision(world, widgetRef('quiet'), 1, decisions.rejected);
    await delivery.idle();
    const rejected = await getWidget(world, 'quiet');
    expect(rejected?.metadata.resourceVersion).not.toBe(first?.metadata.resourceVersion);
    expect(ourCondition(rejected)).toMatchObject({ status: 'False', reason: 'Rejected' });
    expect(String(ourCondition(rejected)?.['message'])).toContain('envoy-c rejected RDS: Proto constraint validation failed');
    expect(invocations.every((response) => (response.batchItemFailures ?? []).length === 0)).toBe(true);
  });

  it('writes O(1) times per generation however many decisions a large fleet produces (invariant 4)', async () => {
    await createWidget(world, 'bounded');
    const watch = await openWatch(world.kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true&fieldSelector=metadata.name%3Dbounded');
    try {
      await watch.waitForEvents(1);
      const started = Date.now();
      // 200 Envoys ACK one after another: 200 decisions, each with a new count in its message.
      for (let programmed = 0; programmed < 200; programmed++) {
        await putDecision(world, widgetRef('bounded'), 1, {
          ...decisions.pending4of5,
          programmed,
          total: 200,
          blockersOmitted: 199 - programmed,
          evaluatedRev: programmed + 10,
        });
      }
      await putDecision(world, widgetRef('bounded'), 1, { ...decisions.programmed, programmed: 200, total: 200, evaluatedRev: 500 });
      await delivery.idle();
      const object = await getWidget(world, 'bounded');
      expect(ourCondition(object)).toMatchObject({ status: 'True', message: '200/200 Envoys programmed at generation 1' });
      // ADDED, then Pending once and True once: two status writes, plus at most one message refresh
      // per STATUS_MESSAGE_REFRESH_MS the 200 decisions took (none on an idle machine; a loaded one
      // can take longer than the interval), never one per decision.
      await watch.waitForEvents(3);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const elapsed = Date.now() - started;
      const types = watch.events.map((event) => event.type);
      expect(types.slice(0, 3)).toEqual(['ADDED', 'MODIFIED', 'MODIFIED']);
      expect(types.length - 1).toBeLessThanOrEqual(2 + Math.floor(elapsed / DEFAULT_MESSAGE_REFRESH_MS));
      const conditions = watch.events.slice(1).map((event) => ourCondition(event.object as unknown as WidgetObject));
      expect(conditions[0]).toMatchObject({ status: 'False', reason: 'Pending' });
      expect(conditions[conditions.length - 1]).toMatchObject({ status: 'True' });
    } finally {
      watch.close();
      await watch.ended;
    }
  });

  it('re-learns what Kubernetes holds when the record of the written condition is lost, without writing', async () => {
    await createWidget(world, 'forgetful');
    await putDecision(world, widgetRef('forgetful'), 1, decisions.rejected);
    await delivery.idle();
    const written = await getWidget(world, 'forgetful');
    await world.table.rawItems.removeAttributes(objectGenerationKey(widgetRef('forgetful'), 1), ['lastCondition']);
    await delivery.idle();
    const item = await world.store.getObjectGeneration(widgetRef('forgetful'), 1);
    expect(item.status === 'found' && item.value.lastCondition).toMatchObject({ status: 'False', reason: 'Rejected' });
    expect((await getWidget(world, 'forgetful'))?.metadata.resourceVersion).toBe(written?.metadata.resourceVersion);
  });

  it('keeps conditions written by others', async () => {
    await createWidget(world, 'shared');
    const foreign = { type: 'Valid', status: 'True', reason: 'Valid', message: 'Valid HTTPProxy', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 };
    expect(await patchWidgetStatus(world, 'shared', { conditions: [foreign] })).toBe(200);
    await putDecision(world, widgetRef('shared'), 1, decisions.rejected);
    await delivery.idle();
    const object = await getWidget(world, 'shared');
    expect(object?.status?.conditions).toHaveLength(2);
    expect(object?.status?.conditions?.[0]).toEqual(foreign);
    expect(ourCondition(object)).toMatchObject({ status: 'False', reason: 'Rejected' });
  });

  it('skips a decision for a generation the object has moved past', async () => {
    await createWidget(world, 'moved', 1);
    const bumped = await fetch(`${world.kube.server.url}/apis/example.com/v1/namespaces/default/widgets/moved`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { size: 2 } }),
    });
    expect(((await bumped.json()) as WidgetObject).metadata.generation).toBe(2);
    await putDecision(world, widgetRef('moved'), 1, decisions.programmed);
    await delivery.idle();
    expect(ourCondition(await getWidget(world, 'moved'))).toBeUndefined();
    // The decision for generation 2 is written.
    await putDecision(world, widgetRef('moved'), 2, decisions.programmed);
    await delivery.idle();
    expect(ourCondition(await getWidget(world, 'moved'))).toMatchObject({ status: 'True', observedGeneration: 2 });
  });

  it('marks the items of a deleted object for expiry and keeps going', async () => {
    await putDecision(world, widgetRef('gone'), 1, decisions.programmed);
    await putDecision(world, widgetRef('gone'), 2, decisions.programmed);
    await delivery.idle();
    const items = await world.table.rawItems.queryPartition('OBJECT#example.com/Widget/default/gone');
    expect(items).toHaveLength(2);
    for (const generation of items) expect(typeof generation['ttl']).toBe('number');
    expect(invocations.every((response) => (response.batchItemFailures ?? []).length === 0)).toBe(true);
  });

  it('counts the blockers convergence did not store ("and N more")', async () => {
    await createWidget(world, 'crowd');
    await putDecision(world, widgetRef('crowd'), 1, decisions.manyBlocked);
    await delivery.idle();
    const condition = ourCondition(await getWidget(world, 'crowd'));
    expect(condition).toMatchObject({ status: 'False', reason: 'Pending' });
    // 5 named of 20 stored, plus 10 not stored: 25 more.
    expect(String(condition?.['message'])).toMatch(/^10\/40 Envoys programmed at generation 1; waiting for envoy-00 \(RDS\), .*envoy-04 \(RDS\); and 25 more$/);
  });

  it('ignores an invalid or superseded decision without failing the batch', async () => {
    await createWidget(world, 'garbled');
    await putDecision(world, widgetRef('garbled'), 1, decisions.invalid);
    await createWidget(world, 'superseded');
    await putDecision(world, widgetRef('superseded'), 1, decisions.superseded);
    await delivery.idle();
    expect(ourCondition(await getWidget(world, 'superseded'))).toBeUndefined();
    await putDecision(world, widgetRef('ready'), 1, decisions.programmed);
    await delivery.idle();
    expect(ourCondition(await getWidget(world, 'garbled'))).toBeUndefined();
    expect(invocations.every((response) => (response.batchItemFailures ?? []).length === 0)).toBe(true);
  });
});

describe('status function with a domain-prefixed condition type', () => {
  let world: StatusWorld;
  let delivery: StreamDelivery;

  beforeAll(async () => {
    world = await startStatusWorld();
    const handler = createStatusHandler({ env: { ...world.env, CONDITION_TYPE: 'xds-programmed.dev/EnvoyProgrammed' }, logger: silentLogger });
    delivery = deliver(world, handler);
  });
  afterAll(async () => {
    await delivery.stop();
    await world.close();
  });

  it('kubectl wait accepts --for=condition=xds-programmed.dev/EnvoyProgrammed', async () => {
    await createWidget(world, 'prefixed');
    await putDecision(world, widgetRef('prefixed'), 1, decisions.programmed);
    await delivery.idle();
    expect(ourCondition(await getWidget(world, 'prefixed'), 'xds-programmed.dev/EnvoyProgrammed')).toMatchObject({ status: 'True' });
    const waited = await kubectl(world.kube, ['wait', '--for=condition=xds-programmed.dev/EnvoyProgrammed', 'widgets.example.com/prefixed', '-n', 'default', '--timeout=20s']);
    expect(waited.stderr).toBe('');
    expect(waited.code).toBe(0);
    // The unprefixed type is a different condition: waiting for it times out.
    const other = await kubectl(world.kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/prefixed', '-n', 'default', '--timeout=1s']);
    expect(other.code).not.toBe(0);
  });
});
