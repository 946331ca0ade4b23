// The ground truth of a simulated fleet: exactly which versions and resources each Envoy accepted,
// which it rejected (with the message it sent), and when it connected or went away. The simulated
// Envoys write here at the moment they send the ACK/NACK, so this is what the Envoys *did*,
// independent of anything the gateway or DynamoDB believe. The truth checker compares the
// system's conclusions against `exportTruth()`.
import { z } from 'zod';

export interface ResourceVersion {
  name: string;
  /** Delta: the resource's own version. SotW: the response's version_info (or the wrapper's). */
  version: string;
}

export interface AcceptedVersion {
  /** SotW `version_info` or Delta `system_version_info` of the response that was ACKed. */
  versionInfo: string;
  nonce: string;
  /** Clock reading (ms) when the ACK was sent. */
  acceptedAt: number;
  /** Resources carried by that response (SotW: the full set for the type; Delta: the upserts). */
  resources: readonly ResourceVersion[];
  /** Delta only: names the response removed. */
  removed: readonly string[];
}

export interface NackRecord {
  versionInfo: string;
  nonce: string;
  message: string;
  at: number;
  /** Resource names in the rejected response. */
  resourceNames: readonly string[];
  /** Simulated Envoys: the names the message blames (absent when the response could not be decoded). */
  rejected?: readonly string[];
  /**
   * Simulated Envoys: the resources of the rejected response applied anyway, at their new versions
   * (CDS/LDS: all the valid ones; RDS/EDS: those before the first rejected one; see typeState.ts).
   * Absent: nothing was applied. The version the Envoy reports stays the last accepted one.
   */
  applied?: readonly ResourceVersion[];
  /** With `applied`: the names that application removed. */
  appliedRemoved?: readonly string[];
}

export interface ReceivedRecord {
  versionInfo: string;
  nonce: string;
  at: number;
}

export type ConnectionEventKind = 'connected' | 'disconnected' | 'vanished' | 'stream-error';

export interface ConnectionEvent {
  kind: ConnectionEventKind;
  at: number;
  detail?: string;
}

/** A change of the names an Envoy's subscription model asks for on a type, when it was decided. */
export interface SubscriptionRecord {
  /** Interned (shared between Envoys asking for the same set); empty for a wildcard type. */
  names: readonly string[];
  /** Clock reading (ms) when the change was sent (or, while disconnected, decided). */
  at: number;
}

export interface TypeTruth {
  readonly typeUrl: string;
  readonly accepted: AcceptedVersion[];
  readonly nacks: NackRecord[];
  /** Latest response received, ACKed or not (a hung Envoy has these but no acceptance). */
  lastReceived: ReceivedRecord | undefined;
  /** Subscription changes made by the Envoy's subscription model (none for the 'wildcard' model). */
  readonly subscriptions: SubscriptionRecord[];
}

/** What an Envoy's subscription model knows right now (kept by the Envoy, read through the truth). */
export interface LiveSubscriptionState {
  subscribedNames(typeUrl: string): readonly string[] | undefined;
  warming(typeUrl: string): readonly string[];
}

export interface EnvoyTruth {
  readonly nodeId: string;
  readonly cluster: string;
  readonly types: Map<string, TypeTruth>;
  readonly connections: ConnectionEvent[];
  live?: LiveSubscriptionState;
}

export class GroundTruth {
  private readonly envoys = new Map<string, EnvoyTruth>();
  private readonly resourceLists = new Map<string, readonly ResourceVersion[]>();
  /** Input array → its interned list (callers never change an array after passing it). */
  private readonly internedByArray = new WeakMap<readonly ResourceVersion[], { typeUrl: string; list: readonly ResourceVersion[] }>();

  /**
   * Returns a shared, frozen copy of `resources`: thousands of Envoys accepting the same response
   * then hold one array between them instead of one each.
   */
  internResources(typeUrl: string, resources: readonly ResourceVersion[]): readonly ResourceVersion[] {
    if (resources.length === 0) return EMPTY_RESOURCES;
    // Envoys planning the same list under the same version share one array (SotwNameCache.versioned):
    // its interned copy is found without building the key again.
    const known = this.internedByArray.get(resources);
    if (known !== undefined && known.typeUrl === typeUrl) return known.list;
    let key = typeUrl;
    for (const r of resources) key += `\u0000${r.name}\u0001${r.version}`;
    const existing = this.resourceLists.get(key);
    if (existing) {
      this.internedByArray.set(resources, { typeUrl, list: existing });
      return existing;
    }
    const frozen = Object.freeze(resources.map((r) => Object.freeze({ name: r.name, version: r.version })));
    this.resourceLists.set(key, frozen);
    this.internedByArray.set(resources, { typeUrl, list: frozen });
    return frozen;
  }

  registerEnvoy(nodeId: string, cluster: string): void {
    if (!this.envoys.has(nodeId)) {
      this.envoys.set(nodeId, { nodeId, cluster, types: new Map(), connections: [] });
    }
  }

  recordConnection(nodeId: string, event: ConnectionEvent): void {
    this.envoy(nodeId).connections.push(event);
  }

  recordReceived(nodeId: string, typeUrl: string, received: ReceivedRecord): void {
    this.type(nodeId, typeUrl).lastReceived = received;
  }

  recordAccepted(nodeId: string, typeUrl: string, accepted: AcceptedVersion): void {
    this.type(nodeId, typeUrl).accepted.push(accepted);
  }

  recordNack(nodeId: string, typeUrl: string, nack: NackRecord): void {
    this.type(nodeId, typeUrl).nacks.push(nack);
  }

  recordSubscription(nodeId: string, typeUrl: string, subscription: SubscriptionRecord): void {
    this.type(nodeId, typeUrl).subscriptions.push(subscription);
  }

  /** Lets the truth answer `subscribedNames` and `warming` for an Envoy that keeps that state itself. */
  attachLiveState(nodeId: string, live: LiveSubscriptionState): void {
    this.envoy(nodeId).live = live;
  }

  /** The subscription changes an Envoy's model made on a type, oldest first. */
  subscriptions(nodeId: string, typeUrl: string): readonly SubscriptionRecord[] {
    return this.envoys.get(nodeId)?.types.get(typeUrl)?.subscriptions ?? [];
  }

  /**
   * The names Envoy `nodeId` asks for on `typeUrl` now: empty for a wildcard type, undefined when it
   * does not ask for the type (yet) or has no subscription model.
   */
  subscribedNames(nodeId: string, typeUrl: string): readonly string[] | undefined {
    return this.envoys.get(nodeId)?.live?.subscribedNames(typeUrl);
  }

  /**
   * Envoy model: the clusters (CDS) or listeners (LDS) Envoy `nodeId` accepted but that still warm (a
   * cluster until its endpoints arrive, a listener until its route configurations do). A warming
   * resource is not serving yet, although its type's version was ACKed.
   */
  warming(nodeId: string, typeUrl: string): readonly string[] {
    return this.envoys.get(nodeId)?.live?.warming(typeUrl) ?? [];
  }

  nodeIds(): string[] {
    return [...this.envoys.keys()];
  }

  envoyTruth(nodeId: string): EnvoyTruth | undefined {
    return this.envoys.get(nodeId);
  }

  /** Which versions Envoy `nodeId` accepted for `typeUrl`, oldest first, with when. */
  acceptedVersions(nodeId: string, typeUrl: string): readonly AcceptedVersion[] {
    return this.envoys.get(nodeId)?.types.get(typeUrl)?.accepted ?? [];
  }

  latestAccepted(nodeId: string, typeUrl: string): AcceptedVersion | undefined {
    const accepted = this.acceptedVersions(nodeId, typeUrl);
    return accepted[accepted.length - 1];
  }

  /** When Envoy `nodeId` first accepted `versionInfo` for `typeUrl`, or undefined if it never did. */
  acceptedAt(nodeId: string, typeUrl: string, versionInfo: string): number | undefined {
    return this.acceptedVersions(nodeId, typeUrl).find((a) => a.versionInfo === versionInfo)?.acceptedAt;
  }

  nacks(nodeId: string, typeUrl: string): readonly NackRecord[] {
    return this.envoys.get(nodeId)?.types.get(typeUrl)?.nacks ?? [];
  }

  /** Envoys whose latest accepted version for `typeUrl` is `versionInfo`. */
  envoysAt(typeUrl: string, versionInfo: string): string[] {
    const result: string[] = [];
    for (const nodeId of this.envoys.keys()) {
      if (this.latestAccepted(nodeId, typeUrl)?.versionInfo === versionInfo) result.push(nodeId);
    }
    return result;
  }

  /** A JSON-ready snapshot for the truth checker (see `fleetTruthExportSchema`). */
  exportTruth(): FleetTruthExport {
    const envoys: FleetTruthExport['envoys'] = [];
    for (const envoy of this.envoys.values()) {
      const types: Record<string, ExportedTypeTruth> = {};
      for (const truth of envoy.types.values()) {
        types[truth.typeUrl] = {
          accepted: truth.accepted.map((a) => ({
            v: a.versionInfo,
            at: a.acceptedAt,
            nonce: a.nonce,
            res: a.resources.map((r) => `${r.name}@${r.version}`),
            ...(a.removed.length > 0 ? { rm: [...a.removed] } : {}),
          })),
          nacks: truth.nacks.map((n) => ({
            v: n.versionInfo,
            at: n.at,
            nonce: n.nonce,
            msg: n.message,
            ...(n.applied !== undefined ? { res: n.applied.map((r) => `${r.name}@${r.version}`) } : {}),
            ...(n.appliedRemoved !== undefined && n.appliedRemoved.length > 0 ? { rm: [...n.appliedRemoved] } : {}),
          })),
          ...(truth.lastReceived
            ? { received: { v: truth.lastReceived.versionInfo, at: truth.lastReceived.at, nonce: truth.lastReceived.nonce } }
            : {}),
        };
      }
      envoys.push({
        node: envoy.nodeId,
        cluster: envoy.cluster,
        conn: envoy.connections.map((c) => ({ kind: c.kind, at: c.at, ...(c.detail ? { detail: c.detail } : {}) })),
        types,
      });
    }
    return { schema: FLEET_TRUTH_SCHEMA, envoys };
  }

  private envoy(nodeId: string): EnvoyTruth {
    const envoy = this.envoys.get(nodeId);
    if (!envoy) throw new Error(`ground truth: unknown envoy ${nodeId}`);
    return envoy;
  }

  private type(nodeId: string, typeUrl: string): TypeTruth {
    const envoy = this.envoy(nodeId);
    let truth = envoy.types.get(typeUrl);
    if (!truth) {
      truth = { typeUrl, accepted: [], nacks: [], lastReceived: undefined, subscriptions: [] };
      envoy.types.set(typeUrl, truth);
    }
    return truth;
  }
}

const EMPTY_RESOURCES: readonly ResourceVersion[] = Object.freeze([]);

export const FLEET_TRUTH_SCHEMA = 'xds-programmed.fleet-truth/v1';

/**
 * The export format, validated with zod so a truth checker reading it from a file rejects
 * anything else with a clear error. Short keys keep a 5,000-Envoy export small:
 * v = version_info / system_version_info, at = ms clock, res = `name@version`, rm = removed names.
 */
const exportedAcceptedSchema = z.object({
  v: z.string(),
  at: z.number(),
  nonce: z.string(),
  res: z.array(z.string()),
  rm: z.array(z.string()).optional(),
});
/** A NACK; `res`/`rm`: what the Envoy applied of the rejected response anyway (NackRecord.applied). */
const exportedNackSchema = z.object({ v: z.string(), at: z.number(), nonce: z.string(), msg: z.string(), res: z.array(z.string()).optional(), rm: z.array(z.string()).optional() });
const exportedTypeTruthSchema = z.object({
  accepted: z.array(exportedAcceptedSchema),
  nacks: z.array(exportedNackSchema),
  received: z.object({ v: z.string(), at: z.number(), nonce: z.string() }).optional(),
});
export const fleetTruthExportSchema = z.object({
  schema: z.literal(FLEET_TRUTH_SCHEMA),
  envoys: z.array(
    z.object({
      node: z.string(),
      cluster: z.string(),
      conn: z.array(
        z.object({
          kind: z.enum(['connected', 'disconnected', 'vanished', 'stream-error']),
          at: z.number(),
          detail: z.string().optional(),
        }),
      ),
      types: z.record(z.string(), exportedTypeTruthSchema),
    }),
  ),
});
export type ExportedTypeTruth = z.infer<typeof exportedTypeTruthSchema>;
export type FleetTruthExport = z.infer<typeof fleetTruthExportSchema>;
