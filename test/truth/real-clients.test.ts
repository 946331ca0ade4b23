// The ground truth of a real @grpc/grpc-js-xds client (./real-clients.ts): through the recording tap
// it resolves its listener against the reference control plane, and the tap records, under its node
// id, an acceptance of every type with the response's resources and provenance stamps (per nonce),
// a connection event, and a NACK with the client's own message when it rejects config.
import pino from 'pino';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../common/xds';
import { startControlPlane, type ControlPlane } from '../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../infra/local/control-plane/route-source';
import { GroundTruth } from '../../infra/local/envoys';
import { eventually } from '../integration/gateway-relay/helpers';
import { RealClients, XdsTap } from './real-clients';

const quiet = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
const TYPES = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];

let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let tap: XdsTap;
let clients: RealClients;
const truth = new GroundTruth();

const proxy = (name: string, annotations: Record<string, string> = {}): Record<string, unknown> => ({
  apiVersion: 'projectcontour.io/v1',
  kind: 'HTTPProxy',
  metadata: { name, namespace: 'default', annotations },
  spec: { virtualhost: { fqdn: `${name}.example.com` }, routes: [{ services: [{ name: 'echo', port: 8080 }] }] },
});

beforeAll(async () => {
  source = new InMemoryRouteSource();
  source.applyEndpoints({ metadata: { name: 'echo', namespace: 'default' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: 8080 }] }] });
  source.applyProxy(proxy('web'));
  controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-tap', source, holdoffMs: 10, holdoffMaxMs: 50, provenance: true, logger: quiet });
  tap = new XdsTap(controlPlane.address, truth, quiet);
  clients = new RealClients(await tap.start(), (object) => (object === 0 ? 'web.example.com' : 'broken.example.com'));
});

afterAll(async () => {
  clients.close();
  tap.close();
  await controlPlane.close();
});

test('a real client\'s acceptances of every type are recorded from its own requests, with the stamps it received', async () => {
  clients.add(0, 'grpc');
  await eventually(() => TYPES.every((typeUrl) => truth.acceptedVersions('grpc-0', typeUrl).length > 0), 'an acceptance of every type by grpc-0', 30_000);
  expect(tap.serves('grpc-0')).toBe(true);
  expect(truth.envoyTruth('grpc-0')?.connections[0]?.kind).toBe('connected');
  const listener = truth.latestAccepted('grpc-0', LISTENER_TYPE_URL);
  // Named subscription: only its own listener.
  expect(listener?.resources.map((r) => r.name)).toEqual(['web.example.com']);
  expect(listener?.versionInfo).toBe(controlPlane.currentSnapshot()?.[LISTENER_TYPE_URL].version);
  const stamps = tap.sources('grpc-0', LISTENER_TYPE_URL, listener?.nonce ?? '');
  expect([...(stamps ?? [])]).toEqual([expect.stringMatching(/^projectcontour\.io\/HTTPProxy\/default\/web@\d+$/)]);
  expect(truth.nacks('grpc-0', LISTENER_TYPE_URL)).toEqual([]);
});

test('a NACK by the real client is recorded with its own message, and nothing of that response as accepted', async () => {
  // The control plane can emit a route configuration grpc-js-xds rejects (two wildcards in a domain).
  source.applyProxy(proxy('broken', { 'xds-programmed.dev/force-nack': 'true' }));
  await controlPlane.rebuildNow();
  clients.add(1, 'grpc');
  const nack = await eventually(() => truth.nacks('grpc-1', ROUTE_CONFIGURATION_TYPE_URL)[0], 'a NACK of the route configuration by grpc-1', 30_000);
  expect(nack.message).toMatch(/wildcard/);
  expect(truth.acceptedVersions('grpc-1', ROUTE_CONFIGURATION_TYPE_URL).some((a) => a.nonce === nack.nonce)).toBe(false);
});
