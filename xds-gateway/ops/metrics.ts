// Prometheus metrics (prom-client, one Registry per gateway so tests can run several in a process).
// Counters of ACK/NACK/STUCK count events *written* to the store (an event counts once it is
// durable, docs/GATEWAY.md "Acknowledged"); request counters count what Envoys sent.
// Gauges are collected from the tracker and the recorder at scrape time.
// Label values that come from Envoys (node group keys are node.cluster or a metadata field; type URLs
// are anything printable over ADS) go through BoundedLabels: every distinct value is a time series
// in this process and in Prometheus, so an Envoy inventing values must not create series without end.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { KNOWN_TYPE_URLS, lineageGroupId, type EnvoyEvent } from '../../common/core';
import type { StateDemotionStats } from '../tracking/progress/state-demotion';
import type { StreamRefusalReason } from '../relay/downstream-common';
import type { RelayMetrics } from '../relay/relay';
import type { BarrierMetrics } from '../tracking/barrier';
import type { EnvoyTracker, TrackerMetrics } from '../tracking/envoy-tracker';
import type { Recorder, RecorderMetrics } from '../tracking/recorder';

/**
 * The label value shared by every input past a BoundedLabels' limit. No group label can be it
 * (lineageGroupId gives [a-z0-9-]), nor a type label (a type URL spelled so is relabelled).
 */
export const OTHER_LABEL = '_other';

/** Every metric of the gateway starts with this (the project's metrics are all `xds_programmed_…`). */
export const METRIC_PREFIX = 'xds_programmed_gateway_';

/** How many node groups get a label value of their own (the rest share OTHER_LABEL). */
export const GROUP_LABEL_LIMIT = 100;
/** How many type URLs beyond the five known ones get a label value of their own. */
export const UNKNOWN_TYPE_LABEL_LIMIT = 16;
const TYPE_LABEL_MAX_LENGTH = 128;

/** Label values for Envoy-supplied strings: the first `limit` distinct inputs get their own value, later ones share OTHER_LABEL. */
export class BoundedLabels {
  private readonly values = new Map<string, string>();

  constructor(
    private readonly limit: number,
    private readonly format: (input: string) => string,
  ) {}

  of(input: string): string {
    const known = this.values.get(input);
    if (known !== undefined) return known;
    if (this.values.size >= this.limit) return OTHER_LABEL;
    const value = this.format(input);
    this.values.set(input, value);
    return value;
  }
}

/** Group label: the group's lineage part ([a-z0-9-]{1,63}, hashed when sanitised), as in its lineages. */
export function groupLabels(): BoundedLabels {
  return new BoundedLabels(GROUP_LABEL_LIMIT, lineageGroupId);
}

/** Type label: CDS, EDS, LDS, RDS, SDS, else the type URL (cut to 128 characters), bounded. */
export function typeLabels(): { of(typeUrl: string): string } {
  const unknown = new BoundedLabels(UNKNOWN_TYPE_LABEL_LIMIT, (typeUrl) => {
    const cut = typeUrl.slice(0, TYPE_LABEL_MAX_LENGTH);
    return cut === OTHER_LABEL ? `${cut}-type` : cut;
  });
  return { of: (typeUrl) => KNOWN_TYPE_URLS[typeUrl] ?? unknown.of(typeUrl) };
}

/** Fixed label values of xds_programmed_gateway_streams_refused_total (initialised at 0 so rates work from the start). */
const REFUSAL_REASONS: readonly StreamRefusalReason[] = ['peer_streams', 'node_ids', 'node_groups', 'node_id_not_in_cert', 'invalid_node'];

const UPSTREAM_STATE_RANK: Record<string, number> = { ready: 0, connecting: 1, unavailable: 2 };

interface MetricSources {
  tracker: EnvoyTracker;
  recorder: Recorder;
  openStreams?: () => number;
  /** Node groups the relay serves now (the tracker remembers groups the relay has freed). */
  liveGroups?: () => Iterable<string>;
  /** --state-writes class-changes: states handed to the recorder and demoted (state-demotion.ts). */
  stateDemotion?: () => StateDemotionStats;
  /** With --progress: the publisher's writes by what made each due (progress-timing.ts). */
  progressWrites?: () => Readonly<Record<string, number>>;
}

export interface GatewayMetrics {
  registry: Registry;
  recorder: RecorderMetrics;
  tracker: TrackerMetrics;
  barrier: BarrierMetrics;
  /** Backpressure: the relay was paused (true) or resumed (false). */
  relayPaused(paused: boolean): void;
  /** Stream refusals and node id takeovers (relay.ts RelayMetrics). */
  relay: RelayMetrics;
  /** A node group moved to a new lineage (docs/PROVENANCE.md §6). */
  lineageMoved(group: string): void;
  /** A node group was freed after its idle time without streams. */
  groupFreed(): void;
  /** Gauges read from these at scrape time. */
  attach(sources: MetricSources): void;
}

export function createGatewayMetrics(options: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  // prom-client's process and Node.js metrics under the same prefix as ours:
  // xds_programmed_gateway_process_cpu_seconds_total, xds_programmed_gateway_nodejs_heap_size_used_bytes, …
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  let sources: MetricSources | undefined;
  const groupLabel = groupLabels();
  const typeLabel = typeLabels();

  const events = new Counter({ name: 'xds_programmed_gateway_events_written_total', help: 'ACK/NACK/STUCK events durably written, by outcome and type', labelNames: ['outcome', 'type'], registers: [registry] });
  const requests = new Counter({ name: 'xds_programmed_gateway_requests_total', help: 'Envoy requests by classification (initial/ack/nack/stale/unknownNonce) and type', labelNames: ['class', 'type'], registers: [registry] });
  const stuck = new Counter({ name: 'xds_programmed_gateway_stuck_detected_total', help: 'responses unanswered past the ACK timeout', labelNames: ['type'], registers: [registry] });
  const writeLatency = new Histogram({
    name: 'xds_programmed_gateway_store_write_seconds',
    help: 'store call latency by operation',
    labelNames: ['operation'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const writeFailures = new Counter({ name: 'xds_programmed_gateway_store_write_failures_total', help: 'store calls that failed and were re-queued', labelNames: ['operation'], registers: [registry] });
  const writesDropped = new Counter({
    name: 'xds_programmed_gateway_store_writes_dropped_total',
    help: 'writes the store can never accept (schema, DynamoDB ValidationException): dropped, never retried; the Envoy is refused',
    labelNames: ['operation'],
    registers: [registry],
  });
  const reopens = new Histogram({ name: 'xds_programmed_gateway_barrier_reopen_seconds', help: 'upstream re-open for an observed-generation barrier', labelNames: ['group'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers: [registry] });
  const watermarks = new Counter({ name: 'xds_programmed_gateway_barrier_watermarks_total', help: 'watermarks recorded by barriers', registers: [registry] });
  const pauses = new Counter({ name: 'xds_programmed_gateway_relay_pauses_total', help: 'times downstream streams were paused because the recorder queue reached its high-water mark', registers: [registry] });
  const paused = new Gauge({ name: 'xds_programmed_gateway_relay_paused', help: '1 while downstream streams are paused by backpressure', registers: [registry] });
  const lineageMoves = new Counter({
    name: 'xds_programmed_gateway_lineage_moves_total',
    help: `node groups moved to a new lineage because upstream content could go back (target change, provenance guard); group: the first ${GROUP_LABEL_LIMIT} groups, then ${OTHER_LABEL}`,
    labelNames: ['group'],
    registers: [registry],
  });
  const redone = new Counter({ name: 'xds_programmed_gateway_barrier_redone_total', help: 'barriers re-done because the leader changed', registers: [registry] });
  const refused = new Counter({
    name: 'xds_programmed_gateway_streams_refused_total',
    help: 'downstream streams refused: peer_streams, node_ids, node_groups (caps), node_id_not_in_cert (mTLS binding), invalid_node',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of REFUSAL_REASONS) refused.inc({ reason }, 0);
  const takeovers = new Counter({ name: 'xds_programmed_gateway_node_id_takeovers_total', help: 'node ids whose streams were ended because a newer connection claimed the node id', registers: [registry] });
  const groupsFreed = new Counter({ name: 'xds_programmed_gateway_node_groups_freed_total', help: 'node groups freed after their idle time without streams', registers: [registry] });

  new Gauge({
    name: 'xds_programmed_gateway_queue_depth',
    help: 'recorder queue depth by kind',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      const stats = sources.recorder.stats();
      this.set({ kind: 'events' }, stats.queuedEvents);
      this.set({ kind: 'envoy_states' }, stats.queuedEnvoyStates);
      this.set({ kind: 'lineage_states' }, stats.queuedLineageStates);
      this.set({ kind: 'watermarks' }, stats.queuedWatermarks);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_dropped_total',
    help: 'valid records discarded by the recorder (always 0: backpressure never drops)',
    registers: [registry],
    collect() {
      this.set(sources?.recorder.stats().dropped ?? 0);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_backpressure',
    help: '1 while the recorder queue is above its high-water mark',
    registers: [registry],
    collect() {
      this.set(sources?.recorder.pressure() === true ? 1 : 0);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_streams',
    help: 'open downstream xDS streams',
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.set(sources.openStreams?.() ?? sources.tracker.snapshot().streams);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_envoys',
    help: 'Envoys known to this gateway by status',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      const { envoys } = sources.tracker.snapshot();
      this.set({ status: 'connected' }, envoys.connected);
      this.set({ status: 'disconnected' }, envoys.disconnected);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_envoys_behind',
    help: 'connected Envoys whose ACK is behind the type\'s current version',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.reset();
      // Types sharing a label (OTHER_LABEL) report the largest of their values.
      for (const [type, value] of maxByLabel(Object.entries(sources.tracker.snapshot().behind), (typeUrl) => typeLabel.of(typeUrl), (entry) => entry.envoys)) this.set({ type }, value);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_versions_behind_max',
    help: 'largest number of type changes a connected Envoy has not ACKed yet',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.reset();
      for (const [type, value] of maxByLabel(Object.entries(sources.tracker.snapshot().behind), (typeUrl) => typeLabel.of(typeUrl), (entry) => entry.maxVersionsBehind)) this.set({ type }, value);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_upstream_ready',
    help: `1 if the group's upstream subscription is ready, 0 otherwise; groups past the first ${GROUP_LABEL_LIMIT} share group="${OTHER_LABEL}" (1 only if all are ready, state the worst)`,
    labelNames: ['group', 'state'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.reset();
      const live = sources.liveGroups === undefined ? undefined : new Set(sources.liveGroups());
      const worst = new Map<string, string>();
      for (const status of sources.tracker.snapshot().upstream) {
        if (live !== undefined && !live.has(status.group)) continue;
        const group = groupLabel.of(status.group);
        const seen = worst.get(group);
        if (seen === undefined || (UPSTREAM_STATE_RANK[status.state] ?? 0) > (UPSTREAM_STATE_RANK[seen] ?? 0)) worst.set(group, status.state);
      }
      for (const [group, state] of worst) this.set({ group, state }, state === 'ready' ? 1 : 0);
    },
  });
  new Counter({
    name: 'xds_programmed_gateway_envoy_states_offered_total',
    help: 'with --state-writes class-changes: Envoy states the tracker produced, by whether the recorder was handed them (written) or only the PROGRESS item counted them (demoted)',
    labelNames: ['outcome'],
    registers: [registry],
    // Read from the demotion's own counts at scrape time (they only grow, as a counter's must).
    collect() {
      const stats = sources?.stateDemotion?.();
      if (stats === undefined) return;
      this.reset();
      this.inc({ outcome: 'written' }, stats.written);
      this.inc({ outcome: 'demoted' }, stats.demoted);
    },
  });
  new Counter({
    name: 'xds_programmed_gateway_progress_writes_total',
    help: 'with --progress: PROGRESS item writes, by what made each due (first, members, anchors, programmed, blockers: at once; counts: the refresh; heartbeat)',
    labelNames: ['why'],
    registers: [registry],
    collect() {
      const writes = sources?.progressWrites?.();
      if (writes === undefined) return;
      this.reset();
      for (const [why, count] of Object.entries(writes)) this.inc({ why }, count);
    },
  });
  new Counter({
    name: 'xds_programmed_gateway_version_log_items_total',
    help: 'with --event-log-mode chunks: version-log items written (chunk, membership) and the answers the chunks hold (answer)',
    labelNames: ['item'],
    registers: [registry],
    collect() {
      const stats = sources?.recorder.stats().versionLog;
      if (stats === undefined) return;
      this.reset();
      this.inc({ item: 'chunk' }, stats.chunksWritten);
      this.inc({ item: 'membership' }, stats.membersWritten);
      this.inc({ item: 'answer' }, stats.answersWritten);
    },
  });
  new Gauge({
    name: 'xds_programmed_gateway_lineage_seq',
    help: `current seq of each lineage served by this gateway (lineages of the first ${GROUP_LABEL_LIMIT} groups only)`,
    labelNames: ['group', 'lineage'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      // Reset: retired lineages (moved, or their group freed) must not stay listed forever.
      this.reset();
      for (const lineage of sources.tracker.snapshot().lineages) {
        const group = groupLabel.of(lineage.group);
        // A lineage names its group, so it is as unbounded as the group: listed for labelled groups only.
        if (group !== OTHER_LABEL) this.set({ group, lineage: lineage.lineage }, lineage.currentSeq);
      }
    },
  });

  return {
    registry,
    recorder: {
      eventsWritten(written: readonly EnvoyEvent[]) {
        for (const event of written) events.inc({ outcome: event.outcome, type: typeLabel.of(event.typeUrl) });
      },
      writeLatency(operation, seconds) {
        writeLatency.observe({ operation }, seconds);
      },
      writeFailed(operation) {
        writeFailures.inc({ operation });
      },
      writeDropped(operation) {
        writesDropped.inc({ operation });
      },
    },
    tracker: {
      requestClassified(kind, typeUrl) {
        requests.inc({ class: kind, type: typeLabel.of(typeUrl) });
      },
      stuckDetected(typeUrl) {
        stuck.inc({ type: typeLabel.of(typeUrl) });
      },
    },
    barrier: {
      reopened(group, seconds) {
        reopens.observe({ group: groupLabel.of(group) }, seconds);
      },
      watermarksRecorded(count) {
        watermarks.inc(count);
      },
      redone() {
        redone.inc();
      },
    },
    relay: {
      streamRefused(reason) {
        refused.inc({ reason });
      },
      nodeIdTakenOver() {
        takeovers.inc();
      },
    },
    lineageMoved(group) {
      lineageMoves.inc({ group: groupLabel.of(group) });
    },
    groupFreed() {
      groupsFreed.inc();
    },
    relayPaused(now) {
      paused.set(now ? 1 : 0);
      if (now) pauses.inc();
    },
    attach(next) {
      sources = next;
    },
  };
}

/** Per label, the largest value of the entries mapped to it. */
function maxByLabel<T>(entries: Iterable<[string, T]>, label: (key: string) => string, value: (entry: T) => number): Map<string, number> {
  const result = new Map<string, number>();
  for (const [key, entry] of entries) {
    const name = label(key);
    result.set(name, Math.max(result.get(name) ?? Number.NEGATIVE_INFINITY, value(entry)));
  }
  return result;
}
