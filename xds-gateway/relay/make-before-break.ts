// Make-before-break for one node group: a resource that served content still references, or
// referenced until a moment ago, is not removed from what the group serves until every client that may
// still use it has been moved off it.
//
// Why here: the relay keeps one upstream subscription per type, so a control plane's rebuild that
// moves a route from cluster A to B and drops A arrives as independent CDS and RDS responses, and the
// relay pushes CDS first (additions order, relay-group.ts pushOrder). A client subscribing to CDS by
// name (gRPC) then receives a CDS response without A before the RDS that moves the route off A, reports
// A as not existing and fails its RPCs until the RDS arrives; Envoy drains A's connections the same way.
// The xDS protocol's rule is: add in CDS → EDS → LDS → RDS order, remove clusters and endpoints last.
//
// The rule, per child type (CDS ← RDS/LDS, EDS ← CDS, RDS ← LDS; common/xds/references.ts):
// - served(child) = upstream(child) ∪ { a resource the group served before and upstream dropped, while
//   a served parent references it, or it is *pending release* };
// - when a parent type's served content stops referencing a name, that name becomes pending release,
//   gated on the parent's new seq: it is released once every stream subscribed to the parent type has
//   answered (ACK or NACK) a response at or past that seq, or closed — or after `graceMs` at most, so a
//   stuck client cannot pin a removal forever;
// - a released name leaves served(child) at its next computation, which takes a new seq of its own,
//   after the parent's seq: on ADS the removal goes out after the move on the same stream, and on
//   per-type streams after the client answered the move.
// Nothing here does I/O; the group applies what this computes and tells it about answers and time.
import type { Logger } from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { cachedReferencesOf, type ReferencedType } from '../../common/xds/references';
import type { AnyResource } from '../../common/xds';

export interface NamedResource {
  name: string;
  resource: AnyResource;
}

/** child type → the parent types whose resources reference it, and which edge. */
const EDGES: ReadonlyArray<{ child: string; key: ReferencedType; parents: readonly string[] }> = [
  { child: RDS_TYPE_URL, key: 'RDS', parents: [LDS_TYPE_URL] },
  { child: CDS_TYPE_URL, key: 'CDS', parents: [RDS_TYPE_URL, LDS_TYPE_URL] },
  { child: EDS_TYPE_URL, key: 'EDS', parents: [CDS_TYPE_URL] },
];

export const DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS = 10_000;

export interface MakeBeforeBreakDeps {
  /** The group's served resources of a type (its cache), undefined before any data. */
  served(typeUrl: string): Iterable<NamedResource> | undefined;
  /** Seq of the last response each current subscriber of `typeUrl` answered (-1: none yet). */
  answeredSeqs(typeUrl: string): Iterable<number>;
  now(): number;
  graceMs: number;
  logger: Logger;
}

interface PendingRelease {
  /** parent type → the seq every subscriber of it must have answered. */
  gates: Map<string, number>;
  deadline: number;
}

export class MakeBeforeBreak {
  private readonly upstream = new Map<string, readonly NamedResource[]>();
  /** child type → name → its pending release. */
  private readonly pending = new Map<string, Map<string, PendingRelease>>();

  constructor(private readonly deps: MakeBeforeBreakDeps) {}

  /** The upstream content last recorded for `typeUrl` (what the control plane currently serves). */
  upstreamOf(typeUrl: string): readonly NamedResource[] | undefined {
    return this.upstream.get(typeUrl);
  }

  /** Records upstream content for `typeUrl` and returns what the group should serve for it. */
  contentFor(typeUrl: string, incoming: readonly NamedResource[]): NamedResource[] {
    this.upstream.set(typeUrl, incoming);
    return this.servedContent(typeUrl);
  }

  /** The names of each child type that the served parents reference now (call before and after a parent change). */
  referencedChildren(parentType: string): Map<string, Set<string>> {
    const result = new Map<string, Set<string>>();
    for (const edge of EDGES) if (edge.parents.includes(parentType)) result.set(edge.child, this.referenced(edge.child));
    return result;
  }

  /**
   * A parent type changed to `seq`: every child name it referenced in `before` and no longer does in
   * the served content becomes pending release, gated on this seq.
   */
  parentChanged(parentType: string, seq: number, before: ReadonlyMap<string, ReadonlySet<string>>): void {
    const after = this.referencedChildren(parentType);
    for (const [child, previous] of before) {
      const now = after.get(child) ?? new Set<string>();
      for (const name of previous) {
        if (now.has(name)) continue;
        let names = this.pending.get(child);
        if (names === undefined) {
          names = new Map();
          this.pending.set(child, names);
        }
        const entry = names.get(name) ?? { gates: new Map<string, number>(), deadline: this.deps.now() + this.deps.graceMs };
        entry.gates.set(parentType, Math.max(seq, entry.gates.get(parentType) ?? 0));
        names.set(name, entry);
      }
    }
  }

  /**
   * Child types with a release due now (every gate open, or past its deadline): their pending names are
   * released, so the caller recomputes and applies `contentFor(child, upstreamOf(child))`.
   */
  takeDue(): string[] {
    const now = this.deps.now();
    const due: string[] = [];
    // The lowest seq any subscriber of a parent type answered, read once per parent type per call.
    const lowest = new Map<string, number>();
    const lowestAnswered = (parentType: string): number => {
      let value = lowest.get(parentType);
      if (value === undefined) {
        value = Number.POSITIVE_INFINITY;
        for (const answered of this.deps.answeredSeqs(parentType)) value = Math.min(value, answered);
        lowest.set(parentType, value);
      }
      return value;
    };
    for (const [child, names] of this.pending) {
      let released = 0;
      for (const [name, entry] of names) {
        const open = [...entry.gates].every(([parentType, seq]) => lowestAnswered(parentType) >= seq);
        if (!open && now < entry.deadline) continue;
        if (!open) this.deps.logger.info({ typeUrl: child, name, gates: Object.fromEntries(entry.gates) }, 'relay: make-before-break grace over; removing a resource not every client has moved off');
        names.delete(name);
        released++;
      }
      if (names.size === 0) this.pending.delete(child);
      // Only a release that changes what is served needs a recomputation.
      if (released > 0 && this.upstream.has(child)) due.push(child);
    }
    return due;
  }

  /** The earliest deadline of a pending release (for the group's timer), undefined when none. */
  nextDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const names of this.pending.values()) for (const entry of names.values()) if (earliest === undefined || entry.deadline < earliest) earliest = entry.deadline;
    return earliest;
  }

  pendingCount(): number {
    let count = 0;
    for (const names of this.pending.values()) count += names.size;
    return count;
  }

  private servedContent(typeUrl: string): NamedResource[] {
    const incoming = this.upstream.get(typeUrl) ?? [];
    const edge = EDGES.find((candidate) => candidate.child === typeUrl);
    const served = this.deps.served(typeUrl);
    if (edge === undefined || served === undefined) return [...incoming];
    const upstreamNames = new Set(incoming.map((resource) => resource.name));
    const referenced = this.referenced(typeUrl);
    const pending = this.pending.get(typeUrl);
    const kept: NamedResource[] = [];
    for (const resource of served) {
      if (upstreamNames.has(resource.name)) continue;
      if (referenced.has(resource.name) || pending?.has(resource.name) === true) kept.push(resource);
    }
    return kept.length === 0 ? [...incoming] : [...incoming, ...kept];
  }

  private referenced(child: string): Set<string> {
    const edge = EDGES.find((candidate) => candidate.child === child);
    const names = new Set<string>();
    if (edge === undefined) return names;
    for (const parentType of edge.parents) {
      for (const { resource } of this.deps.served(parentType) ?? []) for (const name of this.referencesOf(resource)[edge.key]) names.add(name);
    }
    return names;
  }

  private referencesOf(resource: AnyResource): ReturnType<typeof cachedReferencesOf> {
    return cachedReferencesOf(resource, (error) => this.deps.logger.warn({ err: error, typeUrl: resource.type_url }, 'relay: cannot read the references of a resource'));
  }
}
