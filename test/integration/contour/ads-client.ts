// A raw ADS State-of-the-World client, the way an Envoy talks to Contour: one request per type,
// every response ACKed with its version and nonce (and the same names), the latest response per
// type kept decoded. Tests wait on the decoded resources.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, createDiscoveryClient, openAdsSotw, unpackAny, type DiscoveryResponse, type SotwStream } from '../../../common/xds';
import { waitFor } from '../../support/eventually';

export type Resource = Record<string, unknown>;

export interface AdsClient {
  subscribe(typeUrl: string, names?: string[]): void;
  /** The decoded resources of the latest response of `typeUrl` (undefined before the first). */
  latest(typeUrl: string): { versionInfo: string; resources: Resource[] } | undefined;
  /** Waits until `probe` returns something for the latest resources of `typeUrl`. */
  waitFor<T>(what: string, typeUrl: string, probe: (resources: Resource[]) => T | undefined, timeoutMs?: number): Promise<T>;
  /** Responses received per type, in order (versions only). */
  versions(typeUrl: string): string[];
  close(): void;
}

export function openAdsClient(address: string, node: { id: string; cluster: string }): AdsClient {
  const client = createDiscoveryClient(ADS_SERVICE, address, grpc.credentials.createInsecure());
  const stream: SotwStream = openAdsSotw(client);
  const names = new Map<string, string[]>();
  const latest = new Map<string, { versionInfo: string; resources: Resource[] }>();
  const versions = new Map<string, string[]>();
  let failure: Error | undefined;
  stream.on('data', (response: DiscoveryResponse) => {
    const typeUrl = response.type_url ?? '';
    const versionInfo = response.version_info ?? '';
    latest.set(typeUrl, { versionInfo, resources: (response.resources ?? []).map((resource) => unpackAny(resource)) });
    versions.set(typeUrl, [...(versions.get(typeUrl) ?? []), versionInfo]);
    stream.write({ node, type_url: typeUrl, resource_names: names.get(typeUrl) ?? [], version_info: versionInfo, response_nonce: response.nonce ?? '' });
  });
  stream.on('error', (error: Error) => {
    failure = error;
  });
  return {
    subscribe: (typeUrl, resourceNames = []) => {
      names.set(typeUrl, resourceNames);
      const previous = latest.get(typeUrl);
      stream.write({ node, type_url: typeUrl, resource_names: resourceNames, version_info: previous?.versionInfo ?? '' });
    },
    latest: (typeUrl) => latest.get(typeUrl),
    versions: (typeUrl) => versions.get(typeUrl) ?? [],
    waitFor: async (what, typeUrl, probe, timeoutMs = 20_000) => {
      try {
        return await waitFor(
          what,
          () => {
            if (failure) throw failure;
            const current = latest.get(typeUrl);
            return current ? probe(current.resources) : undefined;
          },
          { timeoutMs, intervalMs: 25 },
        );
      } catch (error) {
        // Say what the client last held: the usual reason is content that differs from the expectation.
        const held = JSON.stringify(latest.get(typeUrl) ?? null).slice(0, 4000);
        throw new Error(`${error instanceof Error ? error.message : String(error)}; latest ${typeUrl}: ${held}`);
      }
    },
    close: () => {
      stream.cancel();
      client.close();
    },
  };
}
