// Metric labels fed by Envoy-controlled strings stay bounded: node group keys (node.cluster or a
// metadata field) and type URLs (anything printable over ADS). The first groups and unknown types get
// their own (sanitised) label value, later ones share `_other`, so an Envoy inventing values cannot
// grow the gateway's series without end.
import { CDS_TYPE_URL, lineageGroupId } from '../../../common/core';
import { createGatewayMetrics, GROUP_LABEL_LIMIT, OTHER_LABEL, UNKNOWN_TYPE_LABEL_LIMIT } from '../../../xds-gateway/ops/metrics';
import type { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../../../xds-gateway/tracking/recorder';

type Series = { labels: Record<string, string | number>; value: number };

async function series(metrics: ReturnType<typeof createGatewayMetrics>, name: string): Promise<Series[]> {
  const metric = metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  return (await metric.get()).values as Series[];
}

const hostileGroups = (count: number): string[] => Array.from({ length: count }, (_, i) => `Attacker Cluster/${i}?${'x'.repeat(200)}`);

describe('metric labels from Envoy-supplied strings are bounded', () => {
  test('group labels: the first groups get their sanitised lineage id, the rest share one value', async () => {
    const metrics = createGatewayMetrics({ defaultMetrics: false });
    const groups = hostileGroups(GROUP_LABEL_LIMIT + 50);
    for (const group of groups) {
      metrics.lineageMoved(group);
      metrics.barrier.reopened(group, 0.01);
    }
    metrics.lineageMoved(groups[0] as string);
    const moves = await series(metrics, 'xds_programmed_gateway_lineage_moves_total');
    expect(moves).toHaveLength(GROUP_LABEL_LIMIT + 1);
    const labels = moves.map((s) => String(s.labels['group']));
    for (const label of labels) expect(label === OTHER_LABEL || /^[a-z0-9-]{1,63}$/.test(label)).toBe(true);
    expect(moves.find((s) => s.labels['group'] === lineageGroupId(groups[0] as string))?.value).toBe(2);
    expect(moves.find((s) => s.labels['group'] === OTHER_LABEL)?.value).toBe(50);
    const reopenGroups = new Set((await series(metrics, 'xds_programmed_gateway_barrier_reopen_seconds')).map((s) => s.labels['group']));
    expect(reopenGroups.size).toBe(GROUP_LABEL_LIMIT + 1);
  });

  test('type labels: known types by short name, the first unknown type URLs as given, the rest share one value', async () => {
    const metrics = createGatewayMetrics({ defaultMetrics: false });
    metrics.tracker.requestClassified('ack', CDS_TYPE_URL);
    for (let i = 0; i < UNKNOWN_TYPE_LABEL_LIMIT + 30; i++) {
      metrics.tracker.requestClassified('initial', `type.googleapis.com/attacker.v1.T${i}`);
      metrics.tracker.stuckDetected(`type.googleapis.com/attacker.v1.T${i}`);
    }
    const requests = await series(metrics, 'xds_programmed_gateway_requests_total');
    const types = new Set(requests.map((s) => s.labels['type']));
    expect(types.size).toBe(1 + UNKNOWN_TYPE_LABEL_LIMIT + 1);
    expect(types.has('CDS')).toBe(true);
    expect(types.has('type.googleapis.com/attacker.v1.T0')).toBe(true);
    expect(requests.find((s) => s.labels['type'] === OTHER_LABEL)?.value).toBe(30);
    expect(new Set((await series(metrics, 'xds_programmed_gateway_stuck_detected_total')).map((s) => s.labels['type'])).size).toBe(UNKNOWN_TYPE_LABEL_LIMIT + 1);
  });

  test('gauges: upstream state and lineage seqs of many groups stay bounded; freed groups and retired lineages are not listed', async () => {
    const metrics = createGatewayMetrics({ defaultMetrics: false });
    const groups = hostileGroups(GROUP_LABEL_LIMIT + 50);
    let live = new Set(groups);
    const tracker = {
      snapshot: () => ({
        streams: 0,
        envoys: { connected: 0, disconnected: 0 },
        behind: {},
        upstream: groups.map((group, i) => ({ group, state: i === GROUP_LABEL_LIMIT + 10 ? 'connecting' : 'ready', target: 'cp:1', at: 0 })),
        lineages: groups.filter((group) => live.has(group)).map((group, i) => ({ lineage: `gw.boot.${lineageGroupId(group)}`, group, currentSeq: i + 1 })),
      }),
    } as unknown as EnvoyTracker;
    const recorder = { stats: () => ({}), pressure: () => false } as unknown as Recorder;
    metrics.attach({ tracker, recorder, liveGroups: () => live });

    const ready = await series(metrics, 'xds_programmed_gateway_upstream_ready');
    expect(ready).toHaveLength(GROUP_LABEL_LIMIT + 1);
    // The shared value is 1 only if every group behind it is ready; one is connecting.
    expect(ready.find((s) => s.labels['group'] === OTHER_LABEL)).toMatchObject({ labels: { state: 'connecting' }, value: 0 });
    const seqs = await series(metrics, 'xds_programmed_gateway_lineage_seq');
    expect(seqs).toHaveLength(GROUP_LABEL_LIMIT);

    // The relay freed every group but the first: neither gauge lists them any more.
    live = new Set(groups.slice(0, 1));
    expect(await series(metrics, 'xds_programmed_gateway_upstream_ready')).toHaveLength(1);
    expect(await series(metrics, 'xds_programmed_gateway_lineage_seq')).toHaveLength(1);
  });
});
