// What each response the simulated Envoys received actually contained, by object generation.
// The fleet's GroundTruth records names and version strings only; invariant 1 needs to know whether
// the config an Envoy accepted *contained X@G*. So the checker taps the fleet's wire codec (the one
// shared singleton, before any stream opens) and reads the provenance stamps
// (`filter_metadata["xds-programmed.dev/sources"]`, docs/PROVENANCE.md) out of every resource the
// Envoys received. The stamps are written by the reference control plane and relayed byte for byte,
// so this is what the Envoy got, independent of the gateway's own bookkeeping.
//
// Keyed by type URL + SotW version_info: within one gateway lineage a version names exactly one
// content (docs/ARCHITECTURE.md, "Gateway version"), and lineages differ per gateway boot.
import { readProvenance, unpackAny, type AnyResource, type DiscoveryResponse } from '../../common/xds';
import { discoveryCodec } from '../../infra/local/envoys';

export class ResponseContents {
  private readonly byVersion = new Map<string, ReadonlySet<string>>();
  /** Responses whose resources could not be decoded (reported as violations, never ignored). */
  readonly undecodable: string[] = [];

  /** The `group/kind/ns/name@generation` sources in the response of `typeUrl` at `versionInfo`. */
  sources(typeUrl: string, versionInfo: string): ReadonlySet<string> | undefined {
    return this.byVersion.get(`${typeUrl}|${versionInfo}`);
  }

  record(response: DiscoveryResponse): void {
    const key = `${response.type_url ?? ''}|${response.version_info ?? ''}`;
    if (this.byVersion.has(key)) return;
    const sources = new Set<string>();
    try {
      for (const resource of response.resources ?? []) for (const source of resourceSources(resource)) sources.add(source);
      this.byVersion.set(key, sources);
    } catch (error) {
      this.undecodable.push(`${key}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function resourceSources(resource: AnyResource): string[] {
  const decoded = unpackAny(resource);
  const sources = readProvenance(decoded['metadata']);
  // A RouteConfiguration stamps each VirtualHost (one per HTTPProxy) as well as itself.
  const hosts = decoded['virtual_hosts'];
  if (Array.isArray(hosts)) {
    for (const host of hosts) {
      if (host !== null && typeof host === 'object') sources.push(...readProvenance((host as Record<string, unknown>)['metadata']));
    }
  }
  return sources;
}

let installed: ResponseContents | undefined;

/**
 * Installs the tap once per process (the codec is a process-wide singleton) and returns the shared
 * record. Must run before the fleet opens its first stream: streams capture the decoder at open.
 */
export function tapFleetResponses(): ResponseContents {
  if (installed) return installed;
  const contents = new ResponseContents();
  const codec = discoveryCodec();
  const decode = codec.decodeSotwResponse;
  codec.decodeSotwResponse = (bytes: Buffer): DiscoveryResponse => {
    const response = decode(bytes);
    contents.record(response);
    return response;
  };
  installed = contents;
  return contents;
}
