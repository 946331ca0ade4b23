// Pure logic: how a simulated Envoy applies a response it NACKs, per type (docs/ENVOY-FLEET.md,
// "NACKs"). CDS/LDS apply every valid resource and keep the previous version of each rejected one;
// RDS/EDS apply, in response order, what comes before the first rejected resource; a response that
// cannot be decoded applies nothing. The NACK still names the last accepted version (SotW), and Delta
// keeps no resource versions from it.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  packAny,
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
} from '../../../common/xds';
import { GroundTruth, TypeProtocolState, fleetTruthExportSchema, nackMessageFor, parseBehaviour } from '../../../infra/local/envoys';

const cluster = (name: string) => packAny(CLUSTER_TYPE_URL, { name, type: 'EDS', connect_timeout: { seconds: 5 } });
const routes = (name: string) => packAny(ROUTE_CONFIGURATION_TYPE_URL, { name });
const assignment = (name: string) => packAny(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { cluster_name: name });

const sotw = (typeUrl: string, version: string, nonce: string, resources: ReturnType<typeof packAny>[]): DiscoveryResponse => ({ version_info: version, nonce, type_url: typeUrl, resources });
const rulesFor = (typeUrl: string, pattern: string, message = 'simulated rejection: cluster failed validation') =>
  parseBehaviour({ nackRules: [{ typeUrl, resourceName: pattern, message }] }).nackRules;
const held = (state: TypeProtocolState) => Object.fromEntries(state.heldResources());

describe('SotW CDS: the valid clusters of a NACKed response are applied', () => {
  test('three clusters, one rejected: the NACK names it and carries the previous version; the others move on', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    state.applySotwAck(state.planSotw(sotw(CLUSTER_TYPE_URL, 'v1', 'n1', ['a', 'b', 'c'].map(cluster)), []));

    const nack = state.planSotw(sotw(CLUSTER_TYPE_URL, 'v2', 'n2', ['a', 'b', 'c'].map(cluster)), rulesFor(CLUSTER_TYPE_URL, '^b$'));
    expect(nack.outcome).toBe('nack');
    expect(nack.request).toMatchObject({ version_info: 'v1', response_nonce: 'n2', error_detail: { code: 3, message: 'simulated rejection: cluster failed validation (resource b)' } });
    expect(nack.rejected).toEqual(['b']);
    state.applyNack(nack);
    expect(held(state)).toEqual({ a: 'v2', b: 'v1', c: 'v2' });
    expect(state.acceptedVersionInfo).toBe('v1');
    // A reconnect still claims the last accepted version.
    expect(state.sotwInitialRequest()).toMatchObject({ version_info: 'v1' });

    // A rejected cluster that is new is simply absent; a held cluster the response leaves out is removed.
    const second = state.planSotw(sotw(CLUSTER_TYPE_URL, 'v3', 'n3', ['a', 'b', 'bad-new'].map(cluster)), rulesFor(CLUSTER_TYPE_URL, '^bad-'));
    expect(second.outcome).toBe('nack');
    expect(second.request).toMatchObject({ version_info: 'v1' });
    state.applyNack(second);
    expect(held(state)).toEqual({ a: 'v3', b: 'v3' });

    // The next ACK replaces all of it, as before.
    state.applySotwAck(state.planSotw(sotw(CLUSTER_TYPE_URL, 'v4', 'n4', ['a'].map(cluster)), []));
    expect(held(state)).toEqual({ a: 'v4' });
  });

  test('every rejected cluster is named; Envoy wording on request', () => {
    const rules = rulesFor(CLUSTER_TYPE_URL, '^bad-', 'bad');
    expect(nackMessageFor(rules, CLUSTER_TYPE_URL, ['bad-1', 'ok', 'bad-2'])).toBe('bad (resource bad-1), bad (resource bad-2)');
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    const nack = state.planSotw(sotw(CLUSTER_TYPE_URL, 'v1', 'n1', ['bad-1', 'ok', 'bad-2'].map(cluster)), rules, 'envoy');
    expect(nack.message).toBe('Error adding/updating cluster(s) bad-1: bad, bad-2: bad');
    state.applyNack(nack);
    expect(held(state)).toEqual({ ok: 'v1' });
    expect(state.acceptedVersionInfo).toBeUndefined();
    expect(nack.request).toMatchObject({ version_info: '' });

    const listeners = new TypeProtocolState(LISTENER_TYPE_URL);
    const listenerNack = listeners.planSotw(sotw(LISTENER_TYPE_URL, 'l1', 'n1', [packAny(LISTENER_TYPE_URL, { name: 'x' }), packAny(LISTENER_TYPE_URL, { name: 'y' })]), parseBehaviour({ nackRules: [{ resourceName: '.', message: 'no' }] }).nackRules, 'envoy');
    expect(listenerNack.message).toBe('Error adding/updating listener(s) x: no\ny: no\n');
  });

  test('a response that cannot be decoded applies nothing', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    state.applySotwAck(state.planSotw(sotw(CLUSTER_TYPE_URL, 'v1', 'n1', ['a'].map(cluster)), []));
    const garbage = { type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 0x7f]) };
    const nack = state.planSotw({ version_info: 'v2', nonce: 'n2', type_url: CLUSTER_TYPE_URL, resources: [cluster('b'), garbage] }, rulesFor(CLUSTER_TYPE_URL, '^nothing$'));
    expect(nack.message).toMatch(/could not be decoded/);
    expect(nack.partial).toBeUndefined();
    state.applyNack(nack);
    expect(held(state)).toEqual({ a: 'v1' });
    const wrongType = state.planSotw(sotw(CLUSTER_TYPE_URL, 'v3', 'n3', [cluster('c'), packAny(LISTENER_TYPE_URL, { name: 'l' })]), []);
    state.applyNack(wrongType);
    expect(held(state)).toEqual({ a: 'v1' });
  });
});

describe('SotW RDS/EDS: applied in response order up to the first rejected resource', () => {
  test.each([
    [ROUTE_CONFIGURATION_TYPE_URL, routes],
    [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, assignment],
  ])('%s', (typeUrl, make) => {
    const state = new TypeProtocolState(typeUrl, ['r1', 'r2', 'r3', 'r4']);
    state.applySotwAck(state.planSotw(sotw(typeUrl, 'v1', 'n1', ['r1', 'r2', 'r3', 'r4'].map(make)), []));
    const rules = parseBehaviour({ nackRules: [{ typeUrl, resourceName: '^r(3|4)$', message: 'bad config' }] }).nackRules;
    const nack = state.planSotw(sotw(typeUrl, 'v2', 'n2', ['r1', 'r3', 'r2', 'r4'].map(make)), rules);
    // Only the first failure is reported, as Envoy's loop stops there.
    expect(nack.request).toMatchObject({ version_info: 'v1', error_detail: { message: 'bad config (resource r3)' } });
    expect(nack.rejected).toEqual(['r3']);
    state.applyNack(nack);
    // r1 came before r3: applied. r3 failed; r2 and r4 came after it: not applied.
    expect(held(state)).toEqual({ r1: 'v2', r2: 'v1', r3: 'v1', r4: 'v1' });

    // Nothing before the failure: nothing applied.
    const first = state.planSotw(sotw(typeUrl, 'v3', 'n3', ['r4', 'r1'].map(make)), rules);
    state.applyNack(first);
    expect(held(state)).toEqual({ r1: 'v2', r2: 'v1', r3: 'v1', r4: 'v1' });
  });

  test('the ground truth records what a NACK applied, and exports it', () => {
    const truth = new GroundTruth();
    truth.registerEnvoy('e', 'c');
    truth.recordNack('e', ROUTE_CONFIGURATION_TYPE_URL, { versionInfo: 'v2', nonce: 'n2', message: 'm', at: 5, resourceNames: ['r1', 'r3'], rejected: ['r3'], applied: [{ name: 'r1', version: 'v2' }], appliedRemoved: [] });
    const exported = fleetTruthExportSchema.parse(JSON.parse(JSON.stringify(truth.exportTruth())));
    expect(exported.envoys[0]?.types[ROUTE_CONFIGURATION_TYPE_URL]?.nacks).toEqual([{ v: 'v2', at: 5, nonce: 'n2', msg: 'm', res: ['r1@v2'] }]);
  });
});

describe('Delta: the same partial application, and no resource versions recorded from the NACK', () => {
  const delta = (typeUrl: string, version: string, nonce: string, upserts: Array<[string, string]>, removed: string[] = []): DeltaDiscoveryResponse => ({
    system_version_info: version,
    nonce,
    type_url: typeUrl,
    resources: upserts.map(([name, v]) => ({ name, version: v, resource: typeUrl === CLUSTER_TYPE_URL ? cluster(name) : assignment(name) })),
    removed_resources: removed,
  });

  test('CDS: valid upserts and removals applied, the rejected cluster keeps its version; initial_resource_versions unchanged', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    state.applyDeltaAck(state.planDelta(delta(CLUSTER_TYPE_URL, 's1', 'n1', [['a', 'h1'], ['b', 'h1'], ['c', 'h1'], ['old', 'h1']]), []));

    const nack = state.planDelta(delta(CLUSTER_TYPE_URL, 's2', 'n2', [['a', 'h2'], ['b', 'h2'], ['c', 'h2'], ['new', 'h2']], ['old']), rulesFor(CLUSTER_TYPE_URL, '^b$'));
    expect(nack.outcome).toBe('nack');
    expect(nack.request).toEqual({ type_url: CLUSTER_TYPE_URL, response_nonce: 'n2', error_detail: { code: 3, message: 'simulated rejection: cluster failed validation (resource b)' } });
    state.applyNack(nack);
    expect(held(state)).toEqual({ a: 'h2', b: 'h1', c: 'h2', new: 'h2' });
    expect(state.acceptedVersionInfo).toBe('s1');
    // Envoy's subscription state is updated only after a response applied cleanly: a reconnect claims
    // the versions of the last ACK.
    expect(state.deltaInitialRequest().initial_resource_versions).toEqual({ a: 'h1', b: 'h1', c: 'h1', old: 'h1' });

    // An ACK of the same resources brings both views together again.
    state.applyDeltaAck(state.planDelta(delta(CLUSTER_TYPE_URL, 's3', 'n3', [['a', 'h2'], ['b', 'h3'], ['c', 'h2'], ['new', 'h2']], ['old']), []));
    expect(held(state)).toEqual({ a: 'h2', b: 'h3', c: 'h2', new: 'h2' });
    expect(state.deltaInitialRequest().initial_resource_versions).toEqual({ a: 'h2', b: 'h3', c: 'h2', new: 'h2' });
  });

  test('a first response NACKed in part: held, yet nothing claimed on reconnect', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    state.applyNack(state.planDelta(delta(CLUSTER_TYPE_URL, 's1', 'n1', [['a', 'h1'], ['bad', 'h1']]), rulesFor(CLUSTER_TYPE_URL, '^bad$')));
    expect(held(state)).toEqual({ a: 'h1' });
    expect(state.deltaInitialRequest().initial_resource_versions).toEqual({});
  });

  test('EDS: in response order up to the first rejected one; removals not applied', () => {
    const state = new TypeProtocolState(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, ['e1', 'e2', 'e3']);
    state.applyDeltaAck(state.planDelta(delta(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 's1', 'n1', [['e1', 'h1'], ['e2', 'h1'], ['e3', 'h1']]), []));
    const nack = state.planDelta(delta(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 's2', 'n2', [['e2', 'h2'], ['e1', 'h2'], ['e3', 'h2']], ['e3']), rulesFor(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, '^e1$'));
    state.applyNack(nack);
    expect(held(state)).toEqual({ e1: 'h1', e2: 'h2', e3: 'h1' });
  });

  test('a resource with no name rejects the whole response', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    state.applyDeltaAck(state.planDelta(delta(CLUSTER_TYPE_URL, 's1', 'n1', [['a', 'h1']]), []));
    const nack = state.planDelta(delta(CLUSTER_TYPE_URL, 's2', 'n2', [['b', 'h2'], ['', 'h2']], ['a']), []);
    expect(nack.outcome).toBe('nack');
    state.applyNack(nack);
    expect(held(state)).toEqual({ a: 'h1' });
  });
});
