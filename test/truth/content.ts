// What each response the simulated Envoys received actually contained, by object generation.
// The fleet's GroundTruth records names and version strings only; invariant 1 needs to know whether
// the config an Envoy accepted *contained X@G*. So the checker taps the fleet's wire codec (the one
// shared singleton, before any stream opens) and reads the provenance stamps
// (`filter_metadata["xds-programmed.dev/sources"]`, docs/PROVENANCE.md) out of every resource the
// Envoys received. The stamps are written by the reference control plane and relayed byte for byte,
// so this is what the Envoy got, independent of the gateway's own bookkeeping.
//
// SotW: keyed by type URL + version_info: within one gateway lineage a version names exactly one
// content (docs/ARCHITECTURE.md, "Gateway version"), and lineages differ per gateway boot.
// Delta: a response carries only changes, so content is kept per resource, keyed by type URL, name
// and the resource's own version (the seq at which the gateway last changed it, lineage-encoded: one
// version names one content). What a Delta Envoy holds is rebuilt from its ground truth (upserts and
// removals of every response it accepted) and looked up here resource by resource.
import { readProvenance, unpackAny, type AnyResource, type DeltaDiscoveryResponse, type DiscoveryResponse } from '../../common/xds';
import { discoveryCodec } from '../../infra/local/envoys';

export class ResponseContents {
  private readonly byVersion = new Map<string, ReadonlySet<string>>();
  private readonly byResource = new Map<string, ReadonlySet<string>>();
  /** Responses whose resources could not be decoded (reported as violations, never ignored). */
  readonly undecodable: string[] = [];

  /** The `group/kind/ns/name@generation` sources in the response of `typeUrl` at `versionInfo`. */
  sources(typeUrl: string, versionInfo: string): ReadonlySet<string> | undefined {
    return this.byVersion.get(`${typeUrl}|${versionInfo}`);
  }

  /** Delta: the sources stamped on resource `name` of `typeUrl` at its own `version`. */
  resourceSources(typeUrl: string, name: string, version: string): ReadonlySet<string> | undefined {
    return this.byResource.get(`${typeUrl}|${name}|${version}`);
  }

  recordDelta(response: DeltaDiscoveryResponse): void {
    const typeUrl = response.type_url ?? '';
    for (const resource of response.resources ?? []) {
      const key = `${typeUrl}|${resource.name ?? ''}|${resource.version ?? ''}`;
      if (this.byResource.has(key)) continue;
      try {
        // A Delta entry without a body (a name-only update) carries no content to record.
        if (resource.resource) this.byResource.set(key, new Set(resourceSources(resource.resource)));
      } catch (error) {
        this.undecodable.push(`${key}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  record(response: DiscoveryResponse): void {
    const key = `${response.type_url ?? ''}|${response.version_info ?? ''}`;
    if (this.byVersion.has(key)) return;
    try {
      this.byVersion.set(key, responseSources(response));
    } catch (error) {
      this.undecodable.push(`${key}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/** Every `group/kind/ns/name@generation` stamped in a SotW response; throws if a resource cannot be decoded. */
export function responseSources(response: DiscoveryResponse): Set<string> {
  const sources = new Set<string>();
  for (const resource of response.resources ?? []) for (const source of resourceSources(resource)) sources.add(source);
  return sources;
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
let untappedSotwDecode: ((bytes: Buffer) => DiscoveryResponse) | undefined;

/**
 * Decodes a SotW response without recording it in the fleet's shared content (for decoders of other
 * clients' traffic, ./real-clients.ts: a named subscription's response would shadow the wildcard
 * content of the same version).
 */
export function decodeSotwResponseUntapped(bytes: Buffer): DiscoveryResponse {
  return (untappedSotwDecode ?? discoveryCodec().decodeSotwResponse)(bytes);
}

/**
 * Installs the tap once per process (the codec is a process-wide singleton) and returns the shared
 * record. Must run before the fleet opens its first stream: streams capture the decoder at open.
 */
export function tapFleetResponses(): ResponseContents {
  if (installed) return installed;
  const contents = new ResponseContents();
  const codec = discoveryCodec();
  const decode = codec.decodeSotwResponse;
  untappedSotwDecode = decode;
  codec.decodeSotwResponse = (bytes: Buffer): DiscoveryResponse => {
    const response = decode(bytes);
    contents.record(response);
    return response;
  };
  const decodeDelta = codec.decodeDeltaResponse;
  codec.decodeDeltaResponse = (bytes: Buffer): DeltaDiscoveryResponse => {
    const response = decodeDelta(bytes);
    contents.recordDelta(response);
    return response;
  };
  installed = contents;
  return contents;
}
