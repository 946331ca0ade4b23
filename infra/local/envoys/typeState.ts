// The xDS client protocol of one resource type, as a plain state machine (no I/O, no clock):
// what to send first, how to answer a response (ACK or NACK), and what the Envoy holds after an
// ACK. The stream layer (simEnvoy.ts) decides when to send; this file decides what.
//
// Protocol rules followed (envoyproxy xDS protocol doc, "ACK/NACK and resource type instance
// version", "Incremental xDS"):
// - SotW ACK: version_info = the response's version_info, response_nonce = its nonce.
// - SotW NACK: version_info = the last version *accepted* (not the rejected one), response_nonce =
//   the rejected response's nonce, error_detail set.
// - SotW (re)connect: the first request carries the last accepted version_info and an empty nonce.
// - Delta ACK/NACK: response_nonce = the response's nonce; a NACK adds error_detail.
// - Delta (re)connect: initial_resource_versions = every resource held, name -> version.
// - Delta applies `resources` as upserts and `removed_resources` as deletions; SotW replaces.
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
} from '../../../common/xds';
import { NACK_STATUS_CODE, nackMessageFor, type NackRule } from './behaviour';
import type { ResourceVersion } from './groundTruth';
import { sharedSotwNames, sotwResourceName, type NamedResource, type SotwNameCache } from './resourceNames';

export type XdsProtocol = 'sotw' | 'delta';

/** What a response calls for, computed when it arrives and sent after the ACK delay. */
export interface ResponsePlan<Request> {
  outcome: 'ack' | 'nack';
  /** The request to send (ACK or NACK), without `node` (the stream layer adds it). */
  request: Request;
  versionInfo: string;
  nonce: string;
  resources: readonly ResourceVersion[];
  removed: string[];
  /** NACK only. */
  message?: string;
}

export class TypeProtocolState {
  /** Names subscribed to; empty = wildcard (all resources of the type). */
  resourceNames: string[];
  /** version_info (SotW) / system_version_info (Delta) of the last ACKed response. */
  acceptedVersionInfo: string | undefined;
  /** Delta: resources held after the last ACK, name -> version (the source of initial_resource_versions). */
  private readonly deltaHeld = new Map<string, string>();
  /**
   * SotW: the last ACKed response's resource list, kept as the (interned, shared) array itself: with
   * thousands of Envoys on the same config a Map per Envoy would dominate memory.
   */
  private sotwHeld: readonly ResourceVersion[] = [];
  /** Nonce of the latest response received on the current stream (set on arrival, not when answered). */
  lastNonce = '';

  constructor(
    readonly typeUrl: string,
    resourceNames: readonly string[] = [],
    /** Where names of SotW resource lists are cached (shared by the process's simulated Envoys). */
    private readonly names: SotwNameCache = sharedSotwNames,
  ) {
    this.resourceNames = [...resourceNames];
  }

  /** Called when a new stream starts: nonces do not survive a stream. */
  resetStream(): void {
    this.lastNonce = '';
  }

  /** Called when a response arrives, before any ACK delay. */
  noteResponse(nonce: string): void {
    this.lastNonce = nonce;
  }

  sotwInitialRequest(): DiscoveryRequest {
    return {
      type_url: this.typeUrl,
      resource_names: [...this.resourceNames],
      version_info: this.acceptedVersionInfo ?? '',
      response_nonce: '',
    };
  }

  /** A subscription change on an open SotW stream: the full new list, last accepted version, last nonce. */
  sotwSubscriptionRequest(resourceNames: readonly string[]): DiscoveryRequest {
    this.resourceNames = [...resourceNames];
    return {
      type_url: this.typeUrl,
      resource_names: [...this.resourceNames],
      version_info: this.acceptedVersionInfo ?? '',
      response_nonce: this.lastNonce,
    };
  }

  /**
   * Decides how to answer a SotW response. Resources that cannot be parsed are a NACK, as a real
   * Envoy rejects config it cannot decode. Does not change what is held (see `applySotwAck`).
   */
  planSotw(response: DiscoveryResponse, rules: readonly NackRule[]): ResponsePlan<DiscoveryRequest> {
    const versionInfo = response.version_info ?? '';
    const nonce = response.nonce ?? '';
    const list = response.resources ?? [];
    let resources: readonly ResourceVersion[];
    let message: string | undefined;
    // The same list as the last one read for this type (byte for byte) has the same names and passed
    // the same checks: see SotwNameCache.
    const cached = this.names.lookup(this.typeUrl, list) === undefined ? undefined : this.names.versioned(this.typeUrl, versionInfo);
    if (cached !== undefined) {
      resources = cached;
    } else {
      const read: NamedResource[] = [];
      const built: ResourceVersion[] = [];
      resources = built;
      for (const [index, any] of list.entries()) {
        try {
          const named = sotwResourceName(any);
          read.push(named);
          built.push({ name: named.name, version: named.version ?? versionInfo });
        } catch (error) {
          message = `resource ${index} of ${this.typeUrl} could not be decoded: ${(error as Error).message}`;
          break;
        }
        if (any.type_url !== this.typeUrl && !any.type_url?.endsWith('envoy.service.discovery.v3.Resource')) {
          message = `resource ${index} has type ${any.type_url ?? '(none)'}, expected ${this.typeUrl}`;
          break;
        }
      }
      if (message === undefined) this.names.store(this.typeUrl, list, read);
    }
    message ??= nackMessageFor(rules, this.typeUrl, resources.map((r) => r.name));
    if (message !== undefined) {
      return {
        outcome: 'nack',
        request: {
          type_url: this.typeUrl,
          resource_names: [...this.resourceNames],
          version_info: this.acceptedVersionInfo ?? '',
          response_nonce: nonce,
          error_detail: { code: NACK_STATUS_CODE, message },
        },
        versionInfo,
        nonce,
        resources,
        removed: [],
        message,
      };
    }
    return {
      outcome: 'ack',
      request: {
        type_url: this.typeUrl,
        resource_names: [...this.resourceNames],
        version_info: versionInfo,
        response_nonce: nonce,
      },
      versionInfo,
      nonce,
      resources,
      removed: [],
    };
  }

  /** Resources held after the last ACK: name -> version (Delta: per resource; SotW: version_info). */
  heldResources(): ReadonlyMap<string, string> {
    if (this.deltaHeld.size > 0 || this.sotwHeld.length === 0) return this.deltaHeld;
    return new Map(this.sotwHeld.map((r) => [r.name, r.version]));
  }

  /** Applies an ACKed SotW response: the response is the complete set for this type. */
  applySotwAck(plan: ResponsePlan<DiscoveryRequest>): void {
    this.acceptedVersionInfo = plan.versionInfo;
    this.sotwHeld = plan.resources;
  }

  deltaInitialRequest(): DeltaDiscoveryRequest {
    const initialResourceVersions: Record<string, string> = {};
    for (const [name, version] of this.deltaHeld) initialResourceVersions[name] = version;
    return {
      type_url: this.typeUrl,
      resource_names_subscribe: [...this.resourceNames],
      initial_resource_versions: initialResourceVersions,
      response_nonce: '',
    };
  }

  /** A Delta subscription change: only the differences are sent. */
  deltaSubscriptionRequest(resourceNames: readonly string[]): DeltaDiscoveryRequest {
    const before = new Set(this.resourceNames);
    const after = new Set(resourceNames);
    this.resourceNames = [...resourceNames];
    return {
      type_url: this.typeUrl,
      resource_names_subscribe: [...after].filter((name) => !before.has(name)),
      resource_names_unsubscribe: [...before].filter((name) => !after.has(name)),
    };
  }

  planDelta(response: DeltaDiscoveryResponse, rules: readonly NackRule[]): ResponsePlan<DeltaDiscoveryRequest> {
    const versionInfo = response.system_version_info ?? '';
    const nonce = response.nonce ?? '';
    const resources: ResourceVersion[] = [];
    let message: string | undefined;
    for (const [index, resource] of (response.resources ?? []).entries()) {
      if (!resource.name) {
        message = `resource ${index} of ${this.typeUrl} has no name`;
        break;
      }
      if (resource.resource && resource.resource.type_url !== this.typeUrl) {
        message = `resource ${resource.name} has type ${resource.resource.type_url}, expected ${this.typeUrl}`;
        break;
      }
      resources.push({ name: resource.name, version: resource.version ?? '' });
    }
    const removed = [...(response.removed_resources ?? [])];
    message ??= nackMessageFor(rules, this.typeUrl, resources.map((r) => r.name));
    const request: DeltaDiscoveryRequest = { type_url: this.typeUrl, response_nonce: nonce };
    if (message !== undefined) {
      return {
        outcome: 'nack',
        request: { ...request, error_detail: { code: NACK_STATUS_CODE, message } },
        versionInfo,
        nonce,
        resources,
        removed,
        message,
      };
    }
    return { outcome: 'ack', request, versionInfo, nonce, resources, removed };
  }

  applyDeltaAck(plan: ResponsePlan<DeltaDiscoveryRequest>): void {
    this.acceptedVersionInfo = plan.versionInfo;
    for (const resource of plan.resources) this.deltaHeld.set(resource.name, resource.version);
    for (const name of plan.removed) this.deltaHeld.delete(name);
  }
}
