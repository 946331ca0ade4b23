// NACK attribution in the gateway (docs/CONVERGENCE.md, "NACK attribution"): when an Envoy rejects a
// response, which tracked objects is it about? The pure rule is the core's blameNack; this file feeds
// it what only the gateway knows, all in memory and synchronous (tracker callbacks never wait on I/O):
// - ResponseHistory: per lineage and type, the names the control plane serves and which of them
//   changed at each recent seq (from the relay's upstreamApplied), so a NACK of seq S by an Envoy
//   holding seq A can be tied to what changed between A and S;
// - ObjectOwnership: which objects own a resource, by control-plane naming of the Services their
//   specs route to (core resourceClaimsOf), fed by the object watcher;
// - exact owners from provenance stamps when the control plane stamps them (ProvenanceWatermarks).
import {
  blameKey,
  blameNack,
  resourceClaimsOf,
  serviceOfResourceName,
  type NackBlame,
  type ObjectRef,
  type ResourceClaims,
} from '../../common/core';
import type { UpstreamAppliedEvent } from '../relay/observer';

/** Changes kept per lineage and type: a NACK from an Envoy further behind is tied to named resources only. */
export const RESPONSE_HISTORY_VERSIONS = 32;

/** A changed-name list longer than this is not kept (a NACK of such a response is tied to named resources only). */
export const MAX_CHANGED_NAMES = 64;

interface TypeHistory {
  /** Name → the bytes served now (compared by content to find what changed). */
  current: Map<string, Buffer>;
  /** Oldest first: the seq of each change and the names it added, changed or removed (undefined: too many). */
  changes: Array<{ seq: number; names: string[] | undefined }>;
  /** The seq of the newest change dropped from `changes` (-1: none dropped). */
  trimmedThrough: number;
}

export class ResponseHistory {
  private readonly types = new Map<string, TypeHistory>();

  /** The relay applied a response for (lineage, type): note which names changed at its seq. */
  record(e: Pick<UpstreamAppliedEvent, 'lineage' | 'typeUrl' | 'seq' | 'changed' | 'resources'>): void {
    if (!e.changed) return;
    const key = `${e.lineage}|${e.typeUrl}`;
    const history: TypeHistory = this.types.get(key) ?? { current: new Map(), changes: [], trimmedThrough: -1 };
    const last = history.changes[history.changes.length - 1];
    if (last !== undefined && last.seq >= e.seq) return;
    const next = new Map<string, Buffer>();
    const changed = new Set<string>();
    for (const { name, value } of e.resources) {
      next.set(name, value);
      const before = history.current.get(name);
      if (before === undefined || (before !== value && !before.equals(value))) changed.add(name);
    }
    for (const name of history.current.keys()) if (!next.has(name)) changed.add(name);
    history.current = next;
    history.changes.push({ seq: e.seq, names: changed.size <= MAX_CHANGED_NAMES ? [...changed] : undefined });
    if (history.changes.length > RESPONSE_HISTORY_VERSIONS) {
      const dropped = history.changes.splice(0, history.changes.length - RESPONSE_HISTORY_VERSIONS);
      history.trimmedThrough = (dropped[dropped.length - 1] as { seq: number }).seq;
    }
    this.types.set(key, history);
  }

  /** The names the type serves now on `lineage` (a superset of a recent response's, for matching a message). */
  currentNames(lineage: string, typeUrl: string): Iterable<string> {
    return this.types.get(`${lineage}|${typeUrl}`)?.current.keys() ?? [];
  }

  /**
   * Names that changed after seq `held` (what the Envoy runs; undefined: nothing yet) up to `seq`
   * (the rejected response). Undefined when the history does not reach back that far or a change
   * there touched too many names to keep.
   */
  changedBetween(lineage: string, typeUrl: string, held: number | undefined, seq: number): string[] | undefined {
    const history = this.types.get(`${lineage}|${typeUrl}`);
    if (history === undefined || history.changes.length === 0) return undefined;
    // An Envoy holding nothing of the type: all of it is new to it.
    if (held === undefined) return history.current.size <= MAX_CHANGED_NAMES ? [...history.current.keys()] : undefined;
    // Changes between what it holds and the oldest one kept were dropped: unknown.
    if (held < history.trimmedThrough) return undefined;
    const names = new Set<string>();
    for (const change of history.changes) {
      if (change.seq > seq || change.seq <= held) continue;
      if (change.names === undefined) return undefined;
      for (const name of change.names) names.add(name);
    }
    return [...names];
  }

  forget(lineage: string): void {
    for (const key of [...this.types.keys()]) if (key.startsWith(`${lineage}|`)) this.types.delete(key);
  }
}

/** Which tracked objects route to which Services and hosts (their specs, as the object watcher sees them). */
export class ObjectOwnership {
  private readonly claims = new Map<string, ResourceClaims>();
  private readonly byService = new Map<string, Set<string>>();

  observe(kind: { group: string; kind: string }, ref: ObjectRef, object: unknown): void {
    const key = blameKey(ref);
    this.forgetKey(key);
    const claims = resourceClaimsOf(kind, object);
    if (claims.services.length === 0 && claims.hosts.length === 0) return;
    this.claims.set(key, claims);
    for (const service of claims.services) {
      const owners = this.byService.get(service) ?? new Set<string>();
      owners.add(key);
      this.byService.set(service, owners);
    }
  }

  forget(ref: ObjectRef): void {
    this.forgetKey(blameKey(ref));
  }

  /** The objects routing to the Service a resource is named after (`namespace/service/…`). */
  ownersOf(resourceName: string): string[] {
    const service = serviceOfResourceName(resourceName);
    return service === undefined ? [] : [...(this.byService.get(service) ?? [])];
  }

  /** The objects whose host names the message quotes as whole words. */
  hostOwnersIn(message: string): string[] {
    const lower = message.toLowerCase();
    const owners: string[] = [];
    for (const [key, claims] of this.claims) {
      if (claims.hosts.some((host) => quotesWord(lower, host))) owners.push(key);
    }
    return owners.sort();
  }

  private forgetKey(key: string): void {
    const previous = this.claims.get(key);
    if (previous === undefined) return;
    this.claims.delete(key);
    for (const service of previous.services) {
      const owners = this.byService.get(service);
      owners?.delete(key);
      if (owners !== undefined && owners.size === 0) this.byService.delete(service);
    }
  }
}

function quotesWord(text: string, word: string): boolean {
  for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
    const before = at === 0 ? '' : text.charAt(at - 1);
    const after = text.charAt(at + word.length);
    if (!/[a-z0-9.-]/.test(before) && !/[a-z0-9.-]/.test(after)) return true;
  }
  return false;
}

/** Exact owners of a resource as its provenance stamp names them (ProvenanceWatermarks.ownersOf). */
export interface ProvenanceOwners {
  ownersOf(lineage: string, typeUrl: string, resourceName: string): string[] | undefined;
}

export interface NackAttributorOptions {
  ownership?: ObjectOwnership;
  provenance?: ProvenanceOwners;
}

/** Everything the gateway needs to blame a NACK, behind one call (EnvoyTracker uses it). */
export class NackAttributor {
  readonly history = new ResponseHistory();

  constructor(private readonly options: NackAttributorOptions = {}) {}

  upstreamApplied(e: UpstreamAppliedEvent): void {
    this.history.record(e);
  }

  forgetLineage(lineage: string): void {
    this.history.forget(lineage);
  }

  /** The blame for an Envoy's NACK of `seq` on (lineage, type) while it runs `held`; undefined: not attributed. */
  blame(args: { lineage: string; typeUrl: string; seq: number; held: number | undefined; message: string }): NackBlame | undefined {
    const { lineage, typeUrl } = args;
    const ownersOf = (name: string): readonly string[] | undefined => {
      // A stamp names the owners exactly; EDS (unstamped) and unstamped resources fall back to naming.
      const stamped = this.options.provenance?.ownersOf(lineage, typeUrl, name);
      if (stamped !== undefined && stamped.length > 0) return stamped;
      return this.options.ownership?.ownersOf(name);
    };
    const ownership = this.options.ownership;
    return blameNack({
      message: args.message,
      responseNames: this.history.currentNames(lineage, typeUrl),
      changedNames: this.history.changedBetween(lineage, typeUrl, args.held, args.seq),
      ownersOf,
      ...(ownership === undefined ? {} : { hostOwnersIn: (message: string) => ownership.hostOwnersIn(message) }),
    });
  }
}
