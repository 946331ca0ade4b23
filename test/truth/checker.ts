// The invariants of docs/RELIABILITY.md, checked against ground truth that the system under test cannot
// influence: the simulated Envoys' own records (what each accepted or rejected, when it connected
// or went away), the bytes they received (provenance stamps, ./content.ts) and the control planes'
// rebuild logs (which type's content can reflect an object at all).
import type { GroundTruth, ConnectionEvent } from '../../infra/local/envoys';
import type { RebuildLog } from '../../infra/local/control-plane/rebuild-log';
import { TYPE_SHORT_NAMES, type ResourceTypeUrl } from '../../common/xds';
import type { ConditionWrite } from './observer';
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../common/core/status-update';

export type InvariantId = 'I1-true-only-when-programmed' | 'I1-client-content' | 'I2-nack-shown' | 'I3-recovery' | 'I4-bounded-writes' | 'I5-no-drift' | 'checker';

export interface Violation {
  invariant: InvariantId;
  detail: string;
  /** A violation matching the known race (an Envoy that joined moments before the write): reported, not failing. */
  known?: boolean;
}

/** What each response contained (./content.ts), by type URL and version. */
export interface ContentLookup {
  /**
   * `nodeId`, `nonce`: whose response it was. Clients subscribing by name get, under one version_info,
   * only their names, and after a subscription change another response at the same version_info, so
   * their content is kept per client and response (nonce); wildcard subscribers share one per version.
   */
  sources(typeUrl: string, versionInfo: string, nodeId?: string, nonce?: string): ReadonlySet<string> | undefined;
  /** Delta: what one resource at its own version contained. */
  resourceSources?(typeUrl: string, name: string, version: string): ReadonlySet<string> | undefined;
}

export interface TruthInputs {
  truth: GroundTruth;
  contents: ContentLookup;
  rebuildLogs: ReadonlyArray<Pick<RebuildLog, 'all'>>;
  subscribedTypes: readonly string[];
  envoyTtlMs: number;
  envoyHeartbeatMs: number;
  /** `group/kind/namespace/` prefix of the tracked objects' source refs. */
  sourcePrefix: string;
  /**
   * Which protocol an Envoy speaks (default SotW). A Delta Envoy's accepted content is its held
   * resource set (every accepted response's upserts and removals applied in order), not one response.
   */
  protocolOf?: (nodeId: string) => 'sotw' | 'delta' | undefined;
  /**
   * Whether an Envoy's config is expected to hold `object` at all (default: every object). A client
   * subscribing by name (a real gRPC xDS client resolving one fqdn) holds only its own object's.
   */
  concerns?: (nodeId: string, object: string) => boolean;
  /**
   * Which of `subscribedTypes` reflect `object` (default: typesReflecting over `rebuildLogs`). A checker
   * running where the rebuild logs are not (the soak's fleet child, ./fleet-true-writes.ts) is handed
   * the answer computed where they are.
   */
  typesOf?: (object: string) => readonly string[];
}

/** Slack for the gap between a write and the watch delivering it, and timer jitter. */
const LIVENESS_SLACK_MS = 250;
/** An Envoy whose first connection is this recent may not yet be in the aggregates (the known race). */
export const JOIN_RACE_MS = 2000;

/**
 * Whether the Envoy must be counted at `at`. A connection counts once established: the Envoy heard
 * from the server on it (a response received, ACKed or NACKed) at or before `at`; an attempt still
 * failing (the gateway is down, the channel in backoff) is invisible to the system, which can only
 * count what some gateway saw. Gone (disconnect, vanish, stream error, or an attempt not yet
 * established) since time g: the gateway last saw it at g − heartbeat at worst, and the system must
 * count it until that sighting plus the TTL; to never flag an Envoy the system may lawfully have
 * dropped, the window is TTL − heartbeat − slack.
 */
export function liveAt(connections: readonly ConnectionEvent[], at: number, ttlMs: number, heartbeatMs: number, heardAt?: readonly number[]): boolean {
  // Without `heardAt`, every connection counts as established.
  const established = (from: number, to: number): boolean => heardAt === undefined || heardAt.some((time) => time >= from && time <= to);
  let goneAt: number | undefined;
  let openSince: number | undefined;
  for (const event of connections) {
    if (event.at > at) break;
    if (event.kind === 'connected') {
      openSince = event.at;
    } else {
      if (openSince !== undefined && established(openSince, event.at)) goneAt = event.at;
      openSince = undefined;
    }
  }
  if (openSince !== undefined && established(openSince, at)) return true;
  if (goneAt === undefined) return false;
  return at - goneAt < ttlMs - heartbeatMs - LIVENESS_SLACK_MS;
}

/**
 * When the Envoy came back, if its connection in force at `at` is a return after a gap in which the
 * system could lawfully drop it (not live just before it first heard from a server on that
 * connection: its last established connection had ended a TTL or more earlier, e.g. its gateway was
 * SIGKILLed and the new one took that long to answer): that first moment. Undefined otherwise. To
 * the system such an Envoy is a new one (its lineage is dead, its state expired), so a True written
 * moments after it came back is the join race, as for an Envoy connecting for the first time.
 */
export function returnedAt(connections: readonly ConnectionEvent[], at: number, ttlMs: number, heartbeatMs: number, heardAt: readonly number[]): number | undefined {
  let openSince: number | undefined;
  for (const event of connections) {
    if (event.at > at) break;
    openSince = event.kind === 'connected' ? event.at : undefined;
  }
  if (openSince === undefined) return undefined;
  const since = openSince;
  const heard = heardAt.filter((time) => time >= since && time <= at);
  if (heard.length === 0) return undefined;
  if (!connections.some((event) => event.kind === 'connected' && event.at < since)) return undefined; // a first connection: joinedRecently
  // Not live just before it first heard from a server on this connection: an attempt nobody answered
  // yet (a gateway restarting) is invisible to the system, so the gap runs until the first answer.
  const firstHeard = Math.min(...heard);
  return liveAt(connections, firstHeard - 1, ttlMs, heartbeatMs, heardAt) ? undefined : firstHeard;
}

/** The Envoy's last connection events up to shortly after `at`, as offsets from it (evidence for a violation). */
function describeConnections(connections: readonly ConnectionEvent[], at: number): string {
  const recent = connections.filter((event) => event.at <= at + 1000).slice(-4);
  return recent.length === 0 ? 'none' : recent.map((event) => `${event.kind} ${event.at - at >= 0 ? '+' : ''}${event.at - at} ms`).join(', ');
}

/** Every time the Envoy heard from a server (accepted, NACKed, or last received), ascending order not required. */
export function heardTimes(envoy: { types: ReadonlyMap<string, { accepted: ReadonlyArray<{ acceptedAt: number }>; nacks: ReadonlyArray<{ at: number }>; lastReceived: { at: number } | undefined }> }): number[] {
  const times: number[] = [];
  for (const type of envoy.types.values()) {
    for (const accepted of type.accepted) times.push(accepted.acceptedAt);
    for (const nack of type.nacks) times.push(nack.at);
    if (type.lastReceived) times.push(type.lastReceived.at);
  }
  return times;
}

function shortName(typeUrl: string): 'CDS' | 'EDS' | 'LDS' | 'RDS' | 'SDS' | undefined {
  return (TYPE_SHORT_NAMES as Record<string, 'CDS' | 'EDS' | 'LDS' | 'RDS' | 'SDS' | undefined>)[typeUrl as ResourceTypeUrl];
}

/** Types whose content reflects `object` in any rebuild of any replica (EDS, for one, never does). */
export function typesReflecting(object: string, inputs: Pick<TruthInputs, 'subscribedTypes' | 'rebuildLogs'>): string[] {
  return inputs.subscribedTypes.filter((typeUrl) => {
    const short = shortName(typeUrl);
    if (!short) return false;
    return inputs.rebuildLogs.some((log) => log.all().some((record) => record.contained[short].some((source) => source.startsWith(`${object}@`))));
  });
}

function generationIn(sources: ReadonlySet<string>, object: string): number | undefined {
  let best: number | undefined;
  for (const source of sources) {
    if (!source.startsWith(`${object}@`)) continue;
    const generation = Number(source.slice(object.length + 1));
    if (best === undefined || generation > best) best = generation;
  }
  return best;
}

type AcceptedRecords = ReadonlyArray<{ versionInfo: string; nonce?: string; acceptedAt: number; resources: ReadonlyArray<{ name: string; version: string }>; removed: readonly string[] }>;

/** What an Envoy's accepted config held at `at` for one type, and the generation of `object` in it. */
interface HeldView {
  /** The generation of the object the accepted config reflects; undefined = not at all (or unknown). */
  generation: number | undefined;
  /** For a violation's detail. */
  description: string;
}

/** SotW: the latest accepted response is the whole config of the type. */
function sotwView(accepted: AcceptedRecords, at: number, typeUrl: string, object: string, contents: ContentLookup, nodeId?: string): HeldView {
  let latest: AcceptedRecords[number] | undefined;
  for (const record of accepted) if (record.acceptedAt <= at) latest = record;
  const sources = latest ? contents.sources(typeUrl, latest.versionInfo, nodeId, latest.nonce) : undefined;
  const generation = sources ? generationIn(sources, object) : undefined;
  // "content unknown": the tap never decoded a response with that version (a checker gap, not the system's).
  const content = sources ? `containing generation ${generation ?? 'none'} (${sources.size} stamps)` : 'content unknown';
  // A short resource list helps read a named subscription's violation (which names it held, when).
  const names = latest && latest.resources.length <= 4 ? ` [${latest.resources.map((r) => r.name).join(', ')}] accepted at ${latest.acceptedAt}` : '';
  return { generation, description: latest ? `${latest.versionInfo} ${content}${names}` : 'nothing' };
}

/**
 * Delta: the held set after applying, in order, every response accepted at or before `at` (a NACKed
 * response changes nothing: Envoy rejects it whole). The object counts at generation G only if every
 * held resource stamped with it is at G or later: a stale resource left behind (a removal never
 * applied, a rejected update never re-sent) means the Envoy still serves the old generation.
 */
export function deltaView(accepted: AcceptedRecords, at: number, typeUrl: string, object: string, contents: ContentLookup): HeldView {
  const held = new Map<string, string>();
  let last: AcceptedRecords[number] | undefined;
  for (const record of accepted) {
    if (record.acceptedAt > at) break;
    last = record;
    for (const resource of record.resources) held.set(resource.name, resource.version);
    for (const name of record.removed) held.delete(name);
  }
  let lowest: number | undefined;
  const stale: string[] = [];
  const unknown: string[] = [];
  for (const [name, version] of held) {
    const sources = contents.resourceSources?.(typeUrl, name, version);
    if (!sources) {
      unknown.push(`${name}@${version}`);
      continue;
    }
    const generation = generationIn(sources, object);
    if (generation === undefined) continue;
    if (lowest === undefined || generation < lowest) lowest = generation;
    stale.push(`${name}@${version}: ${generation}`);
  }
  // A held resource whose content was never seen on the wire cannot vouch for anything.
  const generation = unknown.length > 0 ? undefined : lowest;
  const description = last
    ? `held set after ${last.versionInfo} (${held.size} resources; ${stale.length > 0 ? `object in ${stale.join(', ')}` : 'object in none'}${unknown.length > 0 ? `; content unknown for ${unknown.join(', ')}` : ''})`
    : 'nothing';
  return { generation, description };
}

/** Invariants 1 and 2 (its "never counts" half) on every True write. */
export function checkTrueWrites(writes: readonly ConditionWrite[], inputs: TruthInputs): Violation[] {
  const violations: Violation[] = [];
  const reflecting = new Map<string, string[]>();
  for (const write of writes) {
    if (write.condition.status !== 'True') continue;
    const object = `${inputs.sourcePrefix}${write.name}`;
    const generation = write.condition.observedGeneration;
    let types = reflecting.get(object);
    if (!types) {
      types = inputs.typesOf ? [...inputs.typesOf(object)] : typesReflecting(object, inputs);
      reflecting.set(object, types);
    }
    if (types.length === 0) {
      violations.push({ invariant: 'checker', detail: `${write.name}: no rebuild reflects it, cannot check the True write at generation ${generation}` });
      continue;
    }
    for (const nodeId of inputs.truth.nodeIds()) {
      const envoy = inputs.truth.envoyTruth(nodeId);
      if (!envoy || !liveAt(envoy.connections, write.at, inputs.envoyTtlMs, inputs.envoyHeartbeatMs, heardTimes(envoy))) continue;
      if (inputs.concerns !== undefined && !inputs.concerns(nodeId, object)) continue;
      const delta = inputs.protocolOf?.(nodeId) === 'delta';
      for (const typeUrl of types) {
        const accepted = envoy.types.get(typeUrl)?.accepted ?? [];
        const view = delta ? deltaView(accepted, write.at, typeUrl, object, inputs.contents) : sotwView(accepted, write.at, typeUrl, object, inputs.contents, nodeId);
        const has = view.generation;
        if (has !== undefined && has >= generation) continue;
        const firstConnect = envoy.connections.find((event) => event.kind === 'connected');
        const joinedRecently = firstConnect !== undefined && write.at - firstConnect.at < JOIN_RACE_MS;
        const returned = joinedRecently ? undefined : returnedAt(envoy.connections, write.at, inputs.envoyTtlMs, inputs.envoyHeartbeatMs, heardTimes(envoy));
        const returnedRecently = returned !== undefined && write.at - returned < JOIN_RACE_MS;
        const nacks = envoy.types.get(typeUrl)?.nacks.filter((nack) => nack.at <= write.at) ?? [];
        const lastNack = nacks[nacks.length - 1];
        violations.push({
          invariant: 'I1-true-only-when-programmed',
          known: joinedRecently || returnedRecently,
          detail:
            `${write.name} True at generation ${generation} (seen ${new Date(write.at).toISOString()}) but ${nodeId} ` +
            `had accepted ${shortName(typeUrl) ?? typeUrl}${delta ? ' (Delta)' : ''} ${view.description}` +
            `${lastNack ? `; its last NACK: ${lastNack.versionInfo} "${lastNack.message}"` : ''}` +
            `${joinedRecently ? ` (first connected ${write.at - (firstConnect?.at ?? 0)} ms earlier: the known join race)` : ''}` +
            `${returnedRecently ? ` (back ${write.at - (returned ?? 0)} ms earlier after a gap longer than the TTL: the known join race)` : ''}` +
            `; connections: ${describeConnections(envoy.connections, write.at)}`,
        });
      }
    }
  }
  return violations;
}

/**
 * Invariant 2, the message half: every Envoy a Rejected condition names as having rejected a type
 * really sent a NACK for that type with that message (the condition quotes Envoy, never invents).
 */
export function checkRejectedMessages(writes: readonly ConditionWrite[], truth: GroundTruth): Violation[] {
  const violations: Violation[] = [];
  // "<envoy> rejected <type>: <message>", or for another object's rejection (BlockedByOtherObject)
  // "<envoy> rejected <type> of <objects> (resource …), not of this object: <message>".
  const quoted = /([A-Za-z0-9._-]+) rejected (CDS|EDS|LDS|RDS|SDS)(?: of [^:;]*)?: ([^;]*)/g;
  for (const write of writes) {
    if (write.condition.reason !== 'Rejected' && write.condition.reason !== 'BlockedByOtherObject') continue;
    const quotes = [...write.condition.message.matchAll(quoted)];
    if (quotes.length === 0) violations.push({ invariant: 'I2-nack-shown', detail: `${write.name} Rejected without quoting any Envoy: "${write.condition.message}"` });
    for (const [, nodeId = '', type = '', message = ''] of quotes) {
      const envoy = truth.envoyTruth(nodeId);
      const nacks = envoy ? [...envoy.types.values()].filter((t) => shortName(t.typeUrl) === type).flatMap((t) => t.nacks) : [];
      const prefix = message.trim().replace(/…$/, '').slice(0, 60);
      if (!nacks.some((nack) => nack.at <= write.at && nack.message.startsWith(prefix))) {
        violations.push({ invariant: 'I2-nack-shown', detail: `${write.name} says ${nodeId} rejected ${type} ("${prefix}") but that Envoy sent no such NACK before the write` });
      }
    }
  }
  return violations;
}

/** Timer jitter and watch delivery between two of our writes as the observer times them. */
export const REFRESH_SLACK_MS = 500;

/**
 * Invariant 4: writes of the condition per object per generation stay bounded (no per-Envoy churn),
 * by the status writer's own rule (common/core/status-update.ts, docs/CONVERGENCE.md "Freshness of
 * the message"). A write that changes status or reason (a verdict, the first one included) counts
 * against `bound`. A write that changes only the message is a refresh: allowed while the previous
 * write of that object generation is not True and at least `refreshIntervalMs` old, and then not
 * counted, so a generation that stays Pending for a minute may show its counts six more times; a
 * refresh sooner than the interval, or after True, is a violation (what a per-ACK write would be).
 */
export function checkWriteCounts(
  writes: readonly ConditionWrite[],
  bound: number,
  refreshIntervalMs: number = DEFAULT_MESSAGE_REFRESH_MS,
  /**
   * Our writes that replaced a competitor's write or removal (tamper.ts `isRepair`): neither counted
   * nor judged, but each is the previous write of the one after it (a verdict after a repaired
   * Rejected is a verdict change, not a message refresh). A message-only write right after a repair
   * is not judged on its spacing either: the resync pass that repairs does not record its write time.
   */
  isRepair: (write: ConditionWrite) => boolean = () => false,
): { violations: Violation[]; max: number; refreshes: number } {
  const counts = new Map<string, number>();
  const previous = new Map<string, ConditionWrite>();
  const violations: Violation[] = [];
  let refreshes = 0;
  for (const write of [...writes].sort((a, b) => a.at - b.at)) {
    const key = `${write.name}@${write.condition.observedGeneration}`;
    const before = previous.get(key);
    previous.set(key, write);
    if (isRepair(write)) continue;
    const messageOnly = before !== undefined && before.condition.status === write.condition.status && before.condition.reason === write.condition.reason;
    if (messageOnly && isRepair(before)) {
      refreshes++;
      continue;
    }
    if (messageOnly) {
      refreshes++;
      const gap = write.at - before.at;
      if (before.condition.status === 'True') violations.push({ invariant: 'I4-bounded-writes', detail: `${key}: message rewritten after True ("${before.condition.message}" → "${write.condition.message}")` });
      else if (gap < refreshIntervalMs - REFRESH_SLACK_MS) violations.push({ invariant: 'I4-bounded-writes', detail: `${key}: message rewritten ${gap} ms after the previous write (refresh interval ${refreshIntervalMs} ms): "${write.condition.message}"` });
      continue;
    }
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  let max = 0;
  for (const [key, count] of counts) {
    max = Math.max(max, count);
    if (count > bound) violations.push({ invariant: 'I4-bounded-writes', detail: `${key}: ${count} condition writes changing status or reason (bound ${bound})` });
  }
  return { violations, max, refreshes };
}
