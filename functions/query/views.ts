// What the query function shows, built from the table with the pure core: an object generation
// with its decision and live per-Envoy detail, and a fleet view like `istioctl proxy-status`.
import {
  computeConvergence,
  dedupeEvents,
  encodeVersion,
  isLive,
  isUnresolvedNack,
  memberProgressView,
  shortTypeName,
  typeSyncReports,
  watermarkOf,
  type Blocker,
  type Convergence,
  type ConvergencePolicy,
  type EnvoyEvent,
  type EnvoyState,
  type EventStore,
  type LineageProgress,
  type LineageState,
  type ObjectGeneration,
  type ObjectRef,
  type ProgressStore,
  type TableClockView,
  type TypeState,
} from '../../common/core';
import { DecisionSchema } from '../../common/core';
import { DECISION_ATTRIBUTE } from '../../common/store';
import { HttpError } from './http';
import { recentVersionLogAnswers, type VersionLogReader } from './version-log-answers';

export type QueryStore = Pick<
  EventStore,
  'getObjectGeneration' | 'listObjectGenerations' | 'listEnvoyStates' | 'getEnvoyState' | 'getLineageState' | 'listEnvoyEvents'
>;

export interface ViewContext {
  store: QueryStore;
  policy: ConvergencePolicy;
  now: number;
  /** The table clock `live` is judged on, as convergence judges it (core table-clock.ts); absent: wall time. */
  tableClock?: TableClockView;
  /** Upper bound on Envoys read for an object's live detail (a Lambda invocation must stay bounded). */
  maxFleetScan: number;
  /** Blockers listed per object (the counts are always complete). */
  maxBlockersListed: number;
  /** The OBJECT item as stored (all attributes), for the decision. */
  rawObjectItem?: (ref: ObjectRef, generation: number) => Promise<Record<string, unknown> | undefined>;
  /** The version log, where gateways on --event-log-mode chunks keep most ACK and STUCK events. */
  versionLog?: VersionLogReader;
  /**
   * Set with PROGRESS_EVALUATION (the fleet-size path): the object view's live detail is the
   * convergence function's own evaluation from the lineages' PROGRESS items (functions/lib/evaluate.ts
   * AggregateSnapshot). On that path an Envoy's state is written only when its class changes, so the
   * states understate its progress: a view over them would say 0/N while the decision says N/N.
   */
  liveFromProgress?: (record: ObjectGeneration) => Promise<Convergence>;
  /** Set with PROGRESS_EVALUATION: each fleet row also shows what its lineage's PROGRESS item says of it. */
  progress?: Pick<ProgressStore, 'getProgresses'>;
}

/** Each lineage's PROGRESS item as read for one request (absent: the item is missing or unreadable). */
async function progressOf(context: Pick<ViewContext, 'progress'>, envoys: readonly EnvoyState[]): Promise<ReadonlyMap<string, LineageProgress>> {
  if (context.progress === undefined || envoys.length === 0) return new Map();
  const reads = await context.progress.getProgresses([...new Set(envoys.map((envoy) => envoy.lineage))].sort());
  return new Map(reads.flatMap((read) => (read.progress === undefined ? [] : [[read.lineage, read.progress] as const])));
}

/**
 * A connected Envoy's row beside its lineage's PROGRESS: on the fleet-size path its STATE is written on
 * class changes only, so `programmedThrough` there may be waves behind what the gateway last published
 * (core memberProgressView). A disconnected Envoy's state was written when it left: nothing newer exists.
 */
function progressView(envoy: EnvoyState, progress: ReadonlyMap<string, LineageProgress>) {
  const item = progress.get(envoy.lineage);
  if (item === undefined || envoy.status !== 'CONNECTED') return null;
  const view = memberProgressView(item, envoy.nodeId);
  return view === undefined ? null : { lineage: envoy.lineage, v: item.v, asOf: item.heartbeatAt, ...view };
}

/** Lineage states, read once per request. */
class LineageCache {
  private readonly cache = new Map<string, Promise<LineageState | undefined>>();

  constructor(private readonly store: QueryStore) {}

  get(lineage: string): Promise<LineageState | undefined> {
    let entry = this.cache.get(lineage);
    if (entry === undefined) {
      entry = this.store.getLineageState(lineage).then((read) => (read.status === 'found' ? read.value : undefined));
      this.cache.set(lineage, entry);
    }
    return entry;
  }

  async forEnvoys(envoys: readonly EnvoyState[]): Promise<Map<string, LineageState>> {
    const names = new Set(envoys.flatMap((envoy) => [envoy.lineage, ...Object.values(envoy.types).map((type) => type.lineage)]));
    const map = new Map<string, LineageState>();
    await Promise.all([...names].map(async (name) => {
      const state = await this.get(name);
      if (state !== undefined) map.set(name, state);
    }));
    return map;
  }
}

/**
 * `istioctl proxy-status` per type, from what was sent against what was answered on the type's
 * lineage (istiod compares the nonce it sent with the nonce the Envoy acknowledged; here a version
 * `xp1:<lineage>:<seq>` names one response of one lineage, so seqs compare the same way):
 * NOT_SENT nothing was sent; SYNCED the last response sent is the one ACKed; STALE a response is
 * out and unanswered (`pending`); NACKED the last response sent was answered with a NACK. This
 * differs from `status` (common/core proxy-status.ts), which compares with what the gateway
 * currently serves and so also reports a type behind with nothing in flight.
 */
export type SentSync = 'SYNCED' | 'NOT_SENT' | 'STALE' | 'NACKED';

/** The last response sent on a type: the one still pending, else the newer of the ACKed and the NACKed. */
export function lastSentSeq(type: TypeState): number | undefined {
  if (type.pending !== undefined) return type.pending.seq;
  const answered = [type.acked, type.nack?.seq].filter((seq): seq is number => seq !== undefined);
  return answered.length === 0 ? undefined : Math.max(...answered);
}

export function sentSync(type: TypeState): SentSync {
  const sent = lastSentSeq(type);
  if (sent === undefined) return 'NOT_SENT';
  if (type.pending !== undefined) return 'STALE';
  if (isUnresolvedNack(type.nack, type.acked) && type.nack.seq === sent) return 'NACKED';
  return 'SYNCED';
}

/** Sent/ACKed/NACKed versions of one type, spelled as the Envoy sees them (version_info). */
function sentView(type: TypeState) {
  const sent = lastSentSeq(type);
  const version = (seq: number) => encodeVersion({ lineage: type.lineage, seq });
  return {
    sync: sentSync(type),
    typeLineage: type.lineage,
    sent: sent === undefined ? null : { seq: sent, version: version(sent), ...(type.pending === undefined ? {} : { at: type.pending.sentAt }) },
    ackedVersion: type.acked === undefined ? null : version(type.acked),
    nack: type.nack === undefined ? null : { seq: type.nack.seq, version: version(type.nack.seq), message: type.nack.message, at: type.nack.at },
  };
}

/** One row of the fleet view. */
export function envoySummary(envoy: EnvoyState, lineages: ReadonlyMap<string, LineageState>, context: Pick<ViewContext, 'now' | 'policy' | 'tableClock'>, progress: ReadonlyMap<string, LineageProgress> = new Map()) {
  const gateway = lineages.get(envoy.lineage);
  const vouched = progressView(envoy, progress);
  return {
    nodeId: envoy.nodeId,
    cluster: envoy.cluster,
    group: envoy.group,
    status: envoy.status,
    live: isLive(envoy, context.now, context.policy.ttlMs, context.tableClock, gateway?.heartbeatAt),
    lineage: envoy.lineage,
    gateway: gateway === undefined ? null : { instanceId: gateway.instanceId, currentSeq: gateway.currentSeq, heartbeatAt: gateway.heartbeatAt },
    programmedThrough: envoy.programmedThrough ?? null,
    progress: vouched,
    connectedAt: envoy.connectedAt,
    lastSeenAt: envoy.lastSeenAt,
    types: typeSyncReports(envoy, lineages, vouched ?? undefined).map((report) => {
      const state = envoy.types[report.typeUrl];
      // Vouched by PROGRESS: the type's current version is ACKed, so nothing newer can be out on it,
      // whatever the (older) state recorded as sent.
      return { type: shortTypeName(report.typeUrl), ...report, ...(state === undefined ? {} : sentView(state)), ...(report.fromProgress === true ? { sync: 'SYNCED' as const } : {}) };
    }),
  };
}

export async function fleetPage(context: ViewContext, request: { limit: number; cursor?: string; group?: string }) {
  const page = await context.store.listEnvoyStates({ limit: request.limit, ...(request.cursor === undefined ? {} : { cursor: request.cursor }), ...(request.group === undefined ? {} : { group: request.group }) });
  const [lineages, progress] = await Promise.all([new LineageCache(context.store).forEnvoys(page.items), progressOf(context, page.items)]);
  return {
    envoys: page.items.map((envoy) => envoySummary(envoy, lineages, context, progress)),
    corrupt: page.corrupt.length,
    nextCursor: page.nextCursor ?? null,
  };
}

/** Events shown on an Envoy's detail view unless the caller asks for another number (`?events=`). */
export const RECENT_EVENTS = 20;
/** The most `?events=` may ask for: one bounded read of the event log. */
export const MAX_RECENT_EVENTS = 100;

function eventView(event: EnvoyEvent) {
  return { outcome: event.outcome, type: shortTypeName(event.typeUrl), typeUrl: event.typeUrl, lineage: event.lineage, seq: event.seq, at: event.at, ...(event.message === undefined ? {} : { message: event.message }) };
}

export async function envoyDetail(context: ViewContext, nodeId: string, eventCount: number = RECENT_EVENTS) {
  const read = await context.store.getEnvoyState(nodeId);
  if (read.status === 'missing') throw new HttpError(404, 'EnvoyNotFound', `no Envoy with node id ${JSON.stringify(nodeId)}`);
  if (read.status === 'corrupt') throw new HttpError(500, 'CorruptItem', `the state of Envoy ${JSON.stringify(nodeId)} is unreadable: ${read.error}`);
  const [lineages, progress] = await Promise.all([new LineageCache(context.store).forEnvoys([read.value]), progressOf(context, [read.value])]);
  // `limit` bounds items read, and an event-log item holds many events (docs/GATEWAY.md, "The event
  // log"): the first descending page, with the events the STATE carries, is sorted newest first. The
  // version log holds the answers of a demoted state (ACK, STUCK); both are merged, newest first.
  const [logged, chunked] = await Promise.all([
    eventCount === 0 ? [] : context.store.listEnvoyEvents(nodeId, { descending: true, limit: eventCount }).then((page) => page.items),
    context.versionLog === undefined ? [] : recentVersionLogAnswers(context.versionLog, nodeId, Object.keys(read.value.types), eventCount),
  ]);
  const events = dedupeEvents([...logged, ...chunked]).sort((a, b) => b.at - a.at).slice(0, eventCount);
  const summary = envoySummary(read.value, lineages, context, progress);
  // The state keeps a NACK only until a newer version is ACKed; the drill-down also shows an
  // answered one, from the event log, so "what did it refuse last, and why" survives the fix.
  const types = summary.types.map((type) => {
    if (type.nack !== undefined && type.nack !== null) return { ...type, lastNack: { ...type.nack, cleared: false } };
    const logged = events.find((event) => event.outcome === 'NACK' && event.typeUrl === type.typeUrl);
    return { ...type, lastNack: logged === undefined ? null : { seq: logged.seq, version: encodeVersion({ lineage: logged.lineage, seq: logged.seq }), message: logged.message ?? '', at: logged.at, cleared: true } };
  });
  return { ...summary, types, metadata: read.value.metadata, recentEvents: events.map(eventView) };
}

function blockerView(blocker: Blocker) {
  switch (blocker.reason) {
    case 'nacked':
    case 'blocked':
      return { nodeId: blocker.nodeId, reason: blocker.reason, nacks: blocker.nacks.map((nack) => ({ type: shortTypeName(nack.typeUrl), ...nack })) };
    case 'stuck':
      return { nodeId: blocker.nodeId, reason: blocker.reason, types: blocker.typeUrls.map(shortTypeName), since: blocker.since, ...(blocker.unrequested === undefined ? {} : { unrequested: blocker.unrequested.map(shortTypeName) }) };
    case 'noWatermark':
      return { nodeId: blocker.nodeId, reason: blocker.reason, lineages: blocker.lineages };
    case 'pending':
      return { nodeId: blocker.nodeId, reason: blocker.reason, types: blocker.typeUrls.map(shortTypeName) };
  }
}

/** Live detail over the Envoy states: the same computation convergence runs, over the current fleet (the shard path). */
async function liveFromStates(context: ViewContext, ref: ObjectRef, record: ObjectGeneration): Promise<{ live: Convergence; truncated: boolean; source: 'states' }> {
  const envoys: EnvoyState[] = [];
  let cursor: string | undefined;
  let truncated = false;
  do {
    const page = await context.store.listEnvoyStates({ limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    envoys.push(...page.items);
    cursor = page.nextCursor;
    if (envoys.length >= context.maxFleetScan && cursor !== undefined) {
      truncated = true;
      break;
    }
  } while (cursor !== undefined);
  const watermark = watermarkOf(record);
  // The lineages' heartbeats vouch for their CONNECTED Envoys, as in the decisions (core lastVouchedAt).
  const lineages = await new LineageCache(context.store).forEnvoys(envoys);
  const lineageHeartbeats = new Map([...lineages].map(([lineage, state]) => [lineage, state.heartbeatAt]));
  const live = computeConvergence({ object: ref, generation: record.generation, watermark, envoys, now: context.now, policy: context.policy, lineageHeartbeats, ...(context.tableClock === undefined ? {} : { tableClock: context.tableClock }) });
  return { live, truncated, source: 'states' };
}

export async function objectView(context: ViewContext, ref: ObjectRef, generation: number | undefined) {
  let record;
  if (generation === undefined) {
    const latest = await context.store.listObjectGenerations(ref, { descending: true, limit: 1 });
    record = latest.items[0];
    const corrupt = latest.corrupt[0];
    if (record === undefined && corrupt !== undefined) throw new HttpError(500, 'CorruptItem', `the latest generation of this object is unreadable: ${corrupt.error}`);
  } else {
    const read = await context.store.getObjectGeneration(ref, generation);
    if (read.status === 'corrupt') throw new HttpError(500, 'CorruptItem', `generation ${generation} of this object is unreadable: ${read.error}`);
    record = read.status === 'found' ? read.value : undefined;
  }
  if (record === undefined) {
    throw new HttpError(404, 'ObjectNotFound', generation === undefined ? 'no generation of this object has been seen by a gateway' : `generation ${generation} of this object has not been seen by a gateway`);
  }
  const { live, truncated, source } = context.liveFromProgress === undefined ? await liveFromStates(context, ref, record) : { live: await context.liveFromProgress(record), truncated: false, source: 'progress' as const };
  // The store's typed read drops attributes its schema does not know, such as the decision.
  const raw = context.rawObjectItem === undefined ? undefined : await context.rawObjectItem(ref, record.generation);
  const decision = raw === undefined || raw[DECISION_ATTRIBUTE] === undefined ? undefined : DecisionSchema.safeParse(raw[DECISION_ATTRIBUTE]);
  return {
    object: ref,
    generation: record.generation,
    condition: record.lastCondition ?? null,
    firstSeenAt: record.firstSeenAt,
    programmedAt: record.programmedAt ?? null,
    notObservable: record.notObservable ?? null,
    watermarks: record.watermarks,
    decision: decision?.success === true ? decision.data : null,
    live: {
      state: live.state,
      programmed: live.programmed,
      total: live.total,
      blockers: live.blockers.slice(0, context.maxBlockersListed).map(blockerView),
      blockersNotListed: Math.max(0, live.blockers.length - context.maxBlockersListed) + (live.blockersOmitted ?? 0),
      fleetTruncated: truncated,
      source,
    },
  };
}
