// Fuzzing the relay's downstream edge over real gRPC (fast-check): random SotW and Delta request
// sequences (missing or odd nodes, unknown and invalid type URLs, huge name lists and over-long names,
// random nonces and versions, versions of our own lineage, error_detail with malformed Any details,
// ACK/NACK echoes of real responses) and raw garbage frames sent with an identity serializer. Rules:
//   - the relay never crashes and never answers "relay internal error";
//   - each fuzz stream ends with a clear status (INVALID_ARGUMENT / RESOURCE_EXHAUSTED from the relay,
//     INTERNAL "deserializing" from grpc-js for undecodable bytes, or OK after the client half-closes
//     — the requests it ignored are logged with the reason);
//   - every response a fuzz stream gets is well formed (its type, a nonce, our version scheme);
//   - one run in eight plays while the relay is paused (backpressure) and resumes before ending;
//   - a well-behaved simulated Envoy in the same node group keeps receiving and ACKing every config
//     change made during the run, and ends at the current version of every type.
// FUZZ_RUNS raises the number of runs (default 200).
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { encodeVersion } from '../../common/core';
import {
  ADS_SERVICE,
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  createDiscoveryClient,
  LISTENER_TYPE_URL,
  openAdsDelta,
  openAdsSotw,
  openPerTypeSotw,
  PER_TYPE_SERVICES,
  ROUTE_CONFIGURATION_TYPE_URL,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../common/xds';
import type { ControlPlane } from '../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../infra/local/control-plane/route-source';
import { Fleet, type SimEnvoy } from '../../infra/local/envoys';
import type { Relay } from '../../xds-gateway/relay';
import { eventually, httpProxy, newSource, RecordingObserver, startTestControlPlane, startTestRelay, testLogger } from '../integration/gateway-relay/helpers';
import { StreamReader } from '../integration/gateway-relay/stream-reader';
import { captureLogger, type CapturedLogger } from '../integration/gateway-security/log-capture';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 200);
const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const GROUP = 'fuzz-a';
const LINEAGE = `gw-test.boot-1.${GROUP}`;
const MAX_NAMES = 1000;
const MAX_NAME_LENGTH = 256;
const CHANGE_EVERY_RUNS = 25;

// ---------------------------------------------------------------- arbitraries

// Weighted so that about half the streams get past identification and exercise the serving paths.
const nodeArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 5, arbitrary: fc.record({ id: fc.constantFrom('fz-1', 'fz-2', 'fz-3'), cluster: fc.constantFrom(GROUP, 'fuzz-b') }) },
  { weight: 1, arbitrary: fc.record({ id: fc.string({ maxLength: 30 }), cluster: fc.oneof(fc.constantFrom(GROUP, 'fuzz-b', ''), fc.string({ maxLength: 20 })) }) },
  { weight: 1, arbitrary: fc.record({
    id: fc.constant('fz-meta'),
    cluster: fc.constant(GROUP),
    metadata: fc.constantFrom({ fields: {} }, { fields: { a: { stringValue: 'b' } } }, { fields: { deep: { structValue: { fields: { list: { listValue: { values: [{ numberValue: 1 }, { nullValue: 0 }] } } } } } } }),
    user_agent_name: fc.string({ maxLength: 20 }),
  }) },
);
const typeUrlArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...TYPES) },
  { weight: 1, arbitrary: fc.constantFrom('type.googleapis.com/envoy.service.runtime.v3.Runtime', 'type.googleapis.com/fuzz.Unknown', '', 'has spaces in it', `type.googleapis.com/${'x'.repeat(600)}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);
const nameArb = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('app', 'default/app', 'other', '*', '') }, { weight: 2, arbitrary: fc.string({ maxLength: 16 }) }, { weight: 1, arbitrary: fc.constant('n'.repeat(MAX_NAME_LENGTH + 1)) });
const namesArb = fc.oneof(
  { weight: 8, arbitrary: fc.array(nameArb, { maxLength: 6 }) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_NAMES - 2, max: MAX_NAMES + 200 }).map((count) => Array.from({ length: count }, (_, i) => `name-${i}`)) },
);
const versionArb = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 24 }),
  fc.nat({ max: 40 }).map((seq) => encodeVersion({ lineage: LINEAGE, seq })),
  fc.nat({ max: 40 }).map((seq) => encodeVersion({ lineage: 'gw-other.boot-9.fuzz-a', seq })),
);
const nonceArb = fc.oneof(fc.constant(''), fc.constantFrom('1', '2', '3'), fc.string({ maxLength: 24 }));
/** error_detail with Any details that are usually not valid messages of their claimed type. */
const errorDetailArb = fc.option(
  fc.record({
    code: fc.integer(),
    message: fc.string({ maxLength: 300 }),
    details: fc.array(fc.record({ type_url: fc.oneof(fc.constant('type.googleapis.com/google.rpc.DebugInfo'), fc.string({ maxLength: 30 })), value: fc.uint8Array({ maxLength: 48 }).map((bytes) => Buffer.from(bytes)) }), { maxLength: 2 }),
  }),
  { nil: undefined },
);

const sotwRequestArb: fc.Arbitrary<DiscoveryRequest> = fc.record(
  { node: nodeArb, type_url: typeUrlArb, resource_names: namesArb, version_info: versionArb, response_nonce: nonceArb, error_detail: errorDetailArb },
  { requiredKeys: [] },
) as fc.Arbitrary<DiscoveryRequest>;
const deltaRequestArb: fc.Arbitrary<DeltaDiscoveryRequest> = fc.record(
  {
    node: nodeArb,
    type_url: typeUrlArb,
    resource_names_subscribe: namesArb,
    resource_names_unsubscribe: fc.array(nameArb, { maxLength: 4 }),
    initial_resource_versions: fc.dictionary(nameArb, versionArb, { maxKeys: 4 }),
    response_nonce: nonceArb,
    error_detail: errorDetailArb,
  },
  { requiredKeys: [] },
) as fc.Arbitrary<DeltaDiscoveryRequest>;

type Step<Req> = { kind: 'send'; request: Req } | { kind: 'echo'; nack: boolean };
const stepsArb = <Req>(requestArb: fc.Arbitrary<Req>): fc.Arbitrary<Step<Req>[]> =>
  fc.array(
    fc.oneof({ weight: 4, arbitrary: requestArb.map((request): Step<Req> => ({ kind: 'send', request })) }, { weight: 1, arbitrary: fc.boolean().map((nack): Step<Req> => ({ kind: 'echo', nack })) }),
    { minLength: 1, maxLength: 6 },
  );

type Scenario =
  | { channel: 'ads-sotw' | 'cds-sotw'; steps: Step<DiscoveryRequest>[] }
  | { channel: 'ads-delta'; steps: Step<DeltaDiscoveryRequest>[] }
  | { channel: 'raw'; frames: Uint8Array[] };

const scenarioArb: fc.Arbitrary<Scenario> = fc.oneof(
  { weight: 4, arbitrary: stepsArb(sotwRequestArb).map((steps): Scenario => ({ channel: 'ads-sotw', steps })) },
  { weight: 1, arbitrary: stepsArb(sotwRequestArb).map((steps): Scenario => ({ channel: 'cds-sotw', steps })) },
  { weight: 3, arbitrary: stepsArb(deltaRequestArb).map((steps): Scenario => ({ channel: 'ads-delta', steps })) },
  { weight: 2, arbitrary: fc.array(fc.uint8Array({ maxLength: 160 }), { minLength: 1, maxLength: 3 }).map((frames): Scenario => ({ channel: 'raw', frames })) },
);

// ---------------------------------------------------------------- the run

describe('fuzzing xDS requests into the relay', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let observer: RecordingObserver;
  let relay: Relay;
  let logs: CapturedLogger;
  let ads: grpc.Client;
  let cds: grpc.Client;
  let raw: grpc.Client;
  let fleet: Fleet;
  let steady: SimEnvoy;

  beforeAll(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    observer = new RecordingObserver();
    logs = captureLogger('info');
    relay = await startTestRelay(controlPlane.address, observer, {
      logger: logs.logger,
      limits: { maxMessageBytes: 64 * 1024, maxResourceNamesPerRequest: MAX_NAMES, maxResourceNameLength: MAX_NAME_LENGTH, maxTypesPerStream: 4, maxGroups: 4, maxTypesPerGroup: 8 },
    });
    const address = `127.0.0.1:${relay.port}`;
    ads = createDiscoveryClient(ADS_SERVICE, address);
    cds = createDiscoveryClient(PER_TYPE_SERVICES[CLUSTER_TYPE_URL].service, address);
    raw = new grpc.Client(address, grpc.credentials.createInsecure());
    fleet = new Fleet({ target: address, channels: 1, logger: testLogger });
    [steady] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: TYPES.map((typeUrl) => ({ typeUrl })), node: () => ({ id: 'steady', cluster: GROUP }) }) as [SimEnvoy];
    steady.connect();
    await eventually(() => TYPES.every((typeUrl) => steady.acceptedVersion(typeUrl) !== undefined), 'the steady Envoy ACKs every type');
  });

  afterAll(async () => {
    fleet.close();
    ads.close();
    cds.close();
    raw.close();
    await relay.control.close();
    await controlPlane.close();
    await source.close();
  });

  const currentVersion = (typeUrl: string): string | undefined => {
    const history = relay.control.groups().find((g) => g.group === GROUP)?.typeHistory[typeUrl];
    const seq = history?.[history.length - 1];
    return seq === undefined ? undefined : encodeVersion({ lineage: LINEAGE, seq });
  };

  /** Runs one scenario on a fresh stream; resolves with the final status and the responses seen. */
  async function play(scenario: Scenario, beforeEnd: () => void): Promise<{ status: grpc.StatusObject; responses: Array<DiscoveryResponse | DeltaDiscoveryResponse> }> {
    if (scenario.channel === 'raw') {
      const call = raw.makeBidiStreamRequest<Buffer, Buffer>(
        `/${ADS_SERVICE}/StreamAggregatedResources`,
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
      );
      const reader = new StreamReader<Buffer, Buffer>(call);
      for (const frame of scenario.frames) reader.send(Buffer.from(frame));
      beforeEnd();
      call.end();
      return { status: await withTimeout(reader.status, 'raw stream status'), responses: [] };
    }
    if (scenario.channel === 'ads-delta') {
      const responses: DeltaDiscoveryResponse[] = [];
      const reader = new StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(openAdsDelta(ads));
      for (const step of scenario.steps) {
        if (step.kind === 'send') reader.send(step.request);
        else await echo(reader, responses, (last, nack) => ({ type_url: last.type_url ?? '', response_nonce: last.nonce ?? '', ...(nack ? { error_detail: { code: 3, message: 'fuzz NACK' } } : {}) }), step.nack);
      }
      beforeEnd();
      reader.call.end();
      const status = await withTimeout(reader.status, 'delta stream status');
      return { status, responses: [...responses, ...(await drain(reader))] };
    }
    const responses: DiscoveryResponse[] = [];
    const reader = new StreamReader<DiscoveryRequest, DiscoveryResponse>(scenario.channel === 'ads-sotw' ? openAdsSotw(ads) : openPerTypeSotw(cds, CLUSTER_TYPE_URL));
    for (const step of scenario.steps) {
      if (step.kind === 'send') reader.send(step.request);
      else
        await echo(
          reader,
          responses,
          (last, nack) => ({ type_url: last.type_url ?? '', response_nonce: last.nonce ?? '', version_info: nack ? '' : (last.version_info ?? ''), ...(nack ? { error_detail: { code: 3, message: 'fuzz NACK' } } : {}) }),
          step.nack,
        );
    }
    beforeEnd();
    reader.call.end();
    const status = await withTimeout(reader.status, 'sotw stream status');
    return { status, responses: [...responses, ...(await drain(reader))] };
  }

  async function echo<Req, Res>(reader: StreamReader<Req, Res>, seen: Res[], build: (last: Res, nack: boolean) => Req, nack: boolean): Promise<void> {
    if (reader.isEnded) return;
    try {
      const response = await reader.next(150);
      seen.push(response);
      reader.send(build(response, nack));
    } catch {
      // No response to echo (no node, no data yet, or the stream ended): the step is a no-op.
    }
  }

  /** Responses already received but not read yet (the stream has ended). */
  async function drain<Req, Res>(reader: StreamReader<Req, Res>): Promise<Res[]> {
    const rest: Res[] = [];
    for (;;) {
      try {
        rest.push(await reader.next(1));
      } catch {
        return rest;
      }
    }
  }

  test(`${RUNS} random request sequences: clear statuses, well-formed responses, the steady Envoy unaffected`, async () => {
    const codes = new Map<string, number>();
    let runs = 0;
    let changes = 0;
    let pausedRuns = 0;
    const rdsAcked = (): Set<string> => new Set(observer.requests('steady', ROUTE_CONFIGURATION_TYPE_URL).flatMap((e) => (e.classification.kind === 'ack' ? [e.classification.version] : [])));
    const rdsAckedBefore = rdsAcked();

    await fc.assert(
      // One run in eight plays while the relay is paused (backpressure), resuming before the half-close.
      fc.asyncProperty(scenarioArb, fc.nat({ max: 7 }).map((n) => n === 0), async (scenario, paused) => {
        runs += 1;
        if (runs % CHANGE_EVERY_RUNS === 0) {
          changes += 1;
          source.applyProxy(httpProxy('app', `app-${changes}.example.com`, 8080));
        }
        if (paused) {
          pausedRuns += 1;
          relay.control.setPaused(true);
        }
        const { status, responses } = await play(scenario, () => relay.control.setPaused(false));
        const label = `${scenario.channel}:${grpc.status[status.code]}`;
        codes.set(label, (codes.get(label) ?? 0) + 1);
        expect(status.details).not.toContain('relay internal error');
        if (scenario.channel === 'raw') {
          expect([grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.RESOURCE_EXHAUSTED, grpc.status.INTERNAL]).toContain(status.code);
          if (status.code === grpc.status.INTERNAL) expect(status.details).toMatch(/deserializ/i);
        } else {
          expect([grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.RESOURCE_EXHAUSTED]).toContain(status.code);
          if (status.code !== grpc.status.OK) expect(status.details.length).toBeGreaterThan(5);
        }
        for (const response of responses) {
          expect(response.nonce).toMatch(/^[0-9]+$/);
          const version = 'system_version_info' in response ? response.system_version_info : (response as DiscoveryResponse).version_info;
          // At the group cap (4) a group without streams gives way to a new one; created again later,
          // it is on a later lineage of this boot (`boot-1-l<n>`, relay.ts bootPartFor).
          expect(version).toMatch(/^xp1:gw-test\.boot-1(-l[0-9]+)?\.[a-z0-9-]+:[0-9]+$/);
        }
      }),
      { numRuns: RUNS },
    );

    if (process.env['FUZZ_VERBOSE'] === '1') process.stderr.write(`${JSON.stringify(Object.fromEntries(codes))}\n`);
    // The fuzz reached both sides: streams the relay refused and streams it served to the end.
    const total = (code: string): number => [...codes].filter(([label]) => label.endsWith(`:${code}`)).reduce((sum, [, n]) => sum + n, 0);
    expect(total('INVALID_ARGUMENT')).toBeGreaterThan(0);
    expect(total('OK')).toBeGreaterThan(0);
    expect(pausedRuns).toBeGreaterThan(0);
    expect(relay.control.paused()).toBe(false);
    // Ignored requests were logged with their reason.
    expect(logs.text()).toContain('ending downstream stream');

    // The steady Envoy kept its one stream and ACKed config changes made during the fuzz...
    expect(observer.of('streamClosed').some((e) => e.nodeId === 'steady')).toBe(false);
    changes += 1;
    source.applyProxy(httpProxy('app', `app-final-${changes}.example.com`, 8080));
    await eventually(() => {
      const version = currentVersion(ROUTE_CONFIGURATION_TYPE_URL);
      return version !== undefined && TYPES.every((typeUrl) => steady.acceptedVersion(typeUrl) === currentVersion(typeUrl)) && steady.acceptedVersion(ROUTE_CONFIGURATION_TYPE_URL) === version;
    }, 'the steady Envoy runs the current version of every type', 30_000);
    const newAcks = [...rdsAcked()].filter((version) => !rdsAckedBefore.has(version));
    expect(newAcks.length).toBeGreaterThanOrEqual(Math.ceil(changes / 2));
    // ...and every fuzz stream is gone from the relay: only the steady Envoy's stream is left.
    await eventually(() => relay.openStreams() === 1, 'fuzz streams cleaned up');
  }, 120_000);
});

function withTimeout<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    }),
  ]);
}
