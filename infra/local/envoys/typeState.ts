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
// - A by-name subscription takes only the resources it asked for ("the client will silently ignore
//   any supplied resources that were not explicitly requested", "How the client specifies what
//   resources to return"); a SotW response of such a type may carry only some of them, and the others
//   are kept ("Grouping Resources into Responses": only Listener and Cluster are state of the world).
// - A subscription change on a SotW stream carries the nonce of the last response *answered*: Envoy
//   sets response_nonce once it has processed a response, and the ACK delay here is that processing.
// - A NACKed response is applied in part, as Envoy does (behaviour.ts `NackScope`): CDS and LDS apply
//   every resource no rule rejects and keep the previous version of each rejected one; RDS and EDS
//   apply, in response order, the resources before the first rejected one. A response rejected while
//   decoding (an unreadable resource, a wrong type) applies nothing. The NACK still carries the last
//   accepted version_info (SotW), and Delta records no resource versions from it: Envoy updates its
//   subscription state only after a response applied without error, so initial_resource_versions on a
//   reconnect leave out what a NACKed response changed.
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
} from '../../../common/xds';
import { NACK_STATUS_CODE, nackMessageOf, nackScopeOf, rejectionsFor, type NackMessageFormat, type NackRule, type Rejection } from './behaviour';
import type { ResourceVersion } from './groundTruth';
import { sharedSotwNames, sotwResourceName, type NamedResource, type SotwNameCache } from './resourceNames';
import { nameSetOf, type AnyLike } from './referencedNames';
import type { DeltaUpsert } from './subscriptionModel';


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
  /** SotW ACK: the accepted resources themselves (only those asked for), for the subscription model. */
  anys?: readonly AnyLike[];
  /** Delta ACK: the accepted upserts (only those asked for), for the subscription model. */
  upserts?: readonly DeltaUpsert[];
  /** NACK by a rule: the names the message blames (see behaviour.ts `rejectionsFor`). */
  rejected?: readonly string[];
  /** NACK by a rule: what the Envoy applied of the response anyway; absent when nothing. */
  partial?: PartialApplication;
}

/** The part of a NACKed response an Envoy applies (see the top of this file). */
export interface PartialApplication {
  /** Resources applied, at the versions the response gave them. */
  applied: readonly ResourceVersion[];
  /** The same resources with their Any objects (SotW ones too), for the subscription model and onAccepted. */
  upserts: readonly DeltaUpsert[];
  /** Names removed: SotW wildcard CDS/LDS, held names the response left out; Delta CDS/LDS, its removed_resources. */
  removed: readonly string[];
}

export interface TypeSubscriptionOptions {
  /**
   * Subscribed by name: only the resources in `resourceNames` are taken, and an empty list asks for
   * nothing (not a wildcard). Default: true when `resourceNames` is non-empty.
   */
  named?: boolean;
  /** Whether the type is asked for at all yet (a model may start it later). Default true. */
  requested?: boolean;
}

/** Per shared resource list and name list: the requested subset (see `TypeProtocolState.planSotw`). */
const requestedSubsets = new WeakMap<readonly ResourceVersion[], { names: readonly string[]; resources: readonly ResourceVersion[]; keep: readonly number[] | undefined }>();

export class TypeProtocolState {
  /**
   * Names subscribed to; empty = wildcard unless `named`. Kept as the array given (subscription models
   * hand out interned arrays, which the requested-subset cache is keyed by).
   */
  resourceNames: readonly string[];
  /** See TypeSubscriptionOptions.named. */
  named: boolean;
  /** See TypeSubscriptionOptions.requested. */
  requested: boolean;
  /** version_info (SotW) / system_version_info (Delta) of the last ACKed response. */
  acceptedVersionInfo: string | undefined;
  /** Delta: resources held after the last ACK, name -> version (the source of initial_resource_versions). */
  private readonly deltaHeld = new Map<string, string>();
  /**
   * Delta: where what is applied differs from `deltaHeld` because a NACKed response was applied in part:
   * name -> the applied version, or null for a name it removed. Undefined while they agree (always, for
   * an Envoy that never NACKed), so the common case keeps one map.
   */
  private deltaApplied: Map<string, string | null> | undefined;
  /**
   * SotW: the last ACKed response's resource list, kept as the (interned, shared) array itself: with
   * thousands of Envoys on the same config a Map per Envoy would dominate memory.
   */
  private sotwHeld: readonly ResourceVersion[] = [];
  /** SotW by name: resources held from earlier responses that the last one did not carry. */
  private sotwCarried: ReadonlyMap<string, string> = new Map();
  /** Nonce of the latest response received on the current stream (set on arrival, not when answered). */
  lastNonce = '';
  /** Nonce of the latest response ACKed or NACKed on the current stream. */
  answeredNonce = '';

  constructor(
    readonly typeUrl: string,
    resourceNames: readonly string[] = [],
    /** Where names of SotW resource lists are cached (shared by the process's simulated Envoys). */
    private readonly names: SotwNameCache = sharedSotwNames,
    options: TypeSubscriptionOptions = {},
  ) {
    this.resourceNames = Object.isFrozen(resourceNames) ? resourceNames : [...resourceNames];
    this.named = options.named ?? resourceNames.length > 0;
    this.requested = options.requested ?? true;
  }

  /** Called when a new stream starts: nonces do not survive a stream. */
  resetStream(): void {
    this.lastNonce = '';
    this.answeredNonce = '';
  }

  /**
   * Records that the response with `nonce` was NACKed and applies what Envoy applies of it anyway
   * (`plan.partial`). The accepted version stays (its ACK path is `applySotwAck`/`applyDeltaAck`).
   */
  applyNack(plan: ResponsePlan<unknown>): void {
    this.answeredNonce = plan.nonce;
    const partial = plan.partial;
    if (partial === undefined) return;
    if ('version_info' in (plan.request as DiscoveryRequest | DeltaDiscoveryRequest)) {
      const held = new Map(this.heldResources());
      for (const name of partial.removed) held.delete(name);
      for (const r of partial.applied) held.set(r.name, r.version);
      this.sotwHeld = Object.freeze([...held].map(([name, version]) => ({ name, version })));
      this.sotwCarried = new Map();
      return;
    }
    const applied = this.deltaApplied ?? new Map<string, string | null>();
    const note = (name: string, version: string | null): void => {
      if ((this.deltaHeld.get(name) ?? null) === version) applied.delete(name);
      else applied.set(name, version);
    };
    for (const r of partial.applied) note(r.name, r.version);
    for (const name of partial.removed) note(name, null);
    this.deltaApplied = applied.size > 0 ? applied : undefined;
  }

  /** Called when a response arrives, before any ACK delay. */
  noteResponse(nonce: string): void {
    this.lastNonce = nonce;
  }

  sotwInitialRequest(): DiscoveryRequest {
    return {
      type_url: this.typeUrl,
      resource_names: this.resourceNames,
      version_info: this.acceptedVersionInfo ?? '',
      response_nonce: '',
    };
  }

  /** A subscription change on an open SotW stream: the full new list, last accepted version, last answered nonce. */
  sotwSubscriptionRequest(resourceNames: readonly string[]): DiscoveryRequest {
    this.resourceNames = Object.isFrozen(resourceNames) ? resourceNames : [...resourceNames];
    return {
      type_url: this.typeUrl,
      resource_names: this.resourceNames,
      version_info: this.acceptedVersionInfo ?? '',
      response_nonce: this.answeredNonce,
    };
  }

  /**
   * Decides how to answer a SotW response. Resources that cannot be parsed are a NACK, as a real
   * Envoy rejects config it cannot decode. Does not change what is held (see `applySotwAck`).
   */
  planSotw(response: DiscoveryResponse, rules: readonly NackRule[], format: NackMessageFormat = 'rule'): ResponsePlan<DiscoveryRequest> {
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
    let anys: readonly AnyLike[] = list;
    if (message === undefined && this.named) ({ resources, anys } = this.requestedSubset(resources, list));
    let rejections: Rejection[] = [];
    if (message === undefined) {
      rejections = rejectionsFor(rules, this.typeUrl, resources.map((r) => r.name));
      if (rejections.length > 0) message = nackMessageOf(this.typeUrl, rejections, format);
    }
    if (message !== undefined) {
      const partial = rejections.length === 0 ? undefined : this.partialOf(resources, anys, rejections, this.named ? [] : this.sotwLeftOut(resources));
      return {
        outcome: 'nack',
        request: {
          type_url: this.typeUrl,
          resource_names: this.resourceNames,
          version_info: this.acceptedVersionInfo ?? '',
          response_nonce: nonce,
          error_detail: { code: NACK_STATUS_CODE, message },
        },
        versionInfo,
        nonce,
        resources,
        removed: [],
        message,
        ...(rejections.length > 0 ? { rejected: rejections.map((r) => r.name) } : {}),
        ...(partial !== undefined ? { partial } : {}),
      };
    }
    return {
      outcome: 'ack',
      request: {
        type_url: this.typeUrl,
        resource_names: this.resourceNames,
        version_info: versionInfo,
        response_nonce: nonce,
      },
      versionInfo,
      nonce,
      resources,
      removed: [],
      anys,
    };
  }

  /**
   * What Envoy applies of a response with `rejections` among `resources` (`anys` aligned with them):
   * see the top of this file. `leftOut`: held names the response does not carry, removed by a CDS/LDS
   * response. Undefined when that is nothing.
   */
  private partialOf(resources: readonly ResourceVersion[], anys: readonly (AnyLike | undefined)[], rejections: readonly Rejection[], leftOut: readonly string[]): PartialApplication | undefined {
    const perResource = nackScopeOf(this.typeUrl) === 'per-resource';
    const rejected = new Set(rejections.map((r) => r.index));
    const firstRejected = rejections[0]?.index ?? resources.length;
    const applied: ResourceVersion[] = [];
    const upserts: DeltaUpsert[] = [];
    for (const [index, resource] of resources.entries()) {
      if (perResource ? rejected.has(index) : index >= firstRejected) continue;
      applied.push(resource);
      upserts.push({ name: resource.name, resource: anys[index] });
    }
    const removed = perResource ? leftOut : [];
    return applied.length === 0 && removed.length === 0 ? undefined : { applied, upserts, removed };
  }

  /** SotW wildcard: the held names a response carrying `resources` leaves out (its complete set does not have them). */
  private sotwLeftOut(resources: readonly ResourceVersion[]): string[] {
    const carried = new Set(resources.map((r) => r.name));
    return [...this.heldResources().keys()].filter((name) => !carried.has(name));
  }

  /**
   * The resources of a response this by-name subscription asked for, and their Any objects (aligned
   * with `list`). The same arrays for every Envoy with the same list and name list, so a fleet pays
   * for the filtering once; nothing is copied when every resource was asked for.
   */
  private requestedSubset(resources: readonly ResourceVersion[], list: readonly AnyLike[]): { resources: readonly ResourceVersion[]; anys: readonly AnyLike[] } {
    let cached = requestedSubsets.get(resources);
    if (cached === undefined || cached.names !== this.resourceNames) {
      const wanted = nameSetOf(this.resourceNames);
      let keep: number[] | undefined;
      resources.forEach((resource, index) => {
        if (wanted.has(resource.name)) keep?.push(index);
        else keep ??= Array.from({ length: index }, (_, i) => i);
      });
      cached = {
        names: this.resourceNames,
        resources: keep === undefined ? resources : Object.freeze(keep.map((index) => resources[index] as ResourceVersion)),
        keep,
      };
      requestedSubsets.set(resources, cached);
    }
    const keep = cached.keep;
    return { resources: cached.resources, anys: keep === undefined ? list : keep.map((index) => list[index] as AnyLike) };
  }

  /**
   * Resources held now, name -> version (Delta: per resource; SotW: version_info): those of the last
   * ACK and whatever NACKed responses since applied in part (see the top of this file).
   */
  heldResources(): ReadonlyMap<string, string> {
    if (this.deltaApplied !== undefined) {
      const held = new Map(this.deltaHeld);
      for (const [name, version] of this.deltaApplied) {
        if (version === null) held.delete(name);
        else held.set(name, version);
      }
      return held;
    }
    if (this.deltaHeld.size > 0 || (this.sotwHeld.length === 0 && this.sotwCarried.size === 0)) return this.deltaHeld;
    const held = new Map(this.sotwHeld.map((r) => [r.name, r.version]));
    for (const [name, version] of this.sotwCarried) if (!held.has(name)) held.set(name, version);
    if (!this.named) return held;
    // A name no longer subscribed is gone from the client, whether or not the server said so.
    const wanted = nameSetOf(this.resourceNames);
    for (const name of held.keys()) if (!wanted.has(name)) held.delete(name);
    return held;
  }

  /**
   * Applies an ACKed SotW response. Wildcard: the response is the complete set. By name: resources it
   * did not carry but were held and are still subscribed stay held (see the top of this file).
   */
  applySotwAck(plan: ResponsePlan<DiscoveryRequest>): void {
    this.acceptedVersionInfo = plan.versionInfo;
    this.answeredNonce = plan.nonce;
    if (this.named && plan.resources.length < this.resourceNames.length) {
      const carried = new Map<string, string>();
      const carriedNow = new Set(plan.resources.map((r) => r.name));
      for (const [name, version] of this.heldResources()) if (!carriedNow.has(name)) carried.set(name, version);
      this.sotwCarried = carried;
    } else if (this.sotwCarried.size > 0) {
      this.sotwCarried = new Map();
    }
    this.sotwHeld = plan.resources;
  }

  /** Turns an ACK plan into a NACK with `message` (the subscription model could not use a resource). */
  rejectPlan<Request>(plan: ResponsePlan<Request>, message: string): ResponsePlan<DiscoveryRequest> | ResponsePlan<DeltaDiscoveryRequest> {
    const error_detail = { code: NACK_STATUS_CODE, message };
    const base = { outcome: 'nack' as const, versionInfo: plan.versionInfo, nonce: plan.nonce, resources: plan.resources, removed: plan.removed, message };
    const request = plan.request as DiscoveryRequest | DeltaDiscoveryRequest;
    if ('version_info' in request) {
      return { ...base, request: { type_url: this.typeUrl, resource_names: this.resourceNames, version_info: this.acceptedVersionInfo ?? '', response_nonce: plan.nonce, error_detail } };
    }
    return { ...base, request: { type_url: this.typeUrl, response_nonce: plan.nonce, error_detail } };
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
    this.resourceNames = Object.isFrozen(resourceNames) ? resourceNames : [...resourceNames];
    const unsubscribe = [...before].filter((name) => !after.has(name));
    // Envoy drops what it held of a name it no longer wants (DeltaSubscriptionState): a reconnect
    // must not claim it in initial_resource_versions.
    if (this.named) {
      for (const name of unsubscribe) {
        this.deltaHeld.delete(name);
        this.deltaApplied?.delete(name);
      }
      if (this.deltaApplied?.size === 0) this.deltaApplied = undefined;
    }
    return {
      type_url: this.typeUrl,
      resource_names_subscribe: [...after].filter((name) => !before.has(name)),
      resource_names_unsubscribe: unsubscribe,
    };
  }

  planDelta(response: DeltaDiscoveryResponse, rules: readonly NackRule[], format: NackMessageFormat = 'rule'): ResponsePlan<DeltaDiscoveryRequest> {
    const versionInfo = response.system_version_info ?? '';
    const nonce = response.nonce ?? '';
    const resources: ResourceVersion[] = [];
    const upserts: DeltaUpsert[] = [];
    const wanted = this.named ? nameSetOf(this.resourceNames) : undefined;
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
      // A by-name subscription ignores what it did not ask for.
      if (wanted !== undefined && !wanted.has(resource.name)) continue;
      resources.push({ name: resource.name, version: resource.version ?? '' });
      upserts.push({ name: resource.name, resource: resource.resource ?? undefined });
    }
    const removed = [...(response.removed_resources ?? [])];
    let rejections: Rejection[] = [];
    if (message === undefined) {
      rejections = rejectionsFor(rules, this.typeUrl, resources.map((r) => r.name));
      if (rejections.length > 0) message = nackMessageOf(this.typeUrl, rejections, format);
    }
    const request: DeltaDiscoveryRequest = { type_url: this.typeUrl, response_nonce: nonce };
    if (message !== undefined) {
      const partial = rejections.length === 0 ? undefined : this.partialOf(resources, upserts.map((u) => u.resource), rejections, removed);
      return {
        outcome: 'nack',
        request: { ...request, error_detail: { code: NACK_STATUS_CODE, message } },
        versionInfo,
        nonce,
        resources,
        removed,
        message,
        ...(rejections.length > 0 ? { rejected: rejections.map((r) => r.name) } : {}),
        ...(partial !== undefined ? { partial } : {}),
      };
    }
    return { outcome: 'ack', request, versionInfo, nonce, resources, removed, upserts };
  }

  applyDeltaAck(plan: ResponsePlan<DeltaDiscoveryRequest>): void {
    this.acceptedVersionInfo = plan.versionInfo;
    this.answeredNonce = plan.nonce;
    for (const resource of plan.resources) this.deltaHeld.set(resource.name, resource.version);
    for (const name of plan.removed) this.deltaHeld.delete(name);
    // What this ACK brought is applied and recorded alike again.
    if (this.deltaApplied !== undefined) {
      for (const resource of plan.resources) this.deltaApplied.delete(resource.name);
      for (const name of plan.removed) this.deltaApplied.delete(name);
      if (this.deltaApplied.size === 0) this.deltaApplied = undefined;
    }
  }
}
