// Unmodified Contour (v1.33.6) behind the gateway, end to end: the whole local system
// (startLocalSystem with `controlPlane: 'contour'`: local DynamoDB, the local API server with the
// ingress-controller kinds and Contour's CRDs, two `contour serve` replicas electing a status writer
// on `projectcontour/leader-elect`, the gateway in barrier mode following that Lease, the functions)
// and simulated Envoys of every transport the gateway serves, one of them slow. Per-type SotW is
// what a real Envoy does with Contour's bootstrap (CDS/LDS/EDS/RDS each on its own stream to the
// `contour` cluster, here pointed at the gateway); the simulated Envoys ignore config sources and
// open each type on their configured transport, so ADS works through the gateway the same way.
//
// Each True write of the condition is judged by what every Envoy holds (test/truth/client-content.ts,
// fed from the Envoys' accepted resources: held-content.ts): the route for the object's fqdn must
// encode the generation the condition names (prefix `/gen-<G>`), and its clusters and endpoints must
// be held. The slow Envoy ACKs 1.5 s late, so a watermark taken before Contour's snapshot has the
// change (a broken barrier) or from a replica that is not the status writer shows as a violation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, sampleCanaryService, sampleFqdn, sampleName, sampleService } from '../../../infra/local/system/samples';
import { waitFor } from '../../support/eventually';
import { ConditionObserver, type ConditionWrite } from '../../truth/observer';
import type { HeldConfig } from './held-content';
import { connectHeldEnvoys, ContourJudge, type HeldEnvoyMode } from './system-support';

const CONDITION = 'EnvoyProgrammed';
const OBJECTS = 2;
const ENVOY_TTL_MS = 6000;
/** A 3 s Lease (renew deadline 2 s, retry 0.5 s): a killed leader is replaced in about 3–4 s. */
const LEASE = { leaseDurationSeconds: 3, renewDeadlineMs: 2000, retryPeriodMs: 500 };
const SLOW_ACK_MS = 1500;

const ENVOYS: HeldEnvoyMode[] = [
  { id: 'envoy-per-type-sotw', cluster: 'ingress', transport: 'per-type', protocol: 'sotw' },
  { id: 'envoy-per-type-delta', cluster: 'ingress', transport: 'per-type', protocol: 'delta' },
  { id: 'envoy-ads-sotw', cluster: 'ingress', transport: 'ads', protocol: 'sotw' },
  { id: 'envoy-ads-delta', cluster: 'ingress', transport: 'ads', protocol: 'delta' },
  // A second node group, served from its own upstream subscription and barriers.
  { id: 'envoy-slow', cluster: 'edge', transport: 'per-type', protocol: 'sotw', ackDelayMs: SLOW_ACK_MS },
];

jest.setTimeout(240_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

interface ProxyCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

interface ProxyJson {
  metadata: { generation: number; resourceVersion: string };
  status?: { currentStatus?: string; description?: string; conditions?: ProxyCondition[] };
}

describe('unmodified Contour behind the gateway (barrier mode, following the Lease)', () => {
  let system: LocalSystem<'inline', 'contour'>;
  let dir: string;
  let held: ReadonlyMap<string, HeldConfig> = new Map();
  const observer = (): ConditionObserver => {
    if (!watch) throw new Error('no condition watch');
    return watch;
  };
  let watch: ConditionObserver | undefined;
  const measured: Record<string, number | string> = {};

  const kube = (path: string, init?: RequestInit): Promise<Response> => fetch(`${system.endpoints.kubeUrl}${path}`, init);
  let judge: ContourJudge;
  const getProxy = (name: string): Promise<ProxyJson> => judge.getProxy<ProxyJson>(name);
  /** Moves sample `index`'s route to `/gen-<next generation>` (and optionally another service); returns that generation. */
  const changeRoute = (index: number, service?: string): Promise<number> => judge.changeRoute(index, service);
  const waitTrue = (name: string, generation: number, timeoutMs: number): Promise<ConditionWrite> => judge.waitTrue(name, generation, timeoutMs);
  const programmedEverywhereAt = (name: string, generation: number, since: number): number | undefined => judge.programmedEverywhereAt(name, generation, since);
  const contentViolations = (): { violations: string[]; checked: number } => judge.contentViolations();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'contour-gw-'));
    system = await startLocalSystem(
      {
        controlPlane: 'contour',
        envoys: 0,
        grpcClients: 0,
        objects: OBJECTS,
        stateDir: dir,
        envoyTtlMs: ENVOY_TTL_MS,
        ackTimeoutMs: 5000,
        expireEveryMs: 1000,
        controlPlaneLease: LEASE,
      },
      { logger },
    );
    expect(system.unavailable).toEqual([]);
    judge = new ContourJudge(system, connectHeldEnvoys(system, ENVOYS, OBJECTS), OBJECTS, observer);
    held = judge.held;
  }, 120_000);

  afterAll(async () => {
    await watch?.stop();
    await system?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    // The numbers the report quotes (docs/CONTOUR.md, "Putting the gateway in front of Contour").
    if (Object.keys(measured).length > 0) console.log(`contour through the gateway: ${JSON.stringify(measured)}`);
  });

  it('starts Contour behind the gateway: Lease holders are <replica>_<uuid>, the gateway follows the holder, every Envoy routes the samples', async () => {
    const holder = await system.controlPlane.leaseHolder();
    expect(holder).toMatch(/^contour-[12]_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const leader = await system.controlPlane.leader();
    await waitFor('the gateway following the Lease holder', () => system.gateway?.gateway?.leader?.currentTarget() === leader?.xdsAddress || undefined, { timeoutMs: 10_000 });
    for (const envoy of held.values()) {
      for (let index = 0; index < OBJECTS; index++) {
        await waitFor(`${envoy.nodeId} routing ${sampleFqdn(index)}`, () => envoy.current(sampleName(index))?.complete === true || undefined, { timeoutMs: 30_000 });
        // Contour's cluster names: <ns>/<service>/<port>/<hash>.
        expect(envoy.current(sampleName(index))).toMatchObject({ complete: true, generation: 1, clusters: [expect.stringMatching(new RegExp(`^${SAMPLE_NAMESPACE}/${sampleService(index)}/8080/[0-9a-f]+$`))] });
      }
    }
    watch = new ConditionObserver(system.endpoints.kubeUrl, CONDITION);
    watch.start();
    for (let index = 0; index < OBJECTS; index++) {
      const write = await waitTrue(sampleName(index), 1, 30_000);
      expect(write.condition.message).toBe(`${ENVOYS.length}/${ENVOYS.length} Envoys programmed at generation 1`);
    }
    // Contour wrote its own status next to ours, and keeps ours when it writes again.
    const proxy = await getProxy(sampleName(0));
    expect(proxy.status?.currentStatus).toBe('valid');
    expect(proxy.status?.conditions?.map((c) => c.type).sort()).toEqual([CONDITION, 'Valid']);
  });

  it('(a) a spec change is True at its generation only once every Envoy holds a route encoding it', async () => {
    const latencies: number[] = [];
    const afterContent: number[] = [];
    // Three changes: a new prefix on each sample, then a move to another service (new cluster and endpoints).
    const changes: { index: number; service?: string }[] = [{ index: 0 }, { index: 1 }, { index: 0, service: sampleCanaryService(0) }];
    for (const change of changes) {
      const name = sampleName(change.index);
      const since = Date.now();
      const generation = await changeRoute(change.index, change.service);
      const write = await waitTrue(name, generation, 30_000);
      // Judged at once, so a violation names the Envoy that did not hold the change.
      expect(contentViolations().violations).toEqual([]);
      const everywhere = programmedEverywhereAt(name, generation, since);
      expect(everywhere).toBeDefined();
      expect(write.at).toBeGreaterThanOrEqual(everywhere ?? Number.POSITIVE_INFINITY);
      latencies.push(write.at - since);
      afterContent.push(write.at - (everywhere ?? write.at));
      if (change.service !== undefined) {
        for (const envoy of held.values()) expect(envoy.current(name)?.clusters).toEqual([expect.stringMatching(new RegExp(`^${SAMPLE_NAMESPACE}/${change.service}/8080/`))]);
      }
    }
    const { violations, checked } = contentViolations();
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual((changes.length + OBJECTS) * ENVOYS.length);
    measured['changeToTrueMs'] = latencies.join(',');
    measured['lastEnvoyHeldToTrueMs'] = afterContent.join(',');
  });

  it("(b) Contour's leader SIGKILLed mid-change: the other replica takes the Lease, the gateway follows, no false True, True again within TTL + 5 s", async () => {
    const gateway = system.gateway?.gateway;
    if (gateway?.leader === undefined) throw new Error('the gateway does not follow a Lease');
    const leader = await system.controlPlane.leader();
    if (leader === undefined) throw new Error('no Contour replica holds the Lease');
    const survivor = system.controlPlane.replicas.find((replica) => replica !== leader);
    if (survivor === undefined) throw new Error('no second Contour replica');
    const lineagesBefore = new Set(gateway.relay.control.groups().map((g) => g.lineage));

    const name = sampleName(0);
    const generation = await changeRoute(0);
    const killedAt = Date.now();
    await leader.process.kill();
    const takenAt = await waitFor('the other replica holding the Lease', async () => ((await system.controlPlane.leaseHolder()).startsWith(`${survivor.name}_`) ? Date.now() : undefined), { timeoutMs: 20_000, intervalMs: 50 });
    const followedAt = await waitFor('the gateway following the new holder', () => (gateway.leader?.currentTarget() === survivor.xdsAddress ? Date.now() : undefined), { timeoutMs: 10_000, intervalMs: 20 });
    const write = await waitTrue(name, generation, ENVOY_TTL_MS + 5000 - (Date.now() - killedAt));
    expect(write.at - killedAt).toBeLessThanOrEqual(ENVOY_TTL_MS + 5000);
    // Content from another replica is never relayed on a lineage the old leader's content earned.
    const lineagesAfter = gateway.relay.control.groups().map((g) => g.lineage);
    expect(lineagesAfter.some((lineage) => lineagesBefore.has(lineage))).toBe(false);

    // One more change, served by the survivor alone.
    const next = await changeRoute(0, sampleService(0));
    await waitTrue(name, next, 30_000);

    const { violations } = contentViolations();
    expect(violations).toEqual([]);
    measured['killToLeaseTakenMs'] = takenAt - killedAt;
    measured['killToGatewayFollowsMs'] = followedAt - killedAt;
    measured['killToTrueMs'] = write.at - killedAt;
  });

  it('(c) an invalid HTTPProxy: Contour says Valid=False; what our condition says is recorded', async () => {
    const name = 'broken';
    const created = await kube(`${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'projectcontour.io/v1',
        kind: 'HTTPProxy',
        metadata: { name, namespace: SAMPLE_NAMESPACE },
        spec: { virtualhost: { fqdn: 'broken.local' }, routes: [{ conditions: [{ prefix: '/' }], services: [{ name: 'no-such-service', port: 8080 }] }] },
      }),
    });
    expect(created.status).toBe(201);
    const invalid = await waitFor('Contour marking it invalid', async () => {
      const proxy = await getProxy(name);
      return proxy.status?.conditions?.some((c) => c.type === 'Valid' && c.observedGeneration === 1) ? proxy : undefined;
    }, { timeoutMs: 20_000 });
    expect(invalid.status).toMatchObject({ currentStatus: 'invalid' });
    expect(invalid.status?.conditions?.find((c) => c.type === 'Valid')).toMatchObject({ status: 'False' });
    // Today the barrier counts any Valid condition at G as "processed G", whatever its status, so
    // the condition speaks about generation 1 like for a valid object. Which verdict it gives is
    // recorded, not asserted: making it say Invalid is another change.
    const ourCondition = async (): Promise<ProxyCondition | undefined> =>
      (await getProxy(name)).status?.conditions?.find((c) => c.type === CONDITION);
    await waitFor('our condition on it', ourCondition, { timeoutMs: 20_000 });
    // The first verdict is Pending while the Envoys' states catch up; give it time to settle.
    const ours = await waitFor('a verdict other than Pending', async () => {
      const condition = await ourCondition();
      return condition !== undefined && condition.reason !== 'Pending' ? condition : undefined;
    }, { timeoutMs: 15_000 }).catch(async () => ourCondition());
    expect(ours?.observedGeneration).toBe(1);
    const settled = (await getProxy(name)).status;
    measured['invalidProxy'] = `Contour: ${settled?.currentStatus ?? '?'} "${settled?.description ?? ''}"; ours: ${ours?.status ?? '?'} ${ours?.reason ?? ''} "${ours?.message ?? ''}"`;
    for (const envoy of held.values()) expect(envoy.view('broken.local').complete).toBe(false);
  });
});
