// Invariant 1 by content, from the client's own word. The other I1 check (checker.ts) asks "did the
// Envoy ACK a version whose content reflects G", which is close to the product's own definition; a bug
// in applying it (the names a client has not asked for yet) stayed invisible. This one asks a real xDS
// client what it holds, through its CSDS dump (test/support/xds-peers.ts): for a True at generation G
// of object X, every live client resolving X's fqdn must hold, ACKed, the route for X's host, routing
// to the cluster(s) X's spec names at G, each of those clusters ACKed, and their endpoints ACKed with
// at least one endpoint — and the route must be stamped X@G or later. Anything short of that while
// the condition says True is a violation.
//
// Timing: a peer reports a change of its dump at most one poll late, so its view at `at + slackMs` is
// what it certainly did not have at `at` if it is still incomplete then.
import type { ClientSnapshot, XdsPeer } from '../support/xds-peers';
import type { Violation } from './checker';
import { clientView, describeView } from './client-view';
import type { ConditionWrite } from './observer';

/** What a client can route for its target, decoded from one dump (test/truth/client-view.ts). */
export interface RoutableView {
  /** Listener → route configuration → virtual host → clusters → endpoints, all held ACKed. */
  complete: boolean;
  /** Clusters the route for the target's host uses (as held). */
  clusters: readonly string[];
  /** The object's generation stamped on the route (virtual host or route configuration), if any. */
  generation: number | undefined;
  /** The first missing link, for the violation's detail. */
  missing?: string;
}

export interface ClientUnderCheck {
  nodeId: string;
  /** e.g. `grpc-core/1.85.0`. */
  client: string;
  /** The tracked object (`group/kind/ns/name`) whose fqdn the client resolves. */
  object: string;
  /** The client's views from the one in force at `from` to the last reported at or before `to`, oldest first. */
  viewsBetween(from: number, to: number): RoutableView[];
  /** Whether the system had to count the client at `at` (connected, or gone for less than TTL). */
  liveAt(at: number): boolean;
  /** Whether the client (re)connected so shortly before `at` that it may lawfully be uncounted yet (checker.ts JOIN_RACE_MS). */
  joinedRecently?(at: number): boolean;
}

export interface ClientContentInputs {
  clients: readonly ClientUnderCheck[];
  /** `group/kind/namespace/` prefix of the tracked objects' source refs. */
  sourcePrefix: string;
  /** The cluster names object X's spec routes to at generation G (from what the test posted), if known. */
  expectedClusters(object: string, generation: number): readonly string[] | undefined;
  /** How late a client's dump may report a change (its poll interval plus scheduling). */
  slackMs: number;
}

export interface ClientContentResult {
  violations: Violation[];
  /** (True write × client) pairs judged. */
  checked: number;
}

export function checkClientContent(writes: readonly ConditionWrite[], inputs: ClientContentInputs): ClientContentResult {
  const violations: Violation[] = [];
  let checked = 0;
  for (const write of writes) {
    if (write.condition.status !== 'True') continue;
    const object = `${inputs.sourcePrefix}${write.name}`;
    const generation = write.condition.observedGeneration;
    for (const client of inputs.clients) {
      if (client.object !== object || !client.liveAt(write.at)) continue;
      checked++;
      // The view in force at the write, and those reported up to one slack later (a dump is at most
      // that late): the write is wrong only if none of them shows G (or later) programmed. A later
      // view may already be in the next generation's transition, so the last one alone cannot judge.
      const views = client.viewsBetween(write.at, write.at + inputs.slackMs);
      const problems = views.map((view) => shortfall(view, generation, (held) => inputs.expectedClusters(object, held)));
      if (problems.length > 0 && problems.some((problem) => problem === undefined)) continue;
      const problem = problems[0] ?? 'had reported no xDS config';
      violations.push({
        invariant: 'I1-client-content',
        known: client.joinedRecently?.(write.at) === true,
        detail: `${write.name} True at generation ${generation} (seen ${new Date(write.at).toISOString()}) but ${client.nodeId} (${client.client}) ${problem}, and did not in the ${inputs.slackMs} ms after`,
      });
    }
  }
  return { violations, checked };
}

/**
 * Why `view` does not show generation `generation` programmed, or undefined. A client may already hold
 * a later generation (the object moved on): its route is then judged against that generation's spec.
 */
function shortfall(view: RoutableView, generation: number, expectedAt: (generation: number) => readonly string[] | undefined): string | undefined {
  if (!view.complete) return `could not route (${view.missing ?? 'incomplete config'})`;
  if (view.generation === undefined || view.generation < generation) return `held a route at generation ${view.generation ?? 'none'} (clusters ${view.clusters.join(', ')})`;
  const expected = expectedAt(view.generation);
  if (expected !== undefined) {
    const lacking = expected.filter((cluster) => !view.clusters.includes(cluster));
    if (lacking.length > 0) return `routed generation ${view.generation} to ${view.clusters.join(', ')}, not to ${lacking.join(', ')}`;
  }
  return undefined;
}

/** The object's highest generation among `object@G` stamps, if any. */
export function stampedGeneration(stamps: readonly string[], object: string): number | undefined {
  let best: number | undefined;
  for (const stamp of stamps) {
    if (!stamp.startsWith(`${object}@`)) continue;
    const generation = Number(stamp.slice(object.length + 1));
    if (Number.isInteger(generation) && (best === undefined || generation > best)) best = generation;
  }
  return best;
}

/** What one CSDS dump lets the client route for its target, as the content check reads it. */
export function routableView(snapshot: ClientSnapshot, target: string, object: string): RoutableView {
  const view = clientView(snapshot, target);
  // The virtual host says which object it came from; a shared route configuration names many.
  const stamps = view.virtualHost?.provenance ?? view.routeConfiguration?.provenance ?? [];
  return {
    complete: view.complete,
    clusters: view.clusterNames,
    generation: stampedGeneration(stamps, object),
    ...(view.complete ? {} : { missing: describeView(view) }),
  };
}

/** A real peer (test/support/xds-peers.ts) as the content check sees it: its CSDS dumps through clientView. */
export function peerUnderCheck(peer: Pick<XdsPeer, 'nodeId' | 'clientVersion' | 'target' | 'latestAt' | 'snapshots'>, object: string, liveAt: (at: number) => boolean): ClientUnderCheck {
  return {
    nodeId: peer.nodeId,
    client: peer.clientVersion,
    object,
    liveAt,
    viewsBetween(from, to) {
      const first = peer.latestAt(from);
      const later = peer.snapshots().filter((snapshot) => snapshot.at > from && snapshot.at <= to);
      return [...(first === undefined ? [] : [first]), ...later].map((snapshot) => routableView(snapshot, peer.target, object));
    },
  };
}
