// Provenance watermarks: the reference control plane stamps sources; the gateway must record, per
// object generation, exactly the first gateway seq whose whole stamped config (LDS, CDS, RDS)
// reflects it. Checked against the control plane's rebuild log mapped through the gateway's seqs.
import { CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, type ObjectRef } from '../../../common/core';
import type { TypeShortName } from '../../../infra/local/control-plane/rebuild-log';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { UpstreamAppliedEvent } from '../../../xds-gateway/relay/observer';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { adsSpec, endpoints, eventually, newFleet, proxy, startTestGateway, testLogger } from './helpers';

const STAMPED: Record<string, TypeShortName> = { [LDS_TYPE_URL]: 'LDS', [CDS_TYPE_URL]: 'CDS', [RDS_TYPE_URL]: 'RDS' };
const APP: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'app' };

let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let gateway: Gateway;
let fleet: Fleet;
const applied: UpstreamAppliedEvent[] = [];

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: testLogger });
  source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1'));
  source.applyEndpoints(endpoints('other', '10.0.0.2'));
  source.applyProxy(proxy('app', 'app.example.com', 'app'));
  source.applyProxy(proxy('other', 'other.example.com', 'other'));
  controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-1', source, versionScheme: 'counter', provenance: true, logger: testLogger, holdoffMs: 5, holdoffMaxMs: 20 });
  await controlPlane.rebuildNow();
  gateway = await startTestGateway({ upstream: `127.0.0.1:${controlPlane.port}`, table: 'gw-provenance', 'dynamodb-endpoint': dynamo.endpoint, watermarks: 'provenance' });
  gateway.tracker.onUpstreamApplied((e) => applied.push(e));
  fleet = newFleet(gateway.xdsPort);
  // Wildcard: the checks below expect LDS, CDS and RDS on the lineage before the first change. An
  // Envoy-model client asks LDS only once its clusters are warm and RDS after that, so a change made
  // meanwhile gets a watermark without those types (absent types reflect any later version).
  fleet.addMany(2, adsSpec({ node: (i) => ({ id: `prov-${i}`, cluster: 'edge' }), subscriptionModel: 'wildcard' }), 0);
  fleet.connectAll();
});

afterAll(async () => {
  fleet.close();
  await gateway.close();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

/** The upstream version of `typeUrl` current at gateway seq `seq` on `lineage`. */
function upstreamVersionAt(lineage: string, typeUrl: string, seq: number): string | undefined {
  let found: string | undefined;
  for (const e of applied) if (e.lineage === lineage && e.typeUrl === typeUrl && e.changed && e.seq <= seq) found = e.upstreamVersion;
  return found;
}

/** Whether the control plane's content of `type` at `version` reflects app at `generation` or later. */
function reflects(type: TypeShortName, version: string, generation: number): boolean {
  const record = controlPlane.rebuildLog.all().find((r) => r.versions[type] === version);
  if (record === undefined) return false;
  return record.contained[type].some((source) => {
    const at = source.lastIndexOf('@');
    return source.slice(0, at) === 'projectcontour.io/HTTPProxy/default/app' && Number(source.slice(at + 1)) >= generation;
  });
}

/**
 * Every stamped type's content at `seq` reflects app@G. A type with no version yet on the lineage
 * counts as reflecting it (allowAbsent): every version it will get on this lineage comes later
 * from the upstream, and the watermark lists no version for it, so any ACK of it satisfies it.
 */
function wholeConfigReflects(lineage: string, seq: number, generation: number, allowAbsent = false): boolean {
  return Object.entries(STAMPED).every(([typeUrl, type]) => {
    const version = upstreamVersionAt(lineage, typeUrl, seq);
    return version === undefined ? allowAbsent : reflects(type, version, generation);
  });
}

async function watermarkOf(generation: number): Promise<{ lineage: string; seq: number; types: Record<string, number> }> {
  return eventually(async () => {
    const read = await gateway.store.getObjectGeneration(APP, generation);
    if (read.status !== 'found') return undefined;
    const [lineage, mark] = Object.entries(read.value.watermarks)[0] ?? [];
    return lineage === undefined || mark === undefined ? undefined : { lineage, seq: mark.seq, types: mark.types };
  }, `watermark of app@${generation}`);
}

test('each generation gets the first seq whose whole stamped config reflects it', async () => {
  const first = await watermarkOf(1);
  expect(wholeConfigReflects(first.lineage, first.seq, 1, true)).toBe(true);
  for (const typeUrl of Object.keys(STAMPED)) {
    if (first.types[typeUrl] === undefined) expect(upstreamVersionAt(first.lineage, typeUrl, first.seq)).toBeUndefined();
  }

  for (const [generation, prefix] of [[2, '/v2'], [3, '/v3'], [4, '/v4']] as const) {
    expect(source.applyProxy(proxy('app', 'app.example.com', 'app', 8080, { prefix }))).toBe(generation);
    const mark = await watermarkOf(generation);
    expect(mark.lineage).toBe(first.lineage);
    // Safe: every stamped type's version at the watermark reflects G...
    expect(wholeConfigReflects(mark.lineage, mark.seq, generation)).toBe(true);
    for (const [typeUrl, type] of Object.entries(STAMPED)) {
      const version = applied.find((e) => e.lineage === mark.lineage && e.typeUrl === typeUrl && e.changed && e.seq === mark.types[typeUrl])?.upstreamVersion;
      expect(version !== undefined && reflects(type, version, generation)).toBe(true);
    }
    // ...and exact: one seq earlier it did not.
    expect(wholeConfigReflects(mark.lineage, mark.seq - 1, generation)).toBe(false);
  }
  // The other proxy never changed: only generation 1 exists for it.
  const other = await gateway.store.getObjectGeneration({ ...APP, name: 'other' }, 2);
  expect(other.status).toBe('missing');
});
