// Pure logic: the ground-truth summaries both fleet modes answer (infra/local/envoys/fleet-queries.ts),
// on a hand-built GroundTruth, and the node-id template of a FleetSpec.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL as EDS, CLUSTER_TYPE_URL as CDS, LISTENER_TYPE_URL as LDS } from '../../../common/xds';
import { GroundTruth } from '../../../infra/local/envoys';
import { ackCountFromTruth, configuredCountOf, lastAcksFromTruth } from '../../../infra/local/envoys/fleet-queries';
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
