// Pure logic: the ground-truth summaries both fleet modes answer (infra/local/envoys/fleet-queries.ts),
// on a hand-built GroundTruth, and the node-id template of a FleetSpec.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL as EDS, CLUSTER_TYPE_URL as CDS, LISTENER_TYPE_URL as LDS } from '../../../common/xds';
import { GroundTruth } from '../../../infra/local/envoys';
import { ackCountFromTruth, configuredCountOf, lastAcksFromTruth, programmedAtFromTruth } from '../../../infra/local/envoys/fleet-queries';
import { encodeVersion } from '../../../common/core/version';
import { fleetSpecSchema, nodeFromTemplate } from '../../../infra/local/envoys/fleet-spec';

function accept(truth: GroundTruth, node: string, typeUrl: string, at: number, names: string[]): void {
  truth.recordAccepted(node, typeUrl, { versionInfo: `v${at}`, nonce: String(at), acceptedAt: at, resources: names.map((name) => ({ name, version: `v${at}` })), removed: [] });
}

describe('fleet ground-truth queries', () => {
  const truth = new GroundTruth();
  for (const node of ['e0', 'e1', 'e2']) truth.registerEnvoy(node, 'ingress');
  // e0: old cluster before `since`, new cluster on CDS at 120 and EDS at 150 (programmed at 150), again at 300.
  accept(truth, 'e0', CDS, 50, ['old']);
  accept(truth, 'e0', CDS, 120, ['old', 'new']);
  accept(truth, 'e0', EDS, 150, ['old', 'new']);
  accept(truth, 'e0', CDS, 300, ['old', 'new']);
  // e1: new cluster on both types at 200; a listener too.
  accept(truth, 'e1', CDS, 200, ['new']);
  accept(truth, 'e1', EDS, 180, ['new']);
  accept(truth, 'e1', LDS, 190, ['ingress_http']);
  // e2: CDS only (its EDS never came): not programmed, but still counted in lastAck by its CDS time.
  accept(truth, 'e2', CDS, 400, ['new']);
  const since = 100;

  test('lastAck: per Envoy the later of its first CDS and first EDS acceptance, then the latest Envoy', () => {
    const result = lastAcksFromTruth(truth, ['e0', 'e1', 'e2'], ['new', 'absent'], since);
    expect(result.lastAck).toEqual({ new: 400 });
    expect(result.envoysWith).toEqual({ new: 2 });
    expect(lastAcksFromTruth(truth, ['e0', 'e1'], ['new'], since).lastAck).toEqual({ new: 200 });
  });

  test('only acceptances at or after `since` count', () => {
    expect(lastAcksFromTruth(truth, ['e0'], ['old'], since).lastAck).toEqual({ old: 150 });
    expect(lastAcksFromTruth(truth, ['e0'], ['old'], 400).lastAck).toEqual({});
    expect(ackCountFromTruth(truth, ['e0', 'e1', 'e2'], since)).toBe(7);
    expect(ackCountFromTruth(truth, ['e0', 'e1', 'e2'], 0)).toBe(8);
    expect(lastAcksFromTruth(truth, ['e0', 'e1', 'e2'], [], since).acks).toBe(7);
  });

  test('configured: an Envoy that accepted every one of the types', () => {
    expect(configuredCountOf(truth, ['e0', 'e1', 'e2'], [CDS, EDS])).toBe(2);
    expect(configuredCountOf(truth, ['e0', 'e1', 'e2'], [CDS, EDS, LDS])).toBe(1);
    expect(configuredCountOf(truth, ['e0', 'e1', 'e2'])).toBe(0);
  });

  test('node template: id from prefix and index, alternating metadata, strict schema', () => {
    const template = { idPrefix: 'envoy-', cluster: 'ingress', userAgentName: 'envoy', metadata: { team: 'x' }, alternating: { key: 'zone', values: ['a', 'b'] } };
    expect(nodeFromTemplate(template, 3)).toEqual({ id: 'envoy-3', cluster: 'ingress', userAgentName: 'envoy', metadata: { team: 'x', zone: 'b' } });
    expect(nodeFromTemplate({ idPrefix: 's-', cluster: 'c' }, 0)).toEqual({ id: 's-0', cluster: 'c' });
    expect(fleetSpecSchema.safeParse({ target: 'h:1', groups: [], extra: 1 }).success).toBe(false);
    expect(fleetSpecSchema.safeParse({ target: 'h:1', groups: [{ role: 'r', count: -1, firstIndex: 0, transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: CDS }], node: template }] }).success).toBe(false);
  });
});

describe('programmedAtFromTruth: invariant 1 by the ground truth', () => {
  const LINEAGE = 'gw.boot1.ingress';
  const RDS = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
  const version = (seq: number, lineage = LINEAGE): string => encodeVersion({ lineage, seq });
  const acceptVersion = (truth: GroundTruth, node: string, typeUrl: string, at: number, versionInfo: string): void =>
    truth.recordAccepted(node, typeUrl, { versionInfo, nonce: String(at), acceptedAt: at, resources: [], removed: [] });
  const truth = new GroundTruth();
  for (const node of ['a', 'b', 'c']) truth.registerEnvoy(node, 'ingress');
  // The object's watermark: CDS from seq 5, RDS from seq 7.
  const target = { key: 'x', lineage: LINEAGE, seqByType: { [CDS]: 5, [RDS]: 7 } };
  // a: CDS at 5 (t=110), RDS 6 (t=120, not yet), RDS 7 (t=300): had it at 300, its route being last.
  acceptVersion(truth, 'a', CDS, 110, version(5));
  acceptVersion(truth, 'a', RDS, 120, version(6));
  acceptVersion(truth, 'a', RDS, 300, version(7));
  // b: past both at 150/160, then later versions (first acceptances count).
  acceptVersion(truth, 'b', CDS, 150, version(6));
  acceptVersion(truth, 'b', RDS, 160, version(8));
  acceptVersion(truth, 'b', RDS, 500, version(9));
  // c: RDS at a high seq but on another lineage (a restarted gateway): never had it on this one.
  acceptVersion(truth, 'c', CDS, 130, version(5));
  acceptVersion(truth, 'c', RDS, 140, version(99, 'gw.boot2.ingress'));
  // Not a gateway version at all (a direct connection): ignored.
  acceptVersion(truth, 'c', RDS, 145, 'contour-uuid-1');

  test.each([
    // firstAck: the earliest Envoy to have it (b at 160), lastAck the latest (a at 300).
    { nodes: ['a', 'b'], since: 100, lastAck: { x: 300 }, firstAck: { x: 160 }, envoysWith: { x: 2 } },
    { nodes: ['b'], since: 100, lastAck: { x: 160 }, firstAck: { x: 160 }, envoysWith: { x: 1 } },
    { nodes: ['c'], since: 100, lastAck: {}, firstAck: {}, envoysWith: {} },
    // Acceptances before `since` do not count: b's CDS at 150 is missed from 155 on.
    { nodes: ['b'], since: 155, lastAck: {}, firstAck: {}, envoysWith: {} },
  ])('$nodes since $since', ({ nodes, since, lastAck, firstAck, envoysWith }) => {
    expect(programmedAtFromTruth(truth, nodes, [target], since)).toEqual({ lastAck, firstAck, envoysWith });
  });
});
