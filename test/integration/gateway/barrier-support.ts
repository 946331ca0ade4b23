// What the barrier tests share: a local API server with the CRDs they need, Contour-like control-plane
// replicas (route source, status writer and Lease elector on that API server), and ground truth for barrier watermarks from the
// replicas' own rebuild logs rather than from the gateway: a watermark W(X, G) names, per type, a gateway seq; the upstream versions the gateway
// applied at that seq map to the replica rebuild that produced them, and that rebuild's content
// must contain X at generation G or later.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { KubeLeaseElector } from '../../../infra/local/control-plane/kube-lease-elector';
import { KubeRouteSource } from '../../../infra/local/control-plane/kube-route-source';
import { KubeStatusWriter } from '../../../infra/local/control-plane/kube-status-writer';
import { InMemoryRouteSource, type RouteSource } from '../../../infra/local/control-plane/route-source';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import type { TypeShortName } from '../../../infra/local/control-plane/rebuild-log';
import type { UpstreamAppliedEvent } from '../../../xds-gateway/relay/observer';
import { endpoints, testLogger } from './helpers';

export interface BarrierKube {
  kube: KubeApiServer;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
}

/** A local API server serving `crds` (created as a client would, each answered 201). */
export async function startBarrierKube(prefix: string, crds: readonly object[]): Promise<BarrierKube> {
  const kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
  const kubeconfigPath = kube.kubeconfigPath(mkdtempSync(path.join(os.tmpdir(), prefix)));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  for (const crd of crds) {
    const created = await fetch(`${kube.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(crd) });
    if (created.status !== 201) throw new Error(`creating a CRD answered ${created.status}: ${await created.text()}`);
  }
  return { kube, kubeconfigPath, kubeConfig, custom: kubeConfig.makeApiClient(CustomObjectsApi) };
}

/** A replica's elector on the `xds-control-plane` Lease, with timings short enough for a test. */
function replicaElector(kubeConfig: KubeConfig, replicaId: string): KubeLeaseElector {
  return new KubeLeaseElector({ kubeConfig, namespace: 'default', leaseName: 'xds-control-plane', identity: replicaId, leaseDurationSeconds: 2, renewDeadlineMs: 1500, retryPeriodMs: 100, logger: testLogger });
}

/** A replica's endpoints: the `app` Service at 10.0.0.1:80. */
function replicaEndpoints(): InMemoryRouteSource {
  const source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
  return source;
}

export interface BarrierReplica<Source extends RouteSource> {
  controlPlane: ControlPlane;
  elector: KubeLeaseElector;
  source: Source;
  endpoints: InMemoryRouteSource;
}

export interface BarrierReplicaOptions<Source extends RouteSource> {
  /** The replica's route source, given its Kubernetes one (a test may wrap it, e.g. to freeze it). */
  source(kubeSource: KubeRouteSource): Source;
  /** Added to every rebuild: Contour's rebuilds are not instant, and a slower follower can be behind. */
  extraRebuildDelayMs?: number;
}

/**
 * A Contour-like replica on the API server: HTTPProxies from it (endpoints from replicaEndpoints),
 * `contour` versions, status written while it holds the Lease, its address advertised, and its elector
 * started (competing for the Lease from now on).
 */
export async function startReplica<Source extends RouteSource>(kubeConfig: KubeConfig, replicaId: string, options: BarrierReplicaOptions<Source>): Promise<BarrierReplica<Source>> {
  const endpointsSource = replicaEndpoints();
  const elector = replicaElector(kubeConfig, replicaId);
  const source = options.source(new KubeRouteSource({ kubeConfig, logger: testLogger, endpointsAndSecrets: endpointsSource }));
  const controlPlane = await startControlPlane({
    port: 0,
    replicaId,
    source,
    statusWriter: new KubeStatusWriter({ kubeConfig, logger: testLogger }),
    leaderElector: elector,
    versionScheme: 'contour',
    extraRebuildDelayMs: options.extraRebuildDelayMs ?? 0,
    holdoffMs: 10,
    holdoffMaxMs: 50,
    statusRetryMs: 100,
    logger: testLogger,
  });
  elector.advertise(controlPlane.address);
  await elector.start();
  return { controlPlane, elector, source, endpoints: endpointsSource };
}

/** Stops what startReplica started: the elector first (the Lease is released), then the rest. */
export async function stopReplica(replica: BarrierReplica<RouteSource>): Promise<void> {
  await replica.elector.stop();
  await replica.controlPlane.close();
  await replica.source.close();
  await replica.endpoints.close();
}

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
 * of them reflecting G is enough. A type at seq 0 had no content yet: the first content served of it
 * on the lineage must reflect G.
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
    const onType = applied.filter((e) => e.lineage === mark.lineage && e.typeUrl === typeUrl);
    // Seq 0: the type had no content on this lineage at the watermark (a fresh lineage; relay-group.ts
    // runReopen), so any ACK of it will do, and that is sound only if the first content the lineage
    // ever serves of it reflects G. No content served at all: nothing any Envoy could hold.
    const at = seq === 0 ? Math.min(...onType.map((e) => e.seq).filter((s) => s > 0)) : seq;
    if (seq === 0 && !Number.isFinite(at)) continue;
    const versions = onType.filter((e) => e.seq === at).map((e) => e.upstreamVersion);
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
