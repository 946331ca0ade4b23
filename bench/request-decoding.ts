// The relay's request deserializer (xds-gateway/relay/request-decoding.ts) against the service's own:
// CPU per request for an Envoy-change's four ACKs (CDS and LDS wildcard, RDS by one name, EDS by every
// cluster's name), each carrying the node as Envoy sends it by default; each Envoy's first request has
// its node read, as the relay does. Three decodings: the whole request; the node decoded only when
// read; and that plus the names shared by content (every Envoy's EDS ACK names the same clusters). Two
// nodes: the simulated fleet's (id, cluster, one metadata field) and one shaped like a real Envoy's
// (build version, client features and the list of extensions it was built with, ~30 KB).
//
//   npm run bench -- request-decoding [--clusters 100] [--envoys 200] [--changes 20]
import { Command } from 'commander';
import { ADS_SERVICE, messageType, serviceDefinition } from '../common/xds/protos';
import { RequestDecoding, SOTW_REQUEST_FIELDS } from '../xds-gateway/relay/request-decoding';
import { positiveInteger } from './support/args';

const TYPES = {
  cds: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  eds: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  lds: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  rds: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
};

interface Options {
  clusters: number;
  envoys: number;
  changes: number;
}

type NodeShape = 'simulated' | 'envoy-like';

function nodeOf(shape: NodeShape, index: number): Record<string, unknown> {
  const base = { id: `envoy-${index}`, cluster: 'ingress', metadata: { fields: { zone: { stringValue: index % 2 === 0 ? 'a' : 'b' } } } };
  if (shape === 'simulated') return base;
  const categories = ['envoy.filters.http', 'envoy.filters.network', 'envoy.filters.listener', 'envoy.transport_sockets.upstream', 'envoy.clusters', 'envoy.access_loggers', 'envoy.tracers', 'envoy.stats_sinks'];
  return {
    ...base,
    locality: { region: 'eu-west-1', zone: index % 2 === 0 ? 'eu-west-1a' : 'eu-west-1b' },
    user_agent_name: 'envoy',
    user_agent_build_version: {
      version: { major_number: 1, minor_number: 34, patch: 2 },
      metadata: { fields: { 'revision.sha': { stringValue: 'c1e7a0c8b7e4f1a2d3c4b5a697887766554433aa' }, 'revision.status': { stringValue: 'Clean' }, 'build.type': { stringValue: 'RELEASE' }, 'ssl.version': { stringValue: 'BoringSSL' } } },
    },
    client_features: ['envoy.config.require-any-fields-contain-struct', 'envoy.lb.does_not_support_overprovisioning', 'envoy.lrs.supports_send_all_clusters', 'xds.config.supports-resource-ttl', 'xds.config.resource-in-sotw'],
    extensions: Array.from({ length: 250 }, (_, extension) => {
      const category = categories[extension % categories.length] as string;
      return { name: `${category}.extension_${extension}`, category, type_urls: [`envoy.extensions.${category.split('.').pop() ?? 'x'}.extension_${extension}.v3.Config`] };
    }),
  };
}

function encode(message: Record<string, unknown>): Buffer {
  const type = messageType('envoy.service.discovery.v3.DiscoveryRequest');
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

/** Every Envoy's four ACKs per change, in the order a control plane pushes (clusters, endpoints, listeners, routes). */
function requests(shape: NodeShape, options: Options): Buffer[] {
  const clusters = Array.from({ length: options.clusters }, (_, index) => `default/app-${index}/8080`);
  const out: Buffer[] = [];
  for (let change = 1; change <= options.changes; change++) {
    for (let envoy = 0; envoy < options.envoys; envoy++) {
      const node = nodeOf(shape, envoy);
      const ack = (typeUrl: string, names: readonly string[]): Buffer => encode({ version_info: `v${change}`, node, resource_names: names, type_url: typeUrl, response_nonce: `${change}-${typeUrl.length}-${envoy}` });
      out.push(ack(TYPES.cds, []), ack(TYPES.eds, clusters), ack(TYPES.lds, []), ack(TYPES.rds, ['ingress_http']));
    }
  }
  return out;
}

/** CPU µs per request; the first request of each Envoy (the first `envoys` of the batch) has its node read. */
function cpuUsPerRequest(deserialize: (bytes: Buffer) => unknown, batch: readonly Buffer[], envoys: number): number {
  const before = process.cpuUsage();
  let index = 0;
  for (const bytes of batch) {
    const request = deserialize(bytes) as { node?: unknown };
    if (index++ < envoys * 4 && index % 4 === 1 && request.node === undefined) throw new Error('a first request without its node');
  }
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / batch.length;
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('request-decoding')
    .option('--clusters <n>', 'clusters named in each EDS ACK', positiveInteger, 100)
    .option('--envoys <n>', 'Envoys (distinct nodes)', positiveInteger, 200)
    .option('--changes <n>', 'changes (four ACKs per Envoy each)', positiveInteger, 20)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const options = program.opts<Options>();
  const original = (bytes: Buffer): unknown => serviceDefinition(ADS_SERVICE)['StreamAggregatedResources']!.requestDeserialize(bytes);
  const rows: Record<string, Record<string, number>> = {};
  const summary: Record<string, unknown> = { clusters: options.clusters, envoys: options.envoys, changes: options.changes };
  for (const shape of ['simulated', 'envoy-like'] as const) {
    const batch = requests(shape, options);
    const meanBytes = Math.round(batch.reduce((sum, bytes) => sum + bytes.length, 0) / batch.length);
    // Warm-up, then alternately, best of three; fresh decodings each round (nothing shared from the last).
    cpuUsPerRequest(original, batch.slice(0, 400), 0);
    const best = { whole: Number.POSITIVE_INFINITY, lazy: Number.POSITIVE_INFINITY, shared: Number.POSITIVE_INFINITY };
    for (let round = 0; round < 3; round++) {
      best.whole = Math.min(best.whole, cpuUsPerRequest(original, batch, options.envoys));
      best.lazy = Math.min(best.lazy, cpuUsPerRequest(new RequestDecoding({ minNamesBytes: Number.POSITIVE_INFINITY }).deserializer(original, SOTW_REQUEST_FIELDS), batch, options.envoys));
      best.shared = Math.min(best.shared, cpuUsPerRequest(new RequestDecoding().deserializer(original, SOTW_REQUEST_FIELDS), batch, options.envoys));
    }
    const us = (value: number): number => Math.round(value * 10) / 10;
    const ratio = (value: number): number => Math.round((value / best.whole) * 100) / 100;
    rows[`${shape} node (${meanBytes} B per request)`] = {
      'µs / request, decoded whole': us(best.whole),
      'node when read': us(best.lazy),
      'node when read, names shared': us(best.shared),
      'ratio (node)': ratio(best.lazy),
      'ratio (node, names)': ratio(best.shared),
    };
    summary[shape] = { meanBytes, wholeUs: us(best.whole), lazyUs: us(best.lazy), sharedUs: us(best.shared), lazyRatio: ratio(best.lazy), sharedRatio: ratio(best.shared) };
  }
  console.log(`request deserialization, ${options.envoys} Envoys × ${options.changes} changes × 4 ACKs, EDS naming ${options.clusters} clusters (best of 3, CPU)`);
  console.table(rows);
  console.log(JSON.stringify(summary));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
