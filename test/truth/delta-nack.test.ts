// Regression test for a finding of the truth checker (docs/RELIABILITY.md, Findings): a Delta Envoy
// NACKs a response (Envoy rejects it whole), then ACKs the next, unrelated diff. The relay used to
// record the rejected resources as held when sent, so the next diff left them out and its ACK — at a
// version past the rejected one — cleared the NACK in the tracking: the object turned True on an
// Envoy that never got its cluster. Now the relay rolls back what a NACKed response changed, so the
// next response of the type carries the rejected resources again, and only its ACK clears the NACK.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../common/xds';
import { parseVersion } from '../../common/core';
import type { ControlPlane } from '../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../infra/local/control-plane/route-source';
import { DEFAULT_BEHAVIOUR, Fleet, parseBehaviour } from '../../infra/local/envoys';
import type { Relay } from '../../xds-gateway/relay';
import { endpointsOf, eventually, httpProxy, newSource, RecordingObserver, sleep, startTestControlPlane, startTestRelay, testLogger } from '../integration/gateway-relay/helpers';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];

let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let observer: RecordingObserver;
let relay: Relay;
let fleet: Fleet;

beforeAll(async () => {
  source = newSource();
  source.applyEndpoints(endpointsOf('app', '10.0.0.1', 8080));
  source.applyProxy(httpProxy('app', 'app.example.com', 8080));
  source.applyEndpoints(endpointsOf('other', '10.0.0.2', 8081));
  source.applyProxy(httpProxy('other', 'other.example.com', 8081));
  controlPlane = await startTestControlPlane(source);
  observer = new RecordingObserver();
  relay = await startTestRelay(controlPlane.address, observer);
  fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 1, logger: testLogger });
});

afterAll(async () => {
  fleet.close();
  await relay.control.close();
  await controlPlane.close();
});

const seqOf = (version: string): number => {
  const parsed = parseVersion(version);
  if (!parsed.ok) throw new Error(`not a gateway version: ${version}`);
  return parsed.value.seq;
};

async function move(name: string, port: number): Promise<void> {
  source.applyEndpoints(endpointsOf(name, name === 'app' ? '10.0.0.1' : '10.0.0.2', port));
  source.applyProxy(httpProxy(name, `${name}.example.com`, port));
  await controlPlane.rebuildNow();
}

test('after a Delta NACK, an unrelated diff re-carries the rejected resource and its ACK comes only once the Envoy accepts it', async () => {
  const behaviour = parseBehaviour({ nackRules: [{ typeUrl: CLUSTER_TYPE_URL, resourceName: '/9098$', message: 'delta cluster rejected' }] });
  const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'delta', subscriptions: TYPES.map((typeUrl) => ({ typeUrl })), behaviour });
  if (!envoy) throw new Error('no envoy');
  envoy.connect();
  await fleet.waitFor(() => envoy.heldResources(CLUSTER_TYPE_URL).has('default/other/8081') && envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/8080'), { timeoutMs: 20_000 });

  // 1. The Envoy rejects app's new cluster.
  await move('app', 9098);
  const nack = await eventually(() => observer.requests('sim-0', CLUSTER_TYPE_URL).find((e) => e.classification.kind === 'nack'), 'a Delta NACK');
  if (nack.classification.kind !== 'nack') throw new Error('unreachable');
  const rejectedSeq = seqOf(nack.classification.version);
  // The old cluster stays served until the route moved off it (make-before-break); its removal is a
  // version of its own, still carrying the rejected cluster, so it is NACKed too. Wait for that.
  const nacks = () => observer.requests('sim-0', CLUSTER_TYPE_URL).filter((e) => e.classification.kind === 'nack');
  await eventually(() => relay.control.groups().every((group) => group.pendingRemovals === 0), 'make-before-break removals released');
  const cdsSeq = () => relay.control.groups()[0]?.typeHistory[CLUSTER_TYPE_URL]?.at(-1) ?? -1;
  await eventually(() => nacks().some((e) => e.classification.kind === 'nack' && seqOf(e.classification.version) === cdsSeq()), 'the current CDS version answered');
  // Not resent while nothing changed (no NACK loop).
  const responsesAfterNack = observer.responses('sim-0', CLUSTER_TYPE_URL).length;
  const nacksBefore = nacks().length;
  await sleep(300);
  expect(observer.responses('sim-0', CLUSTER_TYPE_URL).length).toBe(responsesAfterNack);

  // 2. An unrelated change: its diff must carry app's rejected cluster again, so the Envoy NACKs it too.
  await move('other', 8082);
  await eventually(() => nacks().length > nacksBefore, 'the next CDS diff NACKed as well');
  const acksPastRejection = observer
    .requests('sim-0', CLUSTER_TYPE_URL)
    .filter((e) => e.classification.kind === 'ack' && seqOf(e.classification.version) >= rejectedSeq);
  expect(acksPastRejection).toEqual([]);
  expect(envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/9098')).toBe(false);
  // Like Envoy's CDS, the simulated Envoy applies the valid part of a response it NACKs: the
  // unrelated cluster is held, the rejected one is not (docs/ENVOY-FLEET.md).
  expect(envoy.heldResources(CLUSTER_TYPE_URL).has('default/other/8082')).toBe(true);

  // 3. Once the Envoy accepts again, the next change brings everything, and that ACK clears the NACK.
  envoy.setBehaviour(DEFAULT_BEHAVIOUR);
  await move('other', 8083);
  await fleet.waitFor(() => envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/9098') && envoy.heldResources(CLUSTER_TYPE_URL).has('default/other/8083'), { timeoutMs: 20_000 });
  // The clusters the routes moved off leave once the Envoy answered the moves (make-before-break).
  await fleet.waitFor(() => !envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/8080') && !envoy.heldResources(CLUSTER_TYPE_URL).has('default/other/8082'), { timeoutMs: 20_000 });
  await eventually(() => observer.requests('sim-0', CLUSTER_TYPE_URL).some((e) => e.classification.kind === 'ack' && seqOf(e.classification.version) > rejectedSeq), 'an ACK past the rejected version');
});
