// PROGRESS against real xDS clients (docs/GATEWAY.md, "PROGRESS"): the whole system with the gateway
// publishing each lineage's PROGRESS item beside the shards (--progress), writing Envoy states on
// class changes only (--state-writes class-changes: no STATE write per move), and the functions
// deciding from the items (PROGRESS_EVALUATION), two gRPC C-core clients and one grpc-go client behind it, while
// sample-0's route moves between two Services. The test reads the PROGRESS items from the table as
// the convergence function does (the live lineages of the registry, evaluateFromProgress at the
// generation's watermark), and watches the condition; it checks both against what the clients
// themselves report by CSDS (test/truth/client-content.ts):
// - never Programmed early: whenever the items say G is programmed, every client holds, ACKed, the
//   route of G, its cluster and the cluster's endpoints; and a simulated Envoy that ACKs 1.5 s late
//   no longer holds, by its own state, the cluster of the previous generation;
// - Programmed in the end: every move is reached, and the denominator is the clients the test started.
import pino from 'pino';
import { CDS_TYPE_URL, evaluateFromProgress, watermarkOf, type ObjectRef } from '../../../common/core';
import { openTable, type TableAccess } from '../../../common/store';
import { liveLineages } from '../../../functions/lib/evaluate';
import { clusterName } from '../../../infra/local/control-plane/translate';
import { DEFAULT_BEHAVIOUR, parseBehaviour } from '../../../infra/local/envoys';
import { applySamples, HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, sampleCanaryService, sampleFqdn, sampleName, sampleService } from '../../../infra/local/system/samples';
import { startXdsPeers, type XdsPeer, type XdsPeerOptions } from '../../support/xds-peers';
import { checkClientContent, peerUnderCheck } from '../../truth/client-content';
import { clientView } from '../../truth/client-view';
import { ConditionObserver, type ConditionWrite } from '../../truth/observer';
import { CONDITION_TYPE, startTruthSystem, type TruthSystem } from '../../truth/system';

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
const OBJECT = `projectcontour.io/HTTPProxy/${SAMPLE_NAMESPACE}/${sampleName(0)}`;
const REF: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: SAMPLE_NAMESPACE, name: sampleName(0) };
const SIMULATED = 2;
const MOVES = 4;
const SLACK_MS = 150;
/** The slow simulated Envoy's ACK delay: far longer than a build, a write and a read of PROGRESS. */
const SLOW_ACK_MS = 1_500;

let system: TruthSystem;
let observer: ConditionObserver;
let table: TableAccess;
let peers: XdsPeer[] = [];
const serviceAt = new Map<number, string>([[1, sampleService(0)]]);

const expectedCluster = (generation: number): string | undefined => {
  const service = serviceAt.get(generation);
  return service === undefined ? undefined : clusterName(SAMPLE_NAMESPACE, service, SAMPLE_SERVICE_PORT);
};

async function moveRoute(canary: boolean): Promise<number> {
  const service = canary ? sampleCanaryService(0) : sampleService(0);
  const patch = { spec: { routes: [{ conditions: [{ prefix: '/' }], services: [{ name: service, port: SAMPLE_SERVICE_PORT }] }] } };
  const response = await fetch(`${system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${sampleName(0)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(patch),
  });
  if (!response.ok) throw new Error(`patching ${sampleName(0)}: HTTP ${response.status} ${await response.text()}`);
  const generation = ((await response.json()) as { metadata?: { generation?: number } }).metadata?.generation;
  if (generation === undefined) throw new Error('patch response without metadata.generation');
  serviceAt.set(generation, service);
  return generation;
}

/** PROGRESS's verdict on sample-0 at `generation`, read as the convergence function would read it. */
async function progressVerdict(generation: number): Promise<{ state: string; programmed: number; total: number } | undefined> {
  const item = await table.store.getObjectGeneration(REF, generation);
  if (item.status !== 'found') return undefined;
  const now = Date.now();
  const registry = await table.aggregates.getLineageRegistry();
  const live = liveLineages(registry.lineages, now, system.timings.envoyTtlMs);
  const lineages = await table.progress.getProgresses(live);
  const verdict = evaluateFromProgress({
    object: REF,
    generation,
    watermark: watermarkOf(item.value),
    lineages,
    now,
    policy: { ttlMs: system.timings.envoyTtlMs, ackTimeoutMs: system.timings.ackTimeoutMs },
  });
  return { state: verdict.state, programmed: verdict.programmed, total: verdict.total };
}

/** Every peer routes to `cluster`, by its own word. */
async function allRouteTo(cluster: string): Promise<void> {
  await Promise.all(
    peers.map((peer) =>
      peer.waitFor(
        (p) => {
          const snapshot = p.latest();
          const view = snapshot === undefined ? undefined : clientView(snapshot, sampleFqdn(0));
          return view?.complete === true && view.clusterNames.join() === cluster ? view : undefined;
        },
        30_000,
        `${peer.nodeId} routing to ${cluster}`,
      ),
    ),
  );
}

beforeAll(async () => {
  system = await startTruthSystem({ objects: 1, envoys: SIMULATED, progress: true, progressEvaluation: true, stateWrites: 'class-changes', logger });
  table = openTable({ tableName: system.dynamo.tableName, client: { region: system.dynamo.local.region, endpoint: system.dynamo.local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }, logger });
  observer = new ConditionObserver(system.kube.url, CONDITION_TYPE);
  observer.start();
  await applySamples(system.kube.url, 1);
  await observer.waitFor(() => observer.current(sampleName(0))?.condition.status === 'True', 30_000, 'sample-0 True at generation 1');
  const common = { xdsServer: system.gatewayAddress, nodeCluster: 'ingress', target: sampleFqdn(0), logger };
  const options: XdsPeerOptions[] = [
    { ...common, kind: 'grpc-core', nodeId: 'core-a', rpcIntervalMs: 200 },
    { ...common, kind: 'grpc-core', nodeId: 'core-b', rpcIntervalMs: 200 },
    { ...common, kind: 'grpc-go', nodeId: 'go-a', rpcIntervalMs: 200 },
  ];
  peers = await startXdsPeers(options);
  await allRouteTo(expectedCluster(1) ?? '');
}, 120_000);

afterAll(async () => {
  await Promise.all(peers.map((peer) => peer.close()));
  await observer?.stop();
  table?.close();
  await system?.close();
});

test('PROGRESS says a generation is programmed only once every real client holds it, and says so for every move', async () => {
  // The verdicts PROGRESS gives, as condition writes would be (the time is the read's start: the
  // item was written before it).
  const verdicts: ConditionWrite[] = [];
  const totals: number[] = [];
  // One simulated Envoy answers late (its own word on what it holds is the ground truth): the real
  // clients ACK within milliseconds of the relay, too fast to tell a verdict that ran ahead of them.
  // The move's watermark is the response that drops the previous cluster (make-before-break keeps it
  // until every stream answered the route move: docs/GATEWAY.md, "Watermarks"); until the slow Envoy
  // accepts that response it still holds a cluster built from the previous generation.
  const slow = system.fleet.envoys()[0]!;
  const early: string[] = [];
  for (let move = 1; move <= MOVES; move++) {
    const current = serviceAt.get(Math.max(...serviceAt.keys()));
    slow.setBehaviour(parseBehaviour({ ackDelayMs: SLOW_ACK_MS }));
    const previous = expectedCluster(Math.max(...serviceAt.keys())) ?? '';
    const generation = await moveRoute(current === sampleService(0));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const at = Date.now();
      const verdict = await progressVerdict(generation);
      if (verdict?.state === 'Programmed') {
        if (slow.heldResources(CDS_TYPE_URL).has(previous)) early.push(`generation ${generation}: Programmed while ${slow.id} still held ${previous}, built from generation ${generation - 1}`);
        verdicts.push({ name: sampleName(0), at, generation, condition: { status: 'True', observedGeneration: generation, reason: 'Programmed', message: '' } });
        totals.push(verdict.total);
        break;
      }
      if (Date.now() > deadline) throw new Error(`PROGRESS never said generation ${generation} is programmed; last verdict ${JSON.stringify(verdict)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The condition, which the functions decide from the same items (PROGRESS_EVALUATION), follows;
    // judged as it is delivered, and the next move starts from clients settled on this one.
    await observer.waitFor(() => {
      const current = observer.current(sampleName(0));
      const reached = current?.condition.status === 'True' && current.condition.observedGeneration === generation;
      if (reached && slow.heldResources(CDS_TYPE_URL).has(previous)) early.push(`generation ${generation}: the condition True while ${slow.id} still held ${previous}`);
      return reached;
    }, 30_000, `EnvoyProgrammed True at generation ${generation}`);
    slow.setBehaviour(DEFAULT_BEHAVIOUR);
    await allRouteTo(expectedCluster(generation) ?? '');
  }
  // The True conditions written for the moves, judged like the verdicts.
  const conditions = observer.writes.filter((write) => write.condition.status === 'True' && write.condition.observedGeneration > 1);
  expect(conditions.length).toBeGreaterThanOrEqual(MOVES);
  const content = checkClientContent([...verdicts, ...conditions], {
    clients: peers.map((peer) => peerUnderCheck(peer, OBJECT, () => true)),
    sourcePrefix: `projectcontour.io/HTTPProxy/${SAMPLE_NAMESPACE}/`,
    expectedClusters: (_object, generation) => {
      const cluster = expectedCluster(generation);
      return cluster === undefined ? undefined : [cluster];
    },
    slackMs: SLACK_MS,
  });
  expect(early).toEqual([]);
  expect(content.checked).toBe((MOVES + conditions.length) * peers.length);
  expect(content.violations.map((violation) => violation.detail)).toEqual([]);
  // The denominator is every client the test started: the simulated Envoys and the real ones.
  expect(totals).toEqual(Array.from({ length: MOVES }, () => SIMULATED + peers.length));
  // The moves were decided without per-Envoy STATE writes: the gateway demoted states that only moved progress.
  expect(system.gateway?.stateDemotion?.stats().demoted ?? 0).toBeGreaterThan(MOVES);
}, 240_000);
