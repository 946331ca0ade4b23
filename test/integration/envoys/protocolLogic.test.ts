// Pure logic of the simulated Envoy (no sockets): the per-type protocol state machine, NACK rules,
// the resource-name reader, the scheduler's ordering and the ground truth record.
import fc from 'fast-check';
import {
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  packAny,
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
} from '../../../common/xds';
import {
  GroundTruth,
  RESOURCE_WRAPPER_TYPE_URL,
  Scheduler,
  TypeProtocolState,
  fleetTruthExportSchema,
  nackMessageFor,
  parseBehaviour,
  readStringFields,
  sotwResourceName,
} from '../../../infra/local/envoys';
import { loadXdsProtos } from '../../../common/xds';

const cluster = (name: string) => packAny(CLUSTER_TYPE_URL, { name, type: 'EDS', connect_timeout: { seconds: 5 } });

describe('resource names from serialized resources', () => {
  test('reads field 1 of a Cluster without decoding the rest', () => {
    expect(sotwResourceName(cluster('default/app/80'))).toEqual({ name: 'default/app/80', version: undefined });
  });

  test('reads name and version of a discovery Resource wrapper', () => {
    const { root } = loadXdsProtos();
    const wrapper = root.lookupType('envoy.service.discovery.v3.Resource');
    const value = Buffer.from(wrapper.encode(wrapper.fromObject({ name: 'c1', version: 'v9', resource: cluster('c1') })).finish());
    expect(sotwResourceName({ type_url: RESOURCE_WRAPPER_TYPE_URL, value })).toEqual({ name: 'c1', version: 'v9' });
  });

  test('any listener name round-trips (UTF-8 included)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (name) => {
        expect(sotwResourceName(packAny(LISTENER_TYPE_URL, { name, stat_prefix: 'x' })).name).toBe(name);
      }),
      { numRuns: 200 },
    );
  });

  test('truncated bytes are an error, not a wrong name', () => {
    const bytes = cluster('a-long-cluster-name').value;
    expect(() => readStringFields(bytes.subarray(0, 5), [1])).toThrow(/truncated/);
  });
});

describe('NACK rules', () => {
  const rules = parseBehaviour({
    nackRules: [
      { typeUrl: CLUSTER_TYPE_URL, resourceName: '^bad-', message: 'bad cluster' },
      { resourceName: 'evil', message: 'evil anywhere' },
    ],
  }).nackRules;

  test.each([
    [CLUSTER_TYPE_URL, ['ok', 'bad-1'], 'bad cluster (resource bad-1)'],
    [LISTENER_TYPE_URL, ['bad-1'], undefined],
    [LISTENER_TYPE_URL, ['x-evil-y'], 'evil anywhere (resource x-evil-y)'],
    [CLUSTER_TYPE_URL, ['fine'], undefined],
    [CLUSTER_TYPE_URL, [], undefined],
  ])('%s %j -> %s', (typeUrl, names, expected) => {
    expect(nackMessageFor(rules, typeUrl, names)).toBe(expected);
  });

  test('invalid behaviour config is a clear error', () => {
    expect(() => parseBehaviour({ nackRules: [{ resourceName: '(', message: 'x' }] })).toThrow(/nackRules\[0\]\.resourceName/);
    expect(() => parseBehaviour({ ackDelayMs: -1 })).toThrow();
    expect(parseBehaviour({})).toEqual({ ackDelayMs: 0, hang: false, nackRules: [] });
  });
});

describe('TypeProtocolState (SotW)', () => {
  const response = (version: string, nonce: string, names: string[]): DiscoveryResponse => ({
    version_info: version,
    nonce,
    type_url: CLUSTER_TYPE_URL,
    resources: names.map(cluster),
  });

  test('initial, ACK, NACK and reconnect requests follow the xDS rules', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL, ['a', 'b']);
    expect(state.sotwInitialRequest()).toEqual({ type_url: CLUSTER_TYPE_URL, resource_names: ['a', 'b'], version_info: '', response_nonce: '' });

    const ack = state.planSotw(response('v1', 'n1', ['a', 'b']), []);
    expect(ack.outcome).toBe('ack');
    expect(ack.request).toMatchObject({ version_info: 'v1', response_nonce: 'n1' });
    state.applySotwAck(ack);
    expect(Object.fromEntries(state.heldResources())).toEqual({ a: 'v1', b: 'v1' });

    const rules = parseBehaviour({ nackRules: [{ resourceName: '^b$', message: 'no b' }] }).nackRules;
    const nack = state.planSotw(response('v2', 'n2', ['b']), rules);
    expect(nack.outcome).toBe('nack');
    // A NACK carries the last *accepted* version and the rejected response's nonce.
    expect(nack.request).toMatchObject({ version_info: 'v1', response_nonce: 'n2', error_detail: { code: 3, message: 'no b (resource b)' } });
    expect(state.acceptedVersionInfo).toBe('v1');

    // A subscription change carries the nonce of the last response answered (ACKed or NACKed), not of
    // one received and still being applied: Envoy sets the nonce once it has processed a response.
    state.noteResponse('n2');
    expect(state.sotwSubscriptionRequest(['a', 'b'])).toMatchObject({ version_info: 'v1', response_nonce: 'n1' });
    state.applyNack(nack);
    expect(state.sotwSubscriptionRequest(['a', 'c'])).toMatchObject({ resource_names: ['a', 'c'], version_info: 'v1', response_nonce: 'n2' });
    state.resetStream();
    expect(state.sotwInitialRequest()).toMatchObject({ resource_names: ['a', 'c'], version_info: 'v1', response_nonce: '' });
  });

  test('undecodable or wrongly typed resources are NACKed with a reason', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL);
    const garbage = state.planSotw({ version_info: 'v1', nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: [{ type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 0x7f]) }] }, []);
    expect(garbage.outcome).toBe('nack');
    expect(garbage.message).toMatch(/could not be decoded/);
    const wrongType = state.planSotw({ version_info: 'v1', nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: [packAny(LISTENER_TYPE_URL, { name: 'l' })] }, []);
    expect(wrongType.message).toMatch(/expected .*Cluster/);
  });
});

describe('TypeProtocolState (Delta)', () => {
  const delta = (version: string, nonce: string, upserts: Array<[string, string]>, removed: string[] = []): DeltaDiscoveryResponse => ({
    system_version_info: version,
    nonce,
    type_url: CLUSTER_TYPE_URL,
    resources: upserts.map(([name, v]) => ({ name, version: v, resource: cluster(name) })),
    removed_resources: removed,
  });

  test('upserts and removals, initial_resource_versions on reconnect, subscription diffs', () => {
    const state = new TypeProtocolState(CLUSTER_TYPE_URL, ['a']);
    expect(state.deltaInitialRequest()).toEqual({ type_url: CLUSTER_TYPE_URL, resource_names_subscribe: ['a'], initial_resource_versions: {}, response_nonce: '' });
    state.applyDeltaAck(state.planDelta(delta('s1', 'n1', [['a', 'h1'], ['b', 'h2']]), []));
    state.applyDeltaAck(state.planDelta(delta('s2', 'n2', [['a', 'h3']], ['b']), []));
    expect(Object.fromEntries(state.heldResources())).toEqual({ a: 'h3' });
    expect(state.acceptedVersionInfo).toBe('s2');
    expect(state.deltaInitialRequest().initial_resource_versions).toEqual({ a: 'h3' });
    expect(state.deltaSubscriptionRequest(['b', 'c'])).toEqual({ type_url: CLUSTER_TYPE_URL, resource_names_subscribe: ['b', 'c'], resource_names_unsubscribe: ['a'] });

    const nack = state.planDelta(delta('s3', 'n3', [['', 'h']]), []);
    expect(nack.outcome).toBe('nack');
    expect(nack.request).toMatchObject({ response_nonce: 'n3', error_detail: { code: 3 } });
  });

  test('held resources equal a model applying every ACKed response (property)', () => {
    const names = fc.constantFrom('a', 'b', 'c', 'd');
    const step = fc.record({ upserts: fc.array(fc.tuple(names, fc.string({ maxLength: 3 })), { maxLength: 3 }), removed: fc.array(names, { maxLength: 2 }) });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 8 }), (steps) => {
        const state = new TypeProtocolState(CLUSTER_TYPE_URL);
        const model = new Map<string, string>();
        steps.forEach((s, index) => {
          const upserts = new Map(s.upserts);
          const removed = s.removed.filter((n) => !upserts.has(n));
          state.applyDeltaAck(state.planDelta(delta(`s${index}`, `n${index}`, [...upserts], removed), []));
          for (const [n, v] of upserts) model.set(n, v);
          for (const n of removed) model.delete(n);
        });
        expect(Object.fromEntries(state.heldResources())).toEqual(Object.fromEntries(model));
      }),
    );
  });
});

describe('Scheduler', () => {
  test('runs tasks in due order, ties in scheduling order, skips cancelled, survives a throwing task', async () => {
    const errors: unknown[] = [];
    const scheduler = new Scheduler(undefined, (error) => errors.push(error));
    const ran: string[] = [];
    scheduler.schedule(30, () => ran.push('late'));
    scheduler.schedule(0, () => ran.push('first'));
    scheduler.schedule(0, () => {
      throw new Error('boom');
    });
    scheduler.schedule(0, () => ran.push('second'));
    scheduler.schedule(10, () => ran.push('cancelled')).cancel();
    scheduler.schedule(10, () => ran.push('middle'));
    expect(scheduler.pending).toBe(6);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(ran).toEqual(['first', 'second', 'middle', 'late']);
    expect(errors).toHaveLength(1);
    scheduler.close();
    expect(() => scheduler.schedule(0, () => undefined)).toThrow(/closed/);
  });

  test('a cancelled task holds no timer: cancelled at the head, or reached once the others ran', async () => {
    const scheduler = new Scheduler();
    scheduler.schedule(15_000, () => undefined).cancel();
    expect(scheduler.pending).toBe(0);
    const ran: string[] = [];
    scheduler.schedule(5, () => ran.push('ack'));
    scheduler.schedule(15_000, () => ran.push('timeout')).cancel();
    expect(scheduler.pending).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 40));
    // The timer fired for 'ack' and, re-arming, dropped the cancelled task behind it: nothing is left
    // to keep the process alive for 15 s.
    expect(ran).toEqual(['ack']);
    expect(scheduler.pending).toBe(0);
    scheduler.close();
  });

  test('many random delays come out sorted (property, fake clock)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 60 }), (delays) => {
        let now = 0;
        const scheduler = new Scheduler({ now: () => now });
        const fired: number[] = [];
        delays.forEach((delay, index) => scheduler.schedule(delay, () => fired.push(index)));
        now = 1000;
        expect(scheduler.runDue()).toBe(delays.length);
        const expected = delays.map((delay, index) => ({ delay, index })).sort((a, b) => a.delay - b.delay || a.index - b.index).map((x) => x.index);
        expect(fired).toEqual(expected);
        scheduler.close();
      }),
    );
  });
});

describe('GroundTruth', () => {
  test('answers which versions an envoy accepted and when, and exports a valid compact form', () => {
    const truth = new GroundTruth();
    truth.registerEnvoy('e1', 'edge');
    truth.recordConnection('e1', { kind: 'connected', at: 1 });
    truth.recordAccepted('e1', CLUSTER_TYPE_URL, { versionInfo: 'v1', nonce: 'n1', acceptedAt: 10, resources: [{ name: 'a', version: 'v1' }], removed: [] });
    truth.recordNack('e1', CLUSTER_TYPE_URL, { versionInfo: 'v2', nonce: 'n2', message: 'bad', at: 20, resourceNames: ['a'] });
    truth.recordAccepted('e1', CLUSTER_TYPE_URL, { versionInfo: 'v3', nonce: 'n3', acceptedAt: 30, resources: [], removed: ['a'] });
    expect(truth.acceptedVersions('e1', CLUSTER_TYPE_URL).map((a) => a.versionInfo)).toEqual(['v1', 'v3']);
    expect(truth.acceptedAt('e1', CLUSTER_TYPE_URL, 'v3')).toBe(30);
    expect(truth.acceptedAt('e1', CLUSTER_TYPE_URL, 'v2')).toBeUndefined();
    expect(truth.envoysAt(CLUSTER_TYPE_URL, 'v3')).toEqual(['e1']);
    expect(truth.acceptedVersions('nobody', CLUSTER_TYPE_URL)).toEqual([]);
    expect(() => truth.recordAccepted('ghost', CLUSTER_TYPE_URL, { versionInfo: 'v', nonce: 'n', acceptedAt: 0, resources: [], removed: [] })).toThrow(/unknown envoy ghost/);
    const exported = truth.exportTruth();
    expect(fleetTruthExportSchema.parse(exported)).toEqual(exported);
    expect(exported.envoys[0]?.types[CLUSTER_TYPE_URL]).toEqual({
      accepted: [
        { v: 'v1', at: 10, nonce: 'n1', res: ['a@v1'] },
        { v: 'v3', at: 30, nonce: 'n3', res: [], rm: ['a'] },
      ],
      nacks: [{ v: 'v2', at: 20, nonce: 'n2', msg: 'bad' }],
    });
    expect(() => fleetTruthExportSchema.parse({ schema: 'other', envoys: [] })).toThrow();
  });

  test('identical resource lists are stored once for the whole fleet', () => {
    const truth = new GroundTruth();
    const a = truth.internResources(CLUSTER_TYPE_URL, [{ name: 'x', version: '1' }, { name: 'y', version: '1' }]);
    const b = truth.internResources(CLUSTER_TYPE_URL, [{ name: 'x', version: '1' }, { name: 'y', version: '1' }]);
    const otherVersion = truth.internResources(CLUSTER_TYPE_URL, [{ name: 'x', version: '1' }, { name: 'y', version: '2' }]);
    const otherType = truth.internResources(LISTENER_TYPE_URL, [{ name: 'x', version: '1' }, { name: 'y', version: '1' }]);
    expect(b).toBe(a);
    expect(otherVersion).not.toBe(a);
    expect(otherType).not.toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
  });
});
