// A slow link between one xDS client and its server, for ADS State-of-the-World streams: bytes are
// relayed untouched in both directions, but a client request that adds resource names (a route's new
// cluster, that cluster's endpoints) reaches the server `delayMs` later, and everything the client
// sends after it waits behind it, in order, as on a congested connection.
//
// Why: a client asks for a route's new cluster in a request after the one ACKing the route. How long
// after depends on the client — gRPC C-core 1.51's CDS watch started only with its next RPC on an idle
// channel, which made the gap up to seconds; 1.85 subscribes at once. The slow link makes that gap
// long and deterministic with any client, so a check of "programmed" that ignores the names a client
// has yet to ask for fails every time, not by luck of timing.
import { discoveryCodec } from '../../infra/local/envoys';
import { AdsByteRelay } from './ads-byte-relay';

export class XdsSlowLink {
  private readonly relay: AdsByteRelay;
  /** Requests delayed so far (the test checks the link did its part). */
  delayed = 0;

  constructor(target: string, delayMs: number) {
    this.relay = new AdsByteRelay(target, () => {
      const codec = discoveryCodec();
      const names = new Map<string, ReadonlySet<string>>();
      return {
        request: (bytes) => {
          let added = false;
          try {
            const request = codec.decodeSotwRequest(bytes);
            const typeUrl = request.type_url ?? '';
            const next = new Set(request.resource_names ?? []);
            const previous = names.get(typeUrl);
            added = previous !== undefined && [...next].some((name) => !previous.has(name));
            names.set(typeUrl, next);
          } catch {
            // Not ours to judge: relayed as it is.
          }
          if (!added) return 0;
          this.delayed++;
          return delayMs;
        },
        response: () => undefined,
        ended: () => undefined,
      };
    });
  }

  start(): Promise<string> {
    return this.relay.start();
  }

  close(): void {
    this.relay.close();
  }
}
