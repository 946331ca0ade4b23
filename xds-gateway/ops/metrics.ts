// Prometheus metrics (prom-client, one Registry per gateway so tests can run several in a process).
// Counters of ACK/NACK/STUCK count events *written* to the store (an event counts once it is
// durable, docs/GATEWAY.md "Acknowledged"); request counters count what Envoys sent.
// Gauges are collected from the tracker and the recorder at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { KNOWN_TYPE_URLS, type EnvoyEvent } from '../../common/core';
import type { BarrierMetrics } from '../tracking/barrier';
import type { EnvoyTracker, TrackerMetrics } from '../tracking/envoy-tracker';
import type { Recorder, RecorderMetrics } from '../tracking/recorder';

/** Short type label (CDS, LDS…) or the type URL for others. */
export function typeLabel(typeUrl: string): string {
  return KNOWN_TYPE_URLS[typeUrl] ?? typeUrl;
}

export interface GatewayMetrics {
  registry: Registry;
  recorder: RecorderMetrics;
  tracker: TrackerMetrics;
  barrier: BarrierMetrics;
  /** Backpressure: the relay was paused (true) or resumed (false). */
  relayPaused(paused: boolean): void;
  /** A node group moved to a new lineage (docs/PROVENANCE.md §6). */
  lineageMoved(group: string): void;
  /** Gauges read from these at scrape time. */
  attach(sources: { tracker: EnvoyTracker; recorder: Recorder; openStreams?: () => number }): void;
}

export function createGatewayMetrics(options: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'xds_gateway_process_' });
  let sources: { tracker: EnvoyTracker; recorder: Recorder; openStreams?: () => number } | undefined;

  const events = new Counter({ name: 'xds_gateway_events_written_total', help: 'ACK/NACK/STUCK events durably written, by outcome and type', labelNames: ['outcome', 'type'], registers: [registry] });
  const requests = new Counter({ name: 'xds_gateway_requests_total', help: 'Envoy requests by classification (initial/ack/nack/stale/unknownNonce) and type', labelNames: ['class', 'type'], registers: [registry] });
  const stuck = new Counter({ name: 'xds_gateway_stuck_detected_total', help: 'responses unanswered past the ACK timeout', labelNames: ['type'], registers: [registry] });
  const writeLatency = new Histogram({
    name: 'xds_gateway_store_write_seconds',
    help: 'store call latency by operation',
    labelNames: ['operation'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const writeFailures = new Counter({ name: 'xds_gateway_store_write_failures_total', help: 'store calls that failed and were re-queued', labelNames: ['operation'], registers: [registry] });
  const reopens = new Histogram({ name: 'xds_gateway_barrier_reopen_seconds', help: 'upstream re-open for an observed-generation barrier', labelNames: ['group'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers: [registry] });
  const watermarks = new Counter({ name: 'xds_gateway_barrier_watermarks_total', help: 'watermarks recorded by barriers', registers: [registry] });
  const pauses = new Counter({ name: 'xds_gateway_relay_pauses_total', help: 'times downstream streams were paused because the recorder queue reached its high-water mark', registers: [registry] });
  const paused = new Gauge({ name: 'xds_gateway_relay_paused', help: '1 while downstream streams are paused by backpressure', registers: [registry] });
  const lineageMoves = new Counter({ name: 'xds_gateway_lineage_moves_total', help: 'node groups moved to a new lineage because upstream content could go back (target change, provenance guard)', labelNames: ['group'], registers: [registry] });
  const redone = new Counter({ name: 'xds_gateway_barrier_redone_total', help: 'barriers re-done because the leader changed', registers: [registry] });

  new Gauge({
    name: 'xds_gateway_queue_depth',
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
    name: 'xds_gateway_dropped_total',
    help: 'valid records discarded by the recorder (always 0: backpressure never drops)',
    registers: [registry],
    collect() {
      this.set(sources?.recorder.stats().dropped ?? 0);
    },
  });
  new Gauge({
    name: 'xds_gateway_backpressure',
    help: '1 while the recorder queue is above its high-water mark',
    registers: [registry],
    collect() {
      this.set(sources?.recorder.pressure() === true ? 1 : 0);
    },
  });
  new Gauge({
    name: 'xds_gateway_streams',
    help: 'open downstream xDS streams',
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.set(sources.openStreams?.() ?? sources.tracker.snapshot().streams);
    },
  });
  new Gauge({
    name: 'xds_gateway_envoys',
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
    name: 'xds_gateway_envoys_behind',
    help: 'connected Envoys whose ACK is behind the type\'s current version',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      for (const [typeUrl, entry] of Object.entries(sources.tracker.snapshot().behind)) this.set({ type: typeLabel(typeUrl) }, entry.envoys);
    },
  });
  new Gauge({
    name: 'xds_gateway_versions_behind_max',
    help: 'largest number of type changes a connected Envoy has not ACKed yet',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      for (const [typeUrl, entry] of Object.entries(sources.tracker.snapshot().behind)) this.set({ type: typeLabel(typeUrl) }, entry.maxVersionsBehind);
    },
  });
  new Gauge({
    name: 'xds_gateway_upstream_ready',
    help: '1 if the group\'s upstream subscription is ready, 0 otherwise',
    labelNames: ['group', 'state'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      this.reset();
      for (const status of sources.tracker.snapshot().upstream) this.set({ group: status.group, state: status.state }, status.state === 'ready' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'xds_gateway_lineage_seq',
    help: 'current seq of each lineage served by this gateway',
    labelNames: ['group', 'lineage'],
    registers: [registry],
    collect() {
      if (sources === undefined) return;
      for (const lineage of sources.tracker.snapshot().lineages) this.set({ group: lineage.group, lineage: lineage.lineage }, lineage.currentSeq);
    },
  });

  return {
    registry,
    recorder: {
      eventsWritten(written: readonly EnvoyEvent[]) {
        for (const event of written) events.inc({ outcome: event.outcome, type: typeLabel(event.typeUrl) });
      },
      writeLatency(operation, seconds) {
        writeLatency.observe({ operation }, seconds);
      },
      writeFailed(operation) {
        writeFailures.inc({ operation });
      },
    },
    tracker: {
      requestClassified(kind, typeUrl) {
        requests.inc({ class: kind, type: typeLabel(typeUrl) });
      },
      stuckDetected(typeUrl) {
        stuck.inc({ type: typeLabel(typeUrl) });
      },
    },
    barrier: {
      reopened(group, seconds) {
        reopens.observe({ group }, seconds);
      },
      watermarksRecorded(count) {
        watermarks.inc(count);
      },
      redone() {
        redone.inc();
      },
    },
    lineageMoved(group) {
      lineageMoves.inc({ group });
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
