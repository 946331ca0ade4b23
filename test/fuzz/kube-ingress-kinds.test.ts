// Fuzzing the built-in kinds the local Kubernetes API server serves for Contour
// (`startKubeApiServer({ ingressControllerKinds: true })`, docs/CONTOUR.md "What the local API server
// gained for it"): Services (+ status), EndpointSlices, Secrets, Ingresses (+ status), ConfigMaps,
// Events, Namespaces and Leases. Each run is a short sequence of create / update / patch / status /
// delete requests on a small pool of names (so creates collide, updates miss, resourceVersions go
// stale), each with at most one fault: a wrong content type, malformed JSON, a body that is not an
// object, another kind, missing metadata, a bad name, a resourceVersion on create, a stale
// resourceVersion, an unknown field under fieldValidation Strict / Warn / Ignore, a known field of
// the wrong type, a huge annotation or data map, a body over the server's limit, a kind-specific
// invalid value, and protobuf bodies (valid, truncated, without the magic, of another kind, with an
// unknown field, of a kind that is not decoded). Rules checked on every request:
//   - never a 5xx or a dropped connection;
//   - every refusal is a `Status` whose code is the HTTP status, with the reason of that code;
//   - the code is the one kube-apiserver answers for that fault (decode errors 400 before
//     validation 422 before existence 404/409; 413 for the body size; 415 for the media type);
//   - an accepted write reads back exactly as the server answered it, keeps the labels and the
//     kind's own fields as sent, and carries a resourceVersion above every earlier one (a write
//     that changes nothing keeps its resourceVersion and is not an event);
//   - metadata.generation exists only on Ingresses and EndpointSlices, starts at 1 and rises by one
//     exactly when the spec (an EndpointSlice: anything outside metadata) changed;
//   - a watch per kind opened (with @kubernetes/client-node) before the runs sees every accepted
//     change, in order, with its resourceVersion, and nothing else;
//   - the server keeps serving: a plain GET (client-node) works after every run.
// FUZZ_RUNS raises the number of runs (default 120); FUZZ_SEED replays one.
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import fc from 'fast-check';
import * as protobuf from 'protobufjs';
import { startTestServer, type TestServer } from '../integration/kube/helpers';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 120);
const SEED = process.env['FUZZ_SEED'] === undefined ? {} : { seed: Number(process.env['FUZZ_SEED']) };
const NS = 'fz';
const MAX_BODY_BYTES = 3 * 1024 * 1024;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };
const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
const clone = <T extends Json>(value: T): T => structuredClone(value);
const b64 = (text: string): string => Buffer.from(text).toString('base64');

// ---------------------------------------------------------------- the kinds

interface KindSpec {
  kind: string;
  group: string;
  plural: string;
  namespaced: boolean;
  status: boolean;
  /** metadata.generation is kept (Ingress: follows spec; EndpointSlice: anything outside metadata). */
  generation: 'spec' | 'allButMetadata' | undefined;
  /** application/strategic-merge-patch+json accepted (no merge-key lists). */
  strategic: boolean;
  /** Protobuf request bodies decoded (infra/local/kube/protobuf.ts). */
  protobuf: boolean;
  /** The object's fields besides apiVersion/kind/metadata, from a variant number. */
  body(variant: number): Obj;
  /** Fields that must read back exactly as sent (dotted paths from the root). */
  kept: string[];
  /** A known field with a value of the wrong JSON type (kube-apiserver: 400, it cannot decode it). */
  wrongType: [path: string, value: Json];
  /** A value kube-apiserver's validation refuses (422). */
  invalid(object: Obj): void;
  /** A status the /status subresource accepts. */
  statusBody?(variant: number): Obj;
}

const KINDS: KindSpec[] = [
  {
    kind: 'Service', group: '', plural: 'services', namespaced: true, status: true, generation: undefined, strategic: false, protobuf: false,
    body: (v) => ({ spec: { type: v % 3 === 0 ? 'NodePort' : 'ClusterIP', ports: [{ name: 'http', port: 80 + (v % 5), targetPort: 8080 }], selector: { app: `app-${v % 4}` } } }),
    kept: ['spec.selector', 'spec.type'],
    wrongType: ['spec.ports', '80'],
    invalid: (o) => { (o['spec'] as Obj)['ports'] = [{ name: 'http', port: 70000 }]; },
    statusBody: (v) => ({ loadBalancer: { ingress: [{ ip: `192.0.2.${v % 200}` }] } }),
  },
  {
    kind: 'EndpointSlice', group: 'discovery.k8s.io', plural: 'endpointslices', namespaced: true, status: false, generation: 'allButMetadata', strategic: false, protobuf: false,
    body: (v) => ({ addressType: 'IPv4', endpoints: [{ addresses: [`10.0.0.${v % 250}`], conditions: { ready: v % 2 === 0 } }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] }),
    kept: ['addressType', 'endpoints'],
    wrongType: ['endpoints', { addresses: '10.0.0.1' }],
    invalid: (o) => { o['addressType'] = 'IPv5'; },
  },
  {
    kind: 'Secret', group: '', plural: 'secrets', namespaced: true, status: false, generation: undefined, strategic: false, protobuf: true,
    body: (v) => ({ type: 'Opaque', data: { key: b64(`value-${v}`) } }),
    kept: ['type', 'data'],
    wrongType: ['immutable', 'yes'],
    invalid: (o) => { o['type'] = 'kubernetes.io/tls'; o['data'] = { 'tls.crt': b64('c') }; },
  },
  {
    kind: 'Ingress', group: 'networking.k8s.io', plural: 'ingresses', namespaced: true, status: true, generation: 'spec', strategic: false, protobuf: false,
    body: (v) => ({ spec: { ingressClassName: 'contour', rules: [{ host: `h${v % 6}.example.com`, http: { paths: [{ path: `/p${v % 3}`, pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] } }),
    kept: ['spec'],
    wrongType: ['spec.rules', { host: 'a.example.com' }],
    invalid: (o) => { ((((o['spec'] as Obj)['rules'] as Obj[])[0]!['http'] as Obj)['paths'] as Obj[])[0]!['pathType'] = 'Sometimes'; },
    statusBody: (v) => ({ loadBalancer: { ingress: [{ ip: `192.0.2.${v % 200}` }] } }),
  },
  {
    kind: 'ConfigMap', group: '', plural: 'configmaps', namespaced: true, status: false, generation: undefined, strategic: false, protobuf: true,
    body: (v) => ({ data: { 'config.yaml': `n: ${v}` } }),
    kept: ['data'],
    wrongType: ['data', ['n', 1]],
    invalid: (o) => { o['data'] = { 'not a key': 'x' }; },
  },
  {
    kind: 'Event', group: '', plural: 'events', namespaced: true, status: false, generation: undefined, strategic: true, protobuf: true,
    body: (v) => ({ involvedObject: { kind: 'Service', namespace: NS, name: 'a' }, reason: `Reason${v % 4}`, message: `message ${v}`, type: 'Normal', count: 1 + (v % 3) }),
    kept: ['involvedObject', 'reason', 'message'],
    wrongType: ['count', 'many'],
    invalid: (o) => { o['involvedObject'] = { kind: 'Service', namespace: 'elsewhere', name: 'a' }; },
  },
  {
    kind: 'Namespace', group: '', plural: 'namespaces', namespaced: false, status: true, generation: undefined, strategic: true, protobuf: true,
    body: () => ({ spec: {} }),
    kept: [],
    wrongType: ['spec.finalizers', 'kubernetes'],
    invalid: (o) => { (o['metadata'] as Obj)['labels'] = { tier: '-bad-' }; },
    statusBody: () => ({ phase: 'Active' }),
  },
  {
    kind: 'Lease', group: 'coordination.k8s.io', plural: 'leases', namespaced: true, status: false, generation: undefined, strategic: true, protobuf: true,
    body: (v) => ({ spec: { holderIdentity: `holder-${v % 5}`, leaseDurationSeconds: 5 + (v % 10) } }),
    kept: ['spec.holderIdentity', 'spec.leaseDurationSeconds'],
    wrongType: ['spec.leaseDurationSeconds', '15s'],
    invalid: (o) => { (o['metadata'] as Obj)['annotations'] = { 'not a key!': 'x' }; },
  },
];

const apiVersionOf = (spec: KindSpec): string => (spec.group === '' ? 'v1' : `${spec.group}/v1`);
const prefixOf = (spec: KindSpec): string => (spec.group === '' ? '/api/v1' : `/apis/${spec.group}/v1`);
const collectionOf = (spec: KindSpec, namespace = NS): string => (spec.namespaced ? `${prefixOf(spec)}/namespaces/${namespace}/${spec.plural}` : `${prefixOf(spec)}/${spec.plural}`);
/** Names of the pool: Namespaces get their own (objects live only in `fz`, so deleting one cascades nothing). */
const nameOf = (spec: KindSpec, index: number): string => (spec.kind === 'Namespace' ? `fz-ns-${index}` : `obj-${index}`);
const keyOf = (spec: KindSpec, name: string): string => `${spec.plural}/${name}`;

function objectOf(spec: KindSpec, name: string, variant: number, labels: Record<string, string>): Obj {
  const metadata: Obj = { name, labels };
  if (spec.namespaced) metadata['namespace'] = NS;
  return { apiVersion: apiVersionOf(spec), kind: spec.kind, metadata, ...spec.body(variant) };
}

function getPath(object: Json | undefined, path: string): Json | undefined {
  let at: Json | undefined = object;
  for (const part of path.split('.')) at = isObj(at) ? at[part] : undefined;
  return at;
}

function setPath(object: Obj, path: string, value: Json): void {
  const parts = path.split('.');
  let at: Obj = object;
  for (const part of parts.slice(0, -1)) {
    if (!isObj(at[part])) at[part] = {};
    at = at[part] as Obj;
  }
  at[parts[parts.length - 1]!] = value;
}

// ---------------------------------------------------------------- protobuf bodies

const pbMessage = (build: (w: protobuf.Writer) => void): Uint8Array => {
  const writer = protobuf.Writer.create();
  build(writer);
  return writer.finish();
};
const pbBytes = (w: protobuf.Writer, field: number, value: Uint8Array | string): protobuf.Writer =>
  typeof value === 'string' ? w.uint32((field << 3) | 2).string(value) : w.uint32((field << 3) | 2).bytes(value);
const pbVarint = (w: protobuf.Writer, field: number, value: number): protobuf.Writer => w.uint32(field << 3).int64(value);
const pbEntry = (key: string, value: Uint8Array | string): Uint8Array => pbMessage((e) => pbBytes(pbBytes(e, 1, key), 2, value));

function pbObjectMeta(metadata: Obj): Uint8Array {
  return pbMessage((m) => {
    if (typeof metadata['name'] === 'string') pbBytes(m, 1, metadata['name']);
    if (typeof metadata['namespace'] === 'string') pbBytes(m, 3, metadata['namespace']);
    for (const [key, value] of Object.entries(isObj(metadata['labels']) ? metadata['labels'] : {})) pbBytes(m, 11, pbEntry(key, String(value)));
  });
}

/** The protobuf body client-go would send for `object` (the kinds with a decoder), plus `extra` bytes appended to the object's own message. */
function protobufBody(object: Obj, extra: Uint8Array = new Uint8Array()): Buffer {
  const metadata = pbObjectMeta(isObj(object['metadata']) ? object['metadata'] : {});
  const kind = String(object['kind']);
  const raw = Buffer.concat([
    pbMessage((w) => {
      pbBytes(w, 1, metadata);
      if (kind === 'ConfigMap') for (const [key, value] of Object.entries(object['data'] as Obj)) pbBytes(w, 2, pbEntry(key, String(value)));
      if (kind === 'Secret') {
        for (const [key, value] of Object.entries(object['data'] as Obj)) pbBytes(w, 2, pbEntry(key, Buffer.from(String(value), 'base64')));
        pbBytes(w, 3, String(object['type']));
      }
      if (kind === 'Lease') {
        const spec = object['spec'] as Obj;
        pbBytes(w, 2, pbMessage((s) => pbVarint(pbBytes(s, 1, String(spec['holderIdentity'])), 2, Number(spec['leaseDurationSeconds']))));
      }
      if (kind === 'Namespace') pbBytes(w, 2, new Uint8Array());
      if (kind === 'Event') {
        const involved = object['involvedObject'] as Obj;
        pbBytes(w, 2, pbMessage((r) => pbBytes(pbBytes(pbBytes(r, 1, String(involved['kind'])), 2, String(involved['namespace'])), 3, String(involved['name']))));
        pbBytes(w, 3, String(object['reason']));
        pbBytes(w, 4, String(object['message']));
        pbVarint(w, 8, Number(object['count']));
        pbBytes(w, 9, String(object['type']));
      }
    }),
    extra,
  ]);
  const typeMeta = pbMessage((t) => pbBytes(pbBytes(t, 1, String(object['apiVersion'])), 2, kind));
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), pbMessage((u) => pbBytes(pbBytes(u, 1, typeMeta), 2, raw))]);
}

// ---------------------------------------------------------------- operations

/** At most one fault per request, so the code kube-apiserver answers is known. */
type Fault =
  | 'none' | 'contentType' | 'malformed' | 'notObject' | 'otherKind' | 'unknownStrict' | 'unknownWarn' | 'unknownIgnore'
  | 'wrongType' | 'missingMetadata' | 'badName' | 'rvOnCreate' | 'staleRv' | 'noRv' | 'nameMismatch'
  | 'hugeAnnotation' | 'hugeData' | 'tooLarge' | 'invalid';
type PbFault = 'valid' | 'truncated' | 'noMagic' | 'otherKind' | 'unknownField' | 'notDecoded' | 'garbage';
type PatchKind = 'merge-labels' | 'merge-spec' | 'merge-wrongType' | 'merge-unknownStrict' | 'merge-staleRv' | 'json-test-fails' | 'json-replace-labels' | 'strategic-labels' | 'bogus-type' | 'malformed';

type Op =
  | { op: 'create'; kind: number; name: number; variant: number; fault: Fault; label: string }
  | { op: 'update'; kind: number; name: number; variant: number; fault: Fault; label: string }
  | { op: 'patch'; kind: number; name: number; variant: number; patch: PatchKind }
  | { op: 'status'; kind: number; name: number; variant: number; stale: boolean }
  | { op: 'delete'; kind: number; name: number; precondition: 'none' | 'staleRv' | 'wrongUid' }
  | { op: 'protobuf'; kind: number; name: number; variant: number; fault: PbFault; cut: number; garbage: Uint8Array };

const STATUS_KINDS = KINDS.map((k, i) => (k.status ? i : -1)).filter((i) => i >= 0);
const PROTOBUF_KINDS = KINDS.map((k, i) => (k.protobuf ? i : -1)).filter((i) => i >= 0);
const kindArb = fc.nat({ max: KINDS.length - 1 });
const nameArb = fc.nat({ max: 2 });
const variantArb = fc.nat({ max: 1000 });
const labelArb = fc.constantFrom('a', 'b', 'c-1', 'x.y_z');
const createFaultArb = fc.oneof(
  { weight: 100, arbitrary: fc.constant<Fault>('none') },
  { weight: 10, arbitrary: fc.constantFrom<Fault>('contentType', 'malformed', 'notObject', 'otherKind', 'unknownStrict', 'unknownWarn', 'unknownIgnore', 'wrongType', 'missingMetadata', 'badName', 'rvOnCreate', 'hugeAnnotation', 'hugeData', 'invalid') },
  { weight: 10, arbitrary: fc.constantFrom<Fault>('unknownStrict', 'unknownWarn', 'unknownIgnore', 'wrongType', 'invalid') },
  { weight: 1, arbitrary: fc.constant<Fault>('tooLarge') },
);
const updateFaultArb = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Fault>('none') },
  { weight: 3, arbitrary: fc.constantFrom<Fault>('staleRv', 'noRv') },
  { weight: 1, arbitrary: fc.constantFrom<Fault>('contentType', 'malformed', 'notObject', 'otherKind', 'unknownStrict', 'unknownWarn', 'unknownIgnore', 'wrongType', 'nameMismatch', 'hugeAnnotation', 'hugeData', 'invalid') },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('create' as const), kind: kindArb, name: nameArb, variant: variantArb, fault: createFaultArb, label: labelArb }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('update' as const), kind: kindArb, name: nameArb, variant: variantArb, fault: updateFaultArb, label: labelArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('patch' as const), kind: kindArb, name: nameArb, variant: variantArb,
      patch: fc.constantFrom<PatchKind>('merge-labels', 'merge-spec', 'merge-spec', 'merge-wrongType', 'merge-unknownStrict', 'merge-staleRv', 'json-test-fails', 'json-replace-labels', 'strategic-labels', 'bogus-type', 'malformed'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('status' as const), kind: fc.constantFrom(...STATUS_KINDS), name: nameArb, variant: variantArb, stale: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), kind: kindArb, name: nameArb, precondition: fc.constantFrom<'none' | 'staleRv' | 'wrongUid'>('none', 'none', 'staleRv', 'wrongUid') }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('protobuf' as const), kind: fc.oneof(fc.constantFrom(...PROTOBUF_KINDS), kindArb), name: nameArb, variant: variantArb,
      fault: fc.constantFrom<PbFault>('valid', 'valid', 'truncated', 'noMagic', 'otherKind', 'unknownField', 'notDecoded', 'garbage'),
      cut: fc.integer({ min: 1, max: 40 }),
      garbage: fc.uint8Array({ maxLength: 40 }),
    }),
  },
);

/**
 * One sequence, run first, that reaches every code the coverage check below names: random runs
 * reach each only with high probability (CI once drew 120 runs without one of them).
 */
const COVERING_PB_KIND = PROTOBUF_KINDS[0]!;
const COVERING_PLAIN_KIND = KINDS.findIndex((k) => !k.protobuf);
const COVERING_OPS: Op[] = [
  { op: 'create', kind: COVERING_PB_KIND, name: 0, variant: 1, fault: 'none', label: 'a' },
  { op: 'create', kind: COVERING_PB_KIND, name: 0, variant: 2, fault: 'none', label: 'a' },
  { op: 'update', kind: COVERING_PB_KIND, name: 0, variant: 3, fault: 'none', label: 'b' },
  { op: 'update', kind: COVERING_PB_KIND, name: 0, variant: 4, fault: 'staleRv', label: 'b' },
  { op: 'patch', kind: COVERING_PB_KIND, name: 0, variant: 5, patch: 'merge-labels' },
  { op: 'delete', kind: COVERING_PB_KIND, name: 0, precondition: 'none' },
  { op: 'protobuf', kind: COVERING_PB_KIND, name: 1, variant: 6, fault: 'valid', cut: 1, garbage: new Uint8Array() },
  { op: 'protobuf', kind: COVERING_PLAIN_KIND, name: 1, variant: 7, fault: 'valid', cut: 1, garbage: new Uint8Array() },
];

// ---------------------------------------------------------------- what kube-apiserver answers

const REASONS: Record<number, string[]> = {
  400: ['BadRequest'],
  404: ['NotFound'],
  405: ['MethodNotAllowed'],
  409: ['AlreadyExists', 'Conflict'],
  413: ['RequestEntityTooLarge'],
  415: ['UnsupportedMediaType'],
  422: ['Invalid'],
};

interface Sent {
  method: string;
  path: string;
  contentType: string;
  body: string | Buffer | undefined;
  /** Codes kube-apiserver may answer (several where the answer depends on an order this fuzz cannot know). */
  expected: number[];
  /** For accepted writes: what must read back as sent. */
  sentObject?: Obj;
  unknownPath?: string;
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  what: string;
}

interface Stored {
  object: Obj;
}

interface WatchEvent {
  type: string;
  name: string;
  resourceVersion: string;
}

describe('fuzzing the ingress-controller kinds of the local API server', () => {
  let test: TestServer;
  let core: CoreV1Api;
  const watches: AbortController[] = [];
  const seen = new Map<string, WatchEvent[]>();
  const watchErrors: unknown[] = [];

  beforeAll(async () => {
    test = await startTestServer({ ingressControllerKinds: true, maxBodyBytes: MAX_BODY_BYTES });
    const kc = new KubeConfig();
    kc.loadFromFile(test.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    const listed = await core.listNamespace();
    const since = listed.metadata?.resourceVersion ?? '0';
    const watch = new Watch(kc);
    for (const spec of KINDS) {
      const events: WatchEvent[] = [];
      seen.set(spec.plural, events);
      watches.push(
        await watch.watch(
          `${prefixOf(spec)}/${spec.plural}`,
          { resourceVersion: since, allowWatchBookmarks: false },
          (type: string, object: { metadata?: { name?: string; resourceVersion?: string } }) => events.push({ type, name: object.metadata?.name ?? '', resourceVersion: object.metadata?.resourceVersion ?? '' }),
          (error: unknown) => {
            if (error !== null && error !== undefined && !(error instanceof Error && error.name === 'AbortError')) watchErrors.push(error);
          },
        ),
      );
    }
  });

  afterAll(async () => {
    for (const controller of watches) controller.abort();
    await test?.cleanup();
  });

  it(`${RUNS} runs of odd and malformed writes: precise Status refusals, exact round trips, ordered watches`, async () => {
    const stored = new Map<string, Stored>();
    const expectedEvents = new Map<string, WatchEvent[]>(KINDS.map((k) => [k.plural, []]));
    let highestRv = 0;
    const codes = new Map<string, number>();

    const send = async (sent: Sent): Promise<{ status: number; body: unknown; warning: string | null }> => {
      let response: Response;
      try {
        response = await fetch(`${test.server.url}${sent.path}`, {
          method: sent.method,
          headers: { 'Content-Type': sent.contentType, Accept: 'application/json' },
          ...(sent.body === undefined ? {} : { body: sent.body }),
        });
      } catch (error) {
        throw new Error(`${sent.what}: the connection failed (${String(error)})`);
      }
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // checked below: every answer here is JSON
      }
      return { status: response.status, body, warning: response.headers.get('warning') };
    };

    /** Builds the request of an operation and the codes kube-apiserver answers for it. */
    const build = (op: Op): Sent => {
      const spec = KINDS[op.kind]!;
      const name = nameOf(spec, op.name);
      const current = stored.get(keyOf(spec, name));
      const exists = current !== undefined;
      const itemPath = `${collectionOf(spec)}/${name}`;
      const json = (object: Json): string => JSON.stringify(object);

      if (op.op === 'create' || op.op === 'update') {
        const object = objectOf(spec, name, op.variant, { fuzz: op.label });
        const create = op.op === 'create';
        if (!create && current) (object['metadata'] as Obj)['resourceVersion'] = (current.object['metadata'] as Obj)['resourceVersion'] ?? '';
        const base: Sent = { method: create ? 'POST' : 'PUT', path: create ? collectionOf(spec) : itemPath, contentType: 'application/json', body: undefined, expected: [], what: `${op.op} ${spec.kind} ${name} (${op.fault})` };
        // Where the object's existence decides (kube-apiserver checks it after decoding and validation).
        const afterValidation = create ? (exists ? [409] : [201]) : exists ? [200] : [404];
        // A decode error is found before the object is read; this server reads it first on update.
        const decodeError = (code: number): number[] => (create || exists ? [code] : [code, 404]);
        switch (op.fault) {
          case 'none':
            return { ...base, body: json(object), expected: afterValidation, sentObject: object };
          case 'contentType':
            return { ...base, contentType: 'text/plain', body: json(object), expected: [415] };
          case 'malformed':
            return { ...base, body: json(object).slice(0, -3), expected: decodeError(400) };
          case 'notObject':
            return { ...base, body: json([object]), expected: decodeError(400) };
          case 'otherKind':
            return { ...base, body: json({ ...object, kind: spec.kind === 'ConfigMap' ? 'Secret' : 'ConfigMap' }), expected: decodeError(400) };
          case 'unknownStrict':
          case 'unknownWarn':
          case 'unknownIgnore': {
            const mode = op.fault === 'unknownStrict' ? 'Strict' : op.fault === 'unknownWarn' ? 'Warn' : 'Ignore';
            const withUnknown = clone(object);
            withUnknown['fuzzExtra'] = { nested: op.variant };
            const strict = mode === 'Strict';
            return {
              ...base,
              path: `${base.path}?fieldValidation=${mode}`,
              body: json(withUnknown),
              expected: strict ? decodeError(400) : afterValidation,
              sentObject: object,
              unknownPath: 'fuzzExtra',
              fieldValidation: mode,
            };
          }
          case 'wrongType': {
            const wrong = clone(object);
            setPath(wrong, spec.wrongType[0], spec.wrongType[1]);
            return { ...base, body: json(wrong), expected: decodeError(400) };
          }
          case 'missingMetadata': {
            const { metadata: _dropped, ...rest } = object;
            return { ...base, body: json(rest), expected: [422] };
          }
          case 'badName':
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), name: 'Not_A_Name' } }), expected: [422] };
          case 'rvOnCreate':
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), resourceVersion: '12345' } }), expected: exists ? [400, 409] : [400] };
          case 'staleRv':
            if (!exists) return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), resourceVersion: '1' } }), expected: [404] };
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), resourceVersion: String(Number((current.object['metadata'] as Obj)['resourceVersion']) - 1) } }), expected: [409] };
          case 'noRv': {
            const unconditional = clone(object);
            delete (unconditional['metadata'] as Obj)['resourceVersion'];
            return { ...base, body: json(unconditional), expected: afterValidation, sentObject: unconditional };
          }
          case 'nameMismatch':
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), name: 'someone-else' } }), expected: exists ? [400] : [400, 404] };
          case 'hugeAnnotation':
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), annotations: { big: 'a'.repeat(300 * 1024) } } }), expected: exists || create ? [422] : [404] };
          case 'hugeData': {
            const huge = clone(object);
            const big = 'a'.repeat(1100 * 1024);
            if (spec.kind === 'Secret') huge['data'] = { big: b64(big) };
            else if (spec.kind === 'ConfigMap') huge['data'] = { big };
            else {
              // Kinds without a size rule of their own: a large but legal annotation set (200 KiB) is stored.
              (huge['metadata'] as Obj)['annotations'] = { big: 'a'.repeat(200 * 1024) };
              return { ...base, body: json(huge), expected: afterValidation, sentObject: huge };
            }
            return { ...base, body: json(huge), expected: exists || create ? [422] : [404] };
          }
          case 'tooLarge':
            return { ...base, body: json({ ...object, metadata: { ...(object['metadata'] as Obj), annotations: { big: 'a'.repeat(MAX_BODY_BYTES + 10) } } }), expected: [413] };
          case 'invalid': {
            const invalid = clone(object);
            spec.invalid(invalid);
            return { ...base, body: json(invalid), expected: exists || create ? [422] : [404] };
          }
        }
      }

      if (op.op === 'patch') {
        const base: Sent = { method: 'PATCH', path: itemPath, contentType: 'application/merge-patch+json', body: undefined, expected: [], what: `patch ${spec.kind} ${name} (${op.patch})` };
        const missing = [404];
        const changedBody = spec.body(op.variant);
        switch (op.patch) {
          case 'merge-labels':
            return { ...base, body: json({ metadata: { labels: { patched: String(op.variant) } } }), expected: exists ? [200] : missing };
          case 'merge-spec':
            return { ...base, body: json(changedBody), expected: exists ? [200] : missing };
          case 'merge-wrongType': {
            const wrong: Obj = {};
            setPath(wrong, spec.wrongType[0], spec.wrongType[1]);
            // kube-apiserver decodes the patched object: 400 (a merge patch of a typed object that cannot be decoded).
            return { ...base, body: json(wrong), expected: exists ? [400] : missing };
          }
          case 'merge-unknownStrict':
            return { ...base, path: `${itemPath}?fieldValidation=Strict`, body: json({ fuzzExtra: 1 }), expected: exists ? [400] : missing };
          case 'merge-staleRv':
            return { ...base, body: json({ metadata: { resourceVersion: '1', labels: { stale: 'yes' } } }), expected: exists ? [409] : missing };
          case 'json-test-fails':
            return { ...base, contentType: 'application/json-patch+json', body: json([{ op: 'test', path: '/metadata/name', value: 'nope' }]), expected: exists ? [422] : missing };
          case 'json-replace-labels':
            return { ...base, contentType: 'application/json-patch+json', body: json([{ op: 'add', path: '/metadata/labels', value: { replaced: 'yes' } }]), expected: exists ? [200] : missing };
          case 'strategic-labels':
            return { ...base, contentType: 'application/strategic-merge-patch+json', body: json({ metadata: { labels: { strategic: 'yes' } } }), expected: !spec.strategic ? [415] : exists ? [200] : missing };
          case 'bogus-type':
            return { ...base, contentType: 'application/xml', body: '<patch/>', expected: [415] };
          case 'malformed':
            return { ...base, body: '{"metadata":', expected: exists ? [400] : [400, 404] };
        }
      }

      if (op.op === 'status') {
        const object = current ? clone(current.object) : objectOf(spec, name, op.variant, {});
        object['status'] = spec.statusBody?.(op.variant) ?? {};
        if (op.stale && current) (object['metadata'] as Obj)['resourceVersion'] = String(Number((current.object['metadata'] as Obj)['resourceVersion']) - 1);
        return { method: 'PUT', path: `${itemPath}/status`, contentType: 'application/json', body: json(object), expected: !exists ? [404] : op.stale ? [409] : [200], sentObject: object, what: `status ${spec.kind} ${name}${op.stale ? ' (stale)' : ''}` };
      }

      if (op.op === 'delete') {
        const preconditions: Obj =
          op.precondition === 'staleRv' ? { resourceVersion: '1' } : op.precondition === 'wrongUid' ? { uid: '00000000-0000-0000-0000-000000000000' } : {};
        const body = { apiVersion: 'v1', kind: 'DeleteOptions', ...(op.precondition === 'none' ? {} : { preconditions }) };
        return { method: 'DELETE', path: itemPath, contentType: 'application/json', body: json(body), expected: !exists ? [404] : op.precondition === 'none' ? [200] : [409], what: `delete ${spec.kind} ${name} (${op.precondition})` };
      }

      // protobuf
      const object = objectOf(spec, name, op.variant, { fuzz: 'pb' });
      const base: Sent = { method: 'POST', path: collectionOf(spec), contentType: 'application/vnd.kubernetes.protobuf', body: undefined, expected: [], what: `protobuf create ${spec.kind} ${name} (${op.fault})` };
      const createCode = exists ? [409] : [201];
      if (!spec.protobuf || op.fault === 'notDecoded') {
        // Services and EndpointSlices are not decoded from protobuf (docs/CONTOUR.md), nor is a kind
        // this server does not know; an Ingress is, and one without its spec is invalid.
        if (spec.kind === 'Ingress') return { ...base, body: protobufBody(object), expected: [422] };
        const body = spec.protobuf ? protobufBody({ ...object, apiVersion: 'apps/v1', kind: 'Deployment' }) : protobufBody(object);
        return { ...base, body, expected: [415] };
      }
      switch (op.fault) {
        case 'valid':
          return { ...base, body: protobufBody(object), expected: createCode, sentObject: object };
        case 'truncated': {
          const full = protobufBody(object);
          // Cut inside the message: undecodable (400), or, cut at a field boundary, an object lacking fields.
          return { ...base, body: full.subarray(0, Math.max(4, full.length - op.cut)), expected: [400, 415, 422, ...createCode] };
        }
        case 'noMagic':
          return { ...base, body: protobufBody(object).subarray(4), expected: [400] };
        case 'otherKind': {
          const other = KINDS.find((k) => k.protobuf && k.kind !== spec.kind && k.namespaced === spec.namespaced) ?? KINDS.find((k) => k.protobuf && k.kind !== spec.kind)!;
          return { ...base, body: protobufBody(objectOf(other, name, op.variant, {})), expected: [400] };
        }
        case 'unknownField':
          // A field this server does not decode is refused (415), never dropped (docs/CONTOUR.md).
          return { ...base, body: protobufBody(object, pbMessage((w) => pbBytes(w, 99, 'x'))), expected: [415] };
        case 'garbage':
          return { ...base, body: Buffer.concat([Buffer.from('k8s\0', 'latin1'), op.garbage]), expected: [400, 415, 422, ...createCode] };
      }
    };

    /** Applies an accepted answer to the model and checks the rules for accepted writes. */
    const accepted = async (op: Op, sent: Sent, status: number, body: unknown, warning: string | null): Promise<void> => {
      const spec = KINDS[op.kind]!;
      if (!isObj(body) || !isObj(body['metadata'])) throw new Error(`${sent.what}: ${status} without an object: ${JSON.stringify(body).slice(0, 300)}`);
      const metadata = body['metadata'];
      const name = String(metadata['name']);
      const key = keyOf(spec, name);
      const previous = stored.get(key);
      const rv = Number(metadata['resourceVersion']);
      expect(Number.isInteger(rv)).toBe(true);
      const events = expectedEvents.get(spec.plural)!;

      if (op.op === 'delete') {
        expect(rv).toBeGreaterThan(highestRv);
        highestRv = rv;
        stored.delete(key);
        events.push({ type: 'DELETED', name, resourceVersion: String(rv) });
        const after = await send({ method: 'GET', path: `${collectionOf(spec)}/${name}`, contentType: 'application/json', body: undefined, expected: [404], what: 'read after delete' });
        expect(after.status).toBe(404);
        return;
      }

      // Round trip: what the server answered is what it stored.
      const read = await send({ method: 'GET', path: `${collectionOf(spec)}/${name}`, contentType: 'application/json', body: undefined, expected: [200], what: 'read back' });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(body);

      // The sent fields read back as sent (defaults may add fields, never change these).
      const sentObject = sent.sentObject;
      if (sentObject && op.op !== 'status') {
        if (op.op !== 'patch') expect(metadata['labels']).toEqual((sentObject['metadata'] as Obj)['labels']);
        for (const path of spec.kept) expect({ path, value: getPath(body, path) }).toEqual({ path, value: getPath(sentObject, path) });
      }
      if (op.op === 'status' && sentObject) {
        expect(body['status']).toEqual(sentObject['status']);
        // Only status changed: spec and generation are the stored ones.
        expect(body['spec']).toEqual(previous?.object['spec']);
        expect(metadata['generation']).toEqual((previous?.object['metadata'] as Obj | undefined)?.['generation']);
      }
      if (op.op === 'patch' && op.patch === 'merge-labels') expect(metadata['labels']).toMatchObject({ patched: String(op.variant) });
      if (sent.unknownPath !== undefined) {
        expect(body[sent.unknownPath]).toBeUndefined();
        if (sent.fieldValidation === 'Warn') expect(warning ?? '').toContain(`unknown field \\"${sent.unknownPath}\\"`);
        else expect(warning).toBeNull();
      }

      // resourceVersion only increases; a write that changed nothing keeps it and is no event.
      const changed = previous === undefined || rv !== Number((previous.object['metadata'] as Obj)['resourceVersion']);
      if (changed) {
        if (rv <= highestRv) throw new Error(`${sent.what}: resourceVersion ${rv} is not above ${highestRv}`);
        highestRv = rv;
        events.push({ type: previous === undefined ? 'ADDED' : 'MODIFIED', name, resourceVersion: String(rv) });
      } else {
        expect(body).toEqual(previous.object);
      }

      // Generation: only where the kind keeps one; 1 on create, +1 exactly on a spec change.
      const generation = metadata['generation'];
      if (spec.generation === undefined) expect(generation).toBeUndefined();
      else if (previous === undefined) expect(generation).toBe(1);
      else {
        const specOf = (object: Obj): Json | undefined => {
          if (spec.generation === 'spec') return object['spec'];
          const { metadata: _m, apiVersion: _a, kind: _k, status: _s, ...rest } = object;
          return rest;
        };
        const before = (previous.object['metadata'] as Obj)['generation'] as number;
        const specChanged = JSON.stringify(canonical(specOf(previous.object))) !== JSON.stringify(canonical(specOf(body)));
        expect({ what: sent.what, generation }).toEqual({ what: sent.what, generation: before + (specChanged ? 1 : 0) });
      }
      stored.set(key, { object: body });
    };

    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 6 }), async (ops) => {
        for (const op of ops) {
          const sent = build(op);
          const { status, body, warning } = await send(sent);
          const label = `${op.op}:${status}`;
          codes.set(label, (codes.get(label) ?? 0) + 1);
          if (status >= 500) throw new Error(`${sent.what}: ${status} ${JSON.stringify(body).slice(0, 500)}`);
          if (!sent.expected.includes(status)) {
            throw new Error(`${sent.what}: expected ${sent.expected.join(' or ')}, got ${status}: ${JSON.stringify(body).slice(0, 500)}`);
          }
          if (status >= 400) {
            // A Kubernetes Status with the reason of its code and a message.
            expect(body).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: status, message: expect.any(String) });
            const refusal = body as { reason: string; message: string; details?: { causes?: unknown[] } };
            expect(REASONS[status]).toContain(refusal.reason);
            expect(refusal.message.length).toBeGreaterThan(5);
            // Validation names its fields; a JSON patch that cannot be applied is a bare 422, as in kube-apiserver.
            if (status === 422 && op.op !== 'patch') expect(refusal.details?.causes?.length ?? 0).toBeGreaterThan(0);
            if (status === 409) expect(refusal.reason).toBe(op.op === 'create' || op.op === 'protobuf' ? 'AlreadyExists' : 'Conflict');
            continue;
          }
          await accepted(op, sent, status, body, warning);
        }
        // Every accepted change reached the watch opened before the runs, in order, and nothing else.
        for (const spec of KINDS) {
          const want = expectedEvents.get(spec.plural)!;
          const got = seen.get(spec.plural)!;
          const deadline = Date.now() + 5000;
          while (got.length < want.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
          expect({ kind: spec.kind, events: got }).toEqual({ kind: spec.kind, events: want });
        }
        expect(watchErrors).toEqual([]);
        // The server keeps serving.
        const plain = await core.readNamespace({ name: 'default' });
        expect(plain.metadata?.name).toBe('default');
      }),
      { numRuns: RUNS, endOnFailure: true, examples: [[COVERING_OPS]], ...SEED },
    );
    if (process.env['FUZZ_VERBOSE'] === '1') process.stderr.write(`${JSON.stringify(Object.fromEntries([...codes].sort()))}\n`);
    // The fuzz reached accepted writes and refusals of every kind of code.
    for (const label of ['create:201', 'create:409', 'update:200', 'update:409', 'patch:200', 'delete:200', 'protobuf:201', 'protobuf:415']) {
      expect({ label, reached: (codes.get(label) ?? 0) > 0 }).toEqual({ label, reached: true });
    }
  }, 120_000);

  it('answers as kube-apiserver where the fuzz found it did not (regression)', async () => {
    const post = async (path: string, body: unknown): Promise<{ status: number; body: { reason?: string; message?: string } }> => {
      const response = await fetch(`${test.server.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as { reason?: string; message?: string } };
    };
    const leases = collectionOf(KINDS.find((k) => k.kind === 'Lease')!);
    const lease = (name: string, spec: Obj): Obj => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec });
    expect((await post(leases, lease('taken', { holderIdentity: 'a' }))).status).toBe(201);
    // A known field of the wrong type cannot be decoded into the Go type: 400, not a validation 422.
    expect(await post(leases, lease('typed', { leaseDurationSeconds: '15s' }))).toMatchObject({ status: 400, body: { reason: 'BadRequest', message: expect.stringMatching(/^Lease in version "v1" cannot be handled as a Lease: spec\.leaseDurationSeconds/) } });
    // A taken name is found after decoding and validation: the malformed or invalid create says so.
    expect(await post(leases, lease('taken', { leaseDurationSeconds: '15s' }))).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    expect(await post(`${leases}?fieldValidation=Strict`, { ...lease('taken', {}), extra: 1 })).toMatchObject({ status: 400, body: { reason: 'BadRequest', message: expect.stringContaining('unknown field "extra"') } });
    expect(await post(leases, { ...lease('taken', {}), metadata: { name: 'taken', annotations: { 'bad key!': 'x' } } })).toMatchObject({ status: 422, body: { reason: 'Invalid' } });
    expect(await post(leases, lease('taken', { holderIdentity: 'b' }))).toMatchObject({ status: 409, body: { reason: 'AlreadyExists' } });
    // ConfigMaps hold at most 1 MiB of keys and values, as Secrets do.
    const configMaps = collectionOf(KINDS.find((k) => k.kind === 'ConfigMap')!);
    const big = await post(configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { a: 'x'.repeat(600 * 1024) }, binaryData: { b: b64('y'.repeat(600 * 1024)) } });
    expect(big).toMatchObject({ status: 422, body: { reason: 'Invalid', message: expect.stringContaining('Too long: must have at most 1048576 bytes') } });
    expect((await post(configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fits' }, data: { a: 'x'.repeat(1000 * 1024) } })).status).toBe(201);
  });
});

/** JSON with object keys sorted, for comparing specs regardless of key order. */
function canonical(value: Json | undefined): Json | undefined {
  if (Array.isArray(value)) return value.map((item) => canonical(item) ?? null);
  if (isObj(value)) return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical(value[key]) ?? null]));
  return value;
}
