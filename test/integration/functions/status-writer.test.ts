// The status writer against the local API server under contention and failure: 409 storms from a
// competing writer, API server 5xx (retry, then fail the records), kinds that cannot hold our
// condition, and the pure mutator's rules.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { marshall } from '@aws-sdk/util-dynamodb';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import fc from 'fast-check';

import { type ConditionDraft } from '../../../common/core';
import { toObjectGenerationItem } from '../../../common/store';
import { planConditionWrite } from '../../../common/core/status-update';
import { createKubeAccess, type KubeAccess, type KubeClients } from '../../../functions/kube/access';
import { StatusWriteError, StatusWriter } from '../../../functions/kube/status-writer';
import { TrackedKinds } from '../../../functions/kube/tracked-kinds';
import { processStatusBatch } from '../../../functions/status/process';
import { createStatusHandler } from '../../../functions/status';
import { request, startTestServer, WIDGET_CRD, type TestServer } from '../kube/helpers';
import { createWidget, decisions, getWidget, patchWidgetStatus, silentLogger, WIDGET_KIND, widgetRef, type StatusWorld, type WidgetObject } from './status-support';

const programmed: ConditionDraft = { type: 'EnvoyProgrammed', status: 'True', observedGeneration: 1, reason: 'Programmed', message: '5/5 Envoys programmed at generation 1' };
const noSleep = async (): Promise<void> => undefined;

/** A Contour-like writer of its own condition: read, set `Valid`, write with resourceVersion, retry on 409. */
async function competingWrite(kube: TestServer, name: string, message: string): Promise<void> {
  for (;;) {
    const object = (await request(kube, 'GET', `/apis/example.com/v1/namespaces/default/widgets/${name}`)).body as WidgetObject;
    const others = (object.status?.conditions ?? []).filter((c) => c['type'] !== 'Valid');
    const valid = { type: 'Valid', status: 'True', reason: 'Valid', message, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    const status = await patchWidgetStatus({ kube } as StatusWorld, name, { conditions: [...others, valid] }, object.metadata.resourceVersion);
    if (status === 200) return;
    if (status !== 409) throw new Error(`competitor got ${status}`);
  }
}

describe('status writer', () => {
  let kube: TestServer;
  let access: KubeAccess;
  const world = (): StatusWorld => ({ kube } as StatusWorld);

  beforeAll(async () => {
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    access = createKubeAccess({ source: 'kubeconfigFile', path: kube.kubeconfig });
  });
  afterAll(async () => {
    await kube.cleanup();
  });

  it('re-reads and retries on 409 when another writer changes the object between our read and our write', async () => {
    await createWidget(world(), 'storm');
    const interferences = 5;
    let reads = 0;
    // After each of our first five reads, the competitor writes: our patch then carries a stale
    // resourceVersion and the API server answers 409.
    const interfering: KubeAccess = {
      clients: async (): Promise<KubeClients> => {
        const real = await access.clients();
        const customObjects = Object.create(real.customObjects) as CustomObjectsApi;
        customObjects.getNamespacedCustomObject = async (...args: Parameters<CustomObjectsApi['getNamespacedCustomObject']>) => {
          const object: unknown = await real.customObjects.getNamespacedCustomObject(...args);
          if (reads++ < interferences) await competingWrite(kube, 'storm', `competitor write ${reads}`);
          return object;
        };
        return { ...real, customObjects };
      },
    };
    const writer = new StatusWriter({ access: interfering, kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger, sleep: noSleep });
    const outcome = await writer.write(widgetRef('storm'), programmed);
    expect(outcome).toMatchObject({ outcome: 'written', conflicts: interferences });
    const object = await getWidget(world(), 'storm');
    const types = object?.status?.conditions?.map((c) => c['type']);
    expect(types).toEqual(['Valid', 'EnvoyProgrammed']);
    expect(object?.status?.conditions?.[0]?.['message']).toBe(`competitor write ${interferences}`);
  });

  it('gives up with a retryable error when conflicts never stop', async () => {
    await createWidget(world(), 'endless');
    let reads = 0;
    const interfering: KubeAccess = {
      clients: async (): Promise<KubeClients> => {
        const real = await access.clients();
        const customObjects = Object.create(real.customObjects) as CustomObjectsApi;
        customObjects.getNamespacedCustomObject = async (...args: Parameters<CustomObjectsApi['getNamespacedCustomObject']>) => {
          const object: unknown = await real.customObjects.getNamespacedCustomObject(...args);
          await competingWrite(kube, 'endless', `write ${reads++}`);
          return object;
        };
        return { ...real, customObjects };
      },
    };
    const writer = new StatusWriter({ access: interfering, kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger, sleep: noSleep, maxConflictRetries: 3 });
    await expect(writer.write(widgetRef('endless'), programmed)).rejects.toMatchObject({ name: 'StatusWriteError', retryable: true });
    expect(reads).toBe(4);
    expect((await getWidget(world(), 'endless'))?.status?.conditions?.map((c) => c['type'])).toEqual(['Valid']);
  });

  it('keeps both writers\' conditions when they race for real', async () => {
    await createWidget(world(), 'race');
    const writer = new StatusWriter({ access, kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger });
    const ours = (async () => {
      const outcomes = [];
      for (const [status, reason] of [['False', 'Pending'], ['False', 'Rejected'], ['True', 'Programmed']] as const) {
        outcomes.push(await writer.write(widgetRef('race'), { ...programmed, status, reason }));
      }
      return outcomes;
    })();
    const theirs = (async () => {
      for (let i = 0; i < 20; i++) await competingWrite(kube, 'race', `competitor ${i}`);
    })();
    const [outcomes] = await Promise.all([ours, theirs]);
    expect(outcomes.map((o) => o.outcome)).toEqual(['written', 'written', 'written']);
    const conditions = (await getWidget(world(), 'race'))?.status?.conditions ?? [];
    expect(conditions.find((c) => c['type'] === 'Valid')?.['message']).toBe('competitor 19');
    expect(conditions.find((c) => c['type'] === 'EnvoyProgrammed')).toMatchObject({ status: 'True', reason: 'Programmed' });
  });

  it('refuses kinds whose CRD cannot hold status.conditions, and says so once', async () => {
    const noConditions = structuredClone(WIDGET_CRD) as typeof WIDGET_CRD & { metadata: { name: string } };
    noConditions.metadata.name = 'gadgets.example.com';
    noConditions.spec.names = { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', shortNames: ['gd'] };
    const version = noConditions.spec.versions[0] as { schema: { openAPIV3Schema: { properties: Record<string, unknown> } } };
    version.schema.openAPIV3Schema.properties['status'] = { type: 'object', properties: { phase: { type: 'string' } } };
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', noConditions)).status).toBe(201);
    const gadget = { group: 'example.com', version: 'v1', kind: 'Gadget', plural: 'gadgets', namespaced: true };
    const writer = new StatusWriter({ access, kinds: new TrackedKinds([WIDGET_KIND, gadget]), logger: silentLogger });
    const support = await writer.checkKinds();
    expect(support.get('widgets.example.com')).toEqual({ supported: true, verified: true });
    expect(support.get('gadgets.example.com')).toMatchObject({ supported: false, detail: expect.stringContaining('no status.conditions') });
    const outcome = await writer.write({ group: 'example.com', kind: 'Gadget', namespace: 'default', name: 'g1' }, programmed);
    expect(outcome).toMatchObject({ outcome: 'unsupported' });
    expect(await writer.write({ group: 'other.io', kind: 'Thing', namespace: 'default', name: 't' }, programmed)).toMatchObject({ outcome: 'unsupported' });
  });
});

describe('status writer against a failing API server', () => {
  let server: Server;
  let requests = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      requests++;
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 503, reason: 'ServiceUnavailable', message: 'etcd is unhappy' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('retries 5xx, then fails exactly the records of that object (batchItemFailures)', async () => {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'x' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    const clients = { customObjects: config.makeApiClient(CustomObjectsApi), apiextensions: config.makeApiClient((await import('@kubernetes/client-node')).ApiextensionsV1Api) };
    const writer = new StatusWriter({ access: { clients: async () => clients }, kinds: new TrackedKinds([WIDGET_KIND]), logger: silentLogger, sleep: noSleep, maxServerErrorAttempts: 3 });
    await expect(writer.checkKinds()).rejects.toBeInstanceOf(StatusWriteError);
    expect(requests).toBe(3);
    requests = 0;
    const item = (name: string, decision: unknown): Record<string, unknown> => ({
      ...toObjectGenerationItem({ object: widgetRef(name), generation: 1, watermarks: {}, firstSeenAt: 1 }),
      decision,
    });
    const record = (sequenceNumber: string, image: Record<string, unknown>) => ({
      eventName: 'MODIFY' as const,
      dynamodb: { SequenceNumber: sequenceNumber, Keys: marshall({ pk: image['pk'], sk: image['sk'] }), NewImage: marshall(image, { removeUndefinedValues: true }) },
    });
    const event = {
      Records: [
        record('100', item('a', decisions.programmed)),
        record('101', { pk: 'ENVOY#x', sk: 'STATE' }),
        record('102', item('a', decisions.rejected)),
        record('103', item('b', undefined)),
      ],
    } as unknown as DynamoDBStreamEvent;
    let recorded = 0;
    const { response, results } = await processStatusBatch(event, {
      writer,
      store: { recordCondition: async () => { recorded++; } },
      cleanup: { markDeleted: async () => 0 },
      logger: silentLogger,
      conditionType: 'EnvoyProgrammed',
      writeOnMessageChange: false,
      now: () => 1,
    });
    // Object a: 3 attempts at reading its CRD (503), then its two records fail; b has no decision.
    expect(requests).toBe(3);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['100', '102']);
    expect(results.find((r) => r.object.endsWith('/a'))).toMatchObject({ result: 'failed' });
    expect(results.find((r) => r.object.endsWith('/b'))).toMatchObject({ result: 'noDecision' });
    expect(recorded).toBe(0);
  });
});

describe('planConditionWrite (pure)', () => {
  const now = Date.parse('2026-02-01T00:00:00Z');
  const foreign = { type: 'Valid', status: 'True', weird: ['kept', 'as', 'is'] };

  it('appends ours, keeping foreign entries exactly', () => {
    const plan = planConditionWrite({ generation: 1, conditions: [foreign] }, programmed, now);
    expect(plan).toMatchObject({ action: 'write' });
    expect(plan.action === 'write' && plan.conditions[0]).toBe(foreign);
    expect(plan.action === 'write' && plan.condition.lastTransitionTime).toBe('2026-02-01T00:00:00.000Z');
  });

  it('skips stale and no-op decisions', () => {
    const stored = { ...programmed, lastTransitionTime: '2026-01-01T00:00:00Z' };
    expect(planConditionWrite({ generation: 2, conditions: [] }, programmed, now)).toMatchObject({ action: 'skip', reason: 'objectNewer' });
    expect(planConditionWrite({ generation: 1, conditions: [] }, { ...programmed, observedGeneration: 2 }, now)).toMatchObject({ action: 'skip', reason: 'decisionAhead' });
    expect(planConditionWrite({ generation: 3, conditions: [{ ...stored, observedGeneration: 4 }] }, { ...programmed, observedGeneration: 3 }, now)).toMatchObject({ action: 'skip', reason: 'storedNewer' });
    expect(planConditionWrite({ generation: 1, conditions: [stored] }, { ...programmed, message: 'other words' }, now)).toMatchObject({ action: 'skip', reason: 'unchanged' });
    expect(planConditionWrite({ generation: 1, conditions: [stored] }, { ...programmed, message: 'other words' }, now, { writeOnMessageChange: true })).toMatchObject({ action: 'write' });
  });

  it('keeps lastTransitionTime unless the status flips', () => {
    const stored = { ...programmed, status: 'False', reason: 'Pending', lastTransitionTime: '2026-01-01T00:00:00Z' };
    const sameStatus = planConditionWrite({ generation: 1, conditions: [stored] }, { ...programmed, status: 'False', reason: 'Rejected' }, now);
    expect(sameStatus.action === 'write' && sameStatus.condition.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    const flipped = planConditionWrite({ generation: 1, conditions: [stored] }, programmed, now);
    expect(flipped.action === 'write' && flipped.condition.lastTransitionTime).toBe('2026-02-01T00:00:00.000Z');
  });

  it('property: foreign entries survive in order, ours appears once, lastTransitionTime moves only on a flip', () => {
    const status = fc.constantFrom('True', 'False', 'Unknown');
    const foreignCondition = fc.record({ type: fc.constantFrom('Valid', 'Ready', 'Accepted', 'x.io/Other'), status, extra: fc.anything() });
    fc.assert(
      fc.property(
        fc.array(foreignCondition, { maxLength: 5 }),
        fc.option(fc.record({ status, generation: fc.integer({ min: 1, max: 5 }) }), { nil: undefined }),
        fc.integer({ min: 0, max: 5 }),
        status,
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        (foreign, ours, position, nextStatus, draftGeneration, objectGeneration) => {
          const stored = ours === undefined ? undefined : { ...programmed, status: ours.status, observedGeneration: ours.generation, lastTransitionTime: '2026-01-01T00:00:00Z' };
          const conditions: Record<string, unknown>[] = [...foreign];
          if (stored !== undefined) conditions.splice(Math.min(position, conditions.length), 0, stored);
          const draft = { ...programmed, status: nextStatus as 'True', reason: nextStatus === 'True' ? 'Programmed' : 'Pending', observedGeneration: draftGeneration };
          const plan = planConditionWrite({ generation: objectGeneration, conditions }, draft, now);
          if (plan.action === 'skip') {
            // Only for the documented reasons.
            if (plan.reason === 'objectNewer') return objectGeneration > draftGeneration;
            if (plan.reason === 'decisionAhead') return objectGeneration < draftGeneration;
            if (plan.reason === 'storedNewer') return stored !== undefined && stored.observedGeneration > draftGeneration;
            return stored !== undefined && stored.status === draft.status && stored.reason === draft.reason && stored.observedGeneration === draft.observedGeneration;
          }
          const others = plan.conditions.filter((c) => c['type'] !== 'EnvoyProgrammed');
          const ourEntries = plan.conditions.filter((c) => c['type'] === 'EnvoyProgrammed');
          const flipped = stored === undefined || stored.status !== draft.status;
          return (
            objectGeneration === draftGeneration &&
            others.length === foreign.length &&
            others.every((c, i) => c === foreign[i]) &&
            ourEntries.length === 1 &&
            ourEntries[0]?.['lastTransitionTime'] === (flipped ? '2026-02-01T00:00:00.000Z' : '2026-01-01T00:00:00Z')
          );
        },
      ),
      { numRuns: 500, seed: 42 },
    );
  });

  it('replaces a malformed entry of our type and tolerates a non-list', () => {
    const plan = planConditionWrite({ generation: 1, conditions: [{ type: 'EnvoyProgrammed', status: 'Maybe' }, foreign] }, programmed, now);
    expect(plan.action === 'write' && plan.conditions.map((c) => c['type'])).toEqual(['EnvoyProgrammed', 'Valid']);
    expect(planConditionWrite({ generation: 1, conditions: 'garbage' }, programmed, now)).toMatchObject({ action: 'write', conditions: [expect.objectContaining({ type: 'EnvoyProgrammed' })] });
  });
});

describe('status handler configuration', () => {
  const kubeconfig = [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: c, cluster: {server: "http://127.0.0.1:9", insecure-skip-tls-verify: true}}]',
    'users: [{name: u, user: {token: t}}]',
    'contexts: [{name: x, context: {cluster: c, user: u}}]',
    'current-context: x',
  ].join('\n');
  const base = { TABLE_NAME: 'xds-programmed-test', AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', KUBECONFIG_YAML: kubeconfig };
  const kinds = JSON.stringify([WIDGET_KIND]);

  it('names the bad setting', () => {
    expect(() => createStatusHandler({ env: { ...base }, logger: silentLogger })).toThrow(/TRACKED_KINDS is not set/);
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: '[{' }, logger: silentLogger })).toThrow(/TRACKED_KINDS is not JSON/);
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: '[{"group":"example.com","version":"1","kind":"Widget","plural":"widgets"}]' }, logger: silentLogger })).toThrow(/0\.version: versions look like v1/);
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: kinds, CONDITION_TYPE: 'has spaces' }, logger: silentLogger })).toThrow(/condition type/);
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: kinds, KUBECONFIG_YAML: '' }, logger: silentLogger })).toThrow(/exactly one of/);
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: kinds, KUBECONFIG_YAML: 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n' }, logger: silentLogger })).toThrow(
      /kubeconfig from KUBECONFIG_YAML has no current context with a cluster/,
    );
    expect(() => createStatusHandler({ env: { ...base, TRACKED_KINDS: kinds, KUBECONFIG_YAML: undefined, KUBECONFIG_PATH: '/nonexistent/kubeconfig' }, logger: silentLogger })).toThrow(
      /cannot load the kubeconfig from KUBECONFIG_PATH \/nonexistent\/kubeconfig/,
    );
  });

  it('accepts a domain-prefixed condition type and treats blank serverless params as unset', () => {
    expect(typeof createStatusHandler({ env: { ...base, TRACKED_KINDS: kinds, CONDITION_TYPE: 'xds-programmed.dev/EnvoyProgrammed', EKS_CLUSTER_NAME: '', EKS_CLUSTER_CA: '' }, logger: silentLogger })).toBe('function');
  });
});
