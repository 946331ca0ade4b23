// Ground truth for barrier watermarks, from the replicas' own rebuild logs rather than from the
// gateway: a watermark W(X, G) names, per type, a gateway seq; the upstream versions the gateway
// applied at that seq map to the replica rebuild that produced them, and that rebuild's content
// must contain X at generation G or later.
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { TypeShortName } from '../../../infra/local/control-plane/rebuild-log';
import type { UpstreamAppliedEvent } from '../../../xds-gateway/relay/observer';

const TYPES: Record<string, TypeShortName> = { [LDS_TYPE_URL]: 'LDS', [RDS_TYPE_URL]: 'RDS', [CDS_TYPE_URL]: 'CDS', [EDS_TYPE_URL]: 'EDS' };

export interface WatermarkSeen {
  lineage: string;
  types: Record<string, number>;
}

/** Whether upstream `version` of `type`, from whichever replica produced it, reflects `source`@G. */
function reflects(controlPlanes: readonly ControlPlane[], type: TypeShortName, version: string, source: string, generation: number): boolean {
  for (const controlPlane of controlPlanes) {
    const record = controlPlane.rebuildLog.all().find((r) => r.versions[type] === version);
    if (record === undefined) continue;
    return record.contained[type].some((contained) => {
      const at = contained.lastIndexOf('@');
      return contained.slice(0, at) === source && Number(contained.slice(at + 1)) >= generation;
    });
  }
  throw new Error(`no replica produced ${type} version ${version}`);
}

/**
 * Throws unless, for each type the object's generation governs (not EDS: endpoints are not part of an
 * HTTPProxy's spec), the content served at the watermark's seq reflects `source`@G. A gateway seq can
 * stand for several upstream versions (the relay keeps the seq when new bytes are identical), so one
 * of them reflecting G is enough.
 */
export function expectWatermarkNotEarly(
  controlPlanes: readonly ControlPlane[],
  applied: readonly UpstreamAppliedEvent[],
  mark: WatermarkSeen,
  source: string,
  generation: number,
): void {
  for (const [typeUrl, type] of Object.entries(TYPES)) {
    if (type === 'EDS') continue;
    const seq = mark.types[typeUrl];
    if (seq === undefined) throw new Error(`watermark on ${mark.lineage} has no ${type} version`);
    const versions = applied.filter((e) => e.lineage === mark.lineage && e.typeUrl === typeUrl && e.seq === seq).map((e) => e.upstreamVersion);
    if (versions.length === 0) throw new Error(`nothing was applied on ${mark.lineage} at ${type} seq ${seq}`);
    if (!versions.some((version) => reflects(controlPlanes, type, version, source, generation))) {
      const dump = {
        generation, mark, type,
        applied: applied.map((e) => ({ t: TYPES[e.typeUrl], lineage: e.lineage, seq: e.seq, changed: e.changed, v: e.upstreamVersion, epoch: e.upstreamEpoch })),
        logs: controlPlanes.map((c) => c.rebuildLog.all().map((rec) => ({ r: rec.replicaId, seq: rec.seq, v: rec.versions[type], c: rec.contained[type] }))),
      };
      throw new Error(`watermark too early: ${JSON.stringify(dump)}`);
    }
  }
}
