// Fuzzing the status writer with odd `status` shapes on real objects of the local Kubernetes API
// server: status missing, null, a list, a string; conditions missing, null, not a list, a list with
// non-objects, entries of our type with missing or wrong fields, foreign conditions with missing
// fields or huge messages, foreign status fields. The kind's schema preserves unknown fields, so the
// API server stores whatever another controller put there. Rules checked:
//   - never a throw; the outcome is `written`, `skipped` or a clear `unsupported`;
//   - where status is an object and conditions a list of objects (or absent): our condition is there
//     exactly once, as drafted, and everything else in status is kept as it was, byte for byte;
//   - otherwise (no way to add our condition without destroying someone else's data): `unsupported`
//     naming the problem, and the object is not touched.
// FUZZ_RUNS raises the number of runs (default 200).
import fc from 'fast-check';
import pino from 'pino';

import type { ConditionDraft } from '../../common/core';
import { createKubeAccess, kubeAccessConfigFromEnv } from '../../functions/kube/access';
import { StatusWriter } from '../../functions/kube/status-writer';
import { TrackedKinds } from '../../functions/kube/tracked-kinds';
import { request, startTestServer, type TestServer } from '../integration/kube/helpers';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 200);
const TYPE = 'EnvoyProgrammed';
const GADGET_KIND = { group: 'example.com', version: 'v1', kind: 'Gadget', plural: 'gadgets', namespaced: true };
const BASE = '/apis/example.com/v1/namespaces/default/gadgets';

const GADGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
    scope: 'Namespaced',
    versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const HUGE = 'm'.repeat(100_000);
const foreignConditionArb: fc.Arbitrary<Json> = fc.record(
  {
    type: fc.oneof(fc.constantFrom('Valid', 'Ready', 'Accepted', 'projectcontour.io/Valid', 'envoyprogrammed', `${TYPE} `), fc.string({ maxLength: 12 }).filter((t) => t !== TYPE)),
    status: fc.constantFrom('True', 'False', 'Unknown', 'maybe'),
    reason: fc.string({ maxLength: 10 }),
    message: fc.oneof(fc.string({ maxLength: 30 }), fc.constant(HUGE)),
    observedGeneration: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constant('1')),
    lastTransitionTime: fc.constantFrom('2026-01-01T00:00:00Z', 'yesterday'),
    extra: fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>,
  },
  { requiredKeys: ['type'] },
);
const ourOddConditionArb: fc.Arbitrary<Json> = fc.record(
  {
    type: fc.constant(TYPE),
    status: fc.constantFrom('True', 'False', 'Unknown', 'yes', 1),
    reason: fc.constantFrom('Programmed', 'Pending', '', 7),
    message: fc.oneof(fc.string({ maxLength: 20 }), fc.constant(HUGE)),
    observedGeneration: fc.constantFrom(1, 0, -3, '1', null),
    lastTransitionTime: fc.constantFrom('2026-01-01T00:00:00Z', 'not a time', 5),
  },
  { requiredKeys: ['type'] },
);
const entryArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: foreignConditionArb },
  { weight: 2, arbitrary: ourOddConditionArb },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, 3, 'Ready', [], [{ type: TYPE }], {}) },
);
const conditionsArb: fc.Arbitrary<Json | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, 'Ready', 5, { type: TYPE }, { Ready: { status: 'True' } }) },
  { weight: 6, arbitrary: fc.array(entryArb, { maxLength: 5 }) },
);
const statusArb: fc.Arbitrary<Json | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, [], ['Ready'], 'ok', 0, true) },
  {
    weight: 8,
    arbitrary: fc.record(
      { conditions: conditionsArb, loadBalancer: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>, currentStatus: fc.constantFrom('valid', 'invalid'), observedGeneration: fc.integer({ min: 0, max: 3 }) },
      { requiredKeys: [] },
    ).map((status) => Object.fromEntries(Object.entries(status).filter(([, v]) => v !== undefined)) as Json),
  },
);

interface Gadget {
  metadata: { name: string; resourceVersion: string; generation: number };
  status?: unknown;
}

describe('status writer on odd status shapes (local API server)', () => {
  let server: TestServer;
  let writer: StatusWriter;
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer();
    const created = await request(server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', GADGET_CRD);
    if (created.status !== 201) throw new Error(`CRD not created: ${JSON.stringify(created.body)}`);
    writer = new StatusWriter({
      access: createKubeAccess(kubeAccessConfigFromEnv({ KUBECONFIG_PATH: server.kubeconfig })),
      kinds: new TrackedKinds([GADGET_KIND]),
      logger: pino({ level: 'silent' }),
      now: () => 1_795_000_000_000,
      maxServerErrorAttempts: 1,
    });
  });
  afterAll(async () => {
    await server.cleanup();
  });

  /** A gadget whose status is exactly `status` (set with a PUT of the status subresource). */
  async function gadgetWithStatus(status: Json | undefined): Promise<Gadget> {
    const name = `g-${counter++}`;
    const created = await request(server, 'POST', BASE, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name, namespace: 'default' }, spec: { size: 1 } });
    if (created.status !== 201) throw new Error(`gadget not created: ${JSON.stringify(created.body)}`);
    const object = created.body as Gadget & Record<string, unknown>;
    const { status: _dropped, ...rest } = object;
    const put = await request(server, 'PUT', `${BASE}/${name}/status`, status === undefined ? rest : { ...rest, status });
    if (put.status !== 200) throw new Error(`status not set: ${put.status} ${JSON.stringify(put.body).slice(0, 300)}`);
    return put.body as Gadget;
  }

  async function read(name: string): Promise<Gadget> {
    return (await request(server, 'GET', `${BASE}/${name}`)).body as Gadget;
  }

  const draft = (status: 'True' | 'False', message: string): ConditionDraft => ({ type: TYPE, status, reason: status === 'True' ? 'Programmed' : 'Pending', message, observedGeneration: 1 });

  it('writes our condition where the shape allows, keeps every foreign byte, and refuses clearly otherwise', async () => {
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(statusArb, fc.constantFrom<'True' | 'False'>('True', 'False'), fc.oneof(fc.string({ maxLength: 40 }), fc.constant(HUGE)), async (status, conditionStatus, message) => {
        const before = await gadgetWithStatus(status);
        const stored = before.status;
        const outcome = await writer.write({ group: 'example.com', kind: 'Gadget', namespace: 'default', name: before.metadata.name }, draft(conditionStatus, message.slice(0, 32768)));
        outcomes.set(outcome.outcome, (outcomes.get(outcome.outcome) ?? 0) + 1);
        const after = await read(before.metadata.name);
        const conditions = isPlainObject(stored) ? stored['conditions'] : undefined;
        const writable = (stored === undefined || stored === null || isPlainObject(stored))
          && (conditions === undefined || conditions === null || (Array.isArray(conditions) && conditions.every(isPlainObject)));
        if (!writable) {
          expect(outcome).toMatchObject({ outcome: 'unsupported', detail: expect.stringMatching(/status/) });
          expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
          expect(after.status).toEqual(stored);
          return;
        }
        expect(['written', 'skipped']).toContain(outcome.outcome);
        const afterStatus = (after.status ?? {}) as Record<string, unknown>;
        const beforeStatus = (isPlainObject(stored) ? stored : {}) as Record<string, unknown>;
        // Everything but the conditions list is untouched.
        const { conditions: _a, ...afterRest } = afterStatus;
        const { conditions: _b, ...beforeRest } = beforeStatus;
        expect(afterRest).toEqual(beforeRest);
        const beforeList = (Array.isArray(conditions) ? conditions : []) as Record<string, unknown>[];
        const afterList = (Array.isArray(afterStatus['conditions']) ? afterStatus['conditions'] : []) as Record<string, unknown>[];
        // Foreign conditions: all kept, in order, unchanged.
        expect(afterList.filter((c) => c['type'] !== TYPE)).toEqual(beforeList.filter((c) => c['type'] !== TYPE));
        if (outcome.outcome === 'written') {
          const ours = afterList.filter((c) => c['type'] === TYPE);
          expect(ours).toHaveLength(1);
          expect(ours[0]).toMatchObject({ status: conditionStatus, observedGeneration: 1, message: message.slice(0, 32768) });
        } else {
          expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
        }
      }),
      { numRuns: RUNS },
    );
    // The generator reaches each outcome.
    for (const outcome of ['written', 'unsupported']) expect(outcomes.get(outcome) ?? 0).toBeGreaterThan(0);
  }, 180_000);

  it('refuses a status that is a list, and conditions that are a map, naming the problem (regression)', async () => {
    for (const [status, pattern] of [[['Ready'], /status is not an object/], [{ conditions: { Ready: { status: 'True' } } }, /status\.conditions is not a list/], [{ conditions: [null, { type: 'Valid', status: 'True' }] }, /status\.conditions\[0\] is not an object/]] as const) {
      const before = await gadgetWithStatus(status as Json);
      const outcome = await writer.write({ group: 'example.com', kind: 'Gadget', namespace: 'default', name: before.metadata.name }, draft('True', 'all programmed'));
      expect(outcome).toMatchObject({ outcome: 'unsupported', detail: expect.stringMatching(pattern) });
      expect((await read(before.metadata.name)).status).toEqual(status);
    }
  });

  it('leaves exactly one condition of our type when another writer left duplicates (regression)', async () => {
    const before = await gadgetWithStatus({ conditions: [{ type: 'Valid', status: 'True' }, { type: TYPE }, { type: TYPE, status: 'True', reason: 'Stale' }] });
    const outcome = await writer.write({ group: 'example.com', kind: 'Gadget', namespace: 'default', name: before.metadata.name }, draft('False', '1/2 Envoys'));
    expect(outcome.outcome).toBe('written');
    const conditions = ((await read(before.metadata.name)).status as { conditions: Record<string, unknown>[] }).conditions;
    expect(conditions.map((c) => c['type'])).toEqual(['Valid', TYPE]);
    expect(conditions[1]).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
  });
});
