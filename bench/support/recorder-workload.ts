// A gateway recorder workload without gRPC: a fleet of Envoy states driven by the core's transitions
// (as the EnvoyTracker drives them) through the real Recorder into a real store, counting what the
// store is asked to write. Used by bench/recorder-writes.ts (items per ACK before/after the event log) and by
// the recorder's integration test (every event durable and findable). Writes are counted at the
// document-client seam, where DynamoDB bills: every item put is a write, changed or not.
import type { Logger } from 'pino';

import {
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  RDS_TYPE_URL,
  applyAck,
  applySent,
  applySubscribe,
  dedupeEvents,
  eventIdentity,
  newEnvoyState,
  ttlEpochSeconds,
  type EnvoyEvent,
  type EnvoyState,
  type EventStore,
} from '../../common/core';
import type { DocumentOperations } from '../../common/store/operations';
import { lineageStateFor } from '../../xds-gateway/tracking/lineage-mirror';
import { Recorder } from '../../xds-gateway/tracking/recorder';

export interface WriteCounts {
  requests: number;
  items: number;
  /** Write units if each item costs ceil(size / 1 KB), size estimated as its JSON length. */
  approxWriteUnits: number;
  byKind: Record<string, number>;
}

export type CountingOperations = DocumentOperations & { counts: () => WriteCounts; reset: () => void };

function kindOf(item: Record<string, unknown>): string {
  const kind = item['kind'];
  return typeof kind === 'string' ? kind : 'unknown';
}

/** Wraps document operations and counts the items each write request carries. */
export function countingWrites(operations: DocumentOperations): CountingOperations {
  let counts: WriteCounts = { requests: 0, items: 0, approxWriteUnits: 0, byKind: {} };
  const count = (item: Record<string, unknown> | undefined): void => {
    if (item === undefined) return;
    counts.items++;
    counts.approxWriteUnits += Math.max(1, Math.ceil(JSON.stringify(item).length / 1024));
    const kind = kindOf(item);
    counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
  };
  return {
    get: (input) => operations.get(input),
    batchGet: (input) => operations.batchGet(input),
    query: (input) => operations.query(input),
    scan: (input) => operations.scan(input),
    delete: (input) => operations.delete(input),
    put: async (input) => {
      counts.requests++;
      count(input.Item);
      return operations.put(input);
    },
    update: async (input) => {
      counts.requests++;
      counts.items++;
      counts.approxWriteUnits++;
      counts.byKind['update'] = (counts.byKind['update'] ?? 0) + 1;
      return operations.update(input);
    },
    batchWrite: async (input) => {
      counts.requests++;
      for (const requests of Object.values(input.RequestItems ?? {})) for (const request of requests) count(request.PutRequest?.Item);
      return operations.batchWrite(input);
    },
    counts: () => ({ ...counts, byKind: { ...counts.byKind } }),
    reset: () => {
      counts = { requests: 0, items: 0, approxWriteUnits: 0, byKind: {} };
    },
  };
}

export interface RecorderWorkloadOptions {
  store: EventStore;
  operations: CountingOperations;
  logger: Logger;
  envoys: number;
  /** Types each change touches (1..4), taken from RDS, CDS, EDS, LDS in that order. */
  changedTypes: number;
  changes: number;
  mode: 'carried' | 'items';
  /** Each (Envoy, type) ACKs after a delay drawn uniformly from this range (ms). */
  ackDelayMs: [number, number];
  random: () => number;
  lineage?: string;
  nodePrefix?: string;
  flushIntervalMs?: number;
}

export interface RecorderWorkloadResult {
  acks: number;
  writes: WriteCounts;
  /** ACK events not found per Envoy and version afterwards (must be 0). */
  missingEvents: number;
  /** Types whose stored acked version has no ACK event in the log (must be 0). */
  stateAheadOfLog: number;
  /** Events listed more than once after dedupe (must be 0). */
  duplicates: number;
  wallMs: number;
}

const ALL_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];
/** A one-type change is a route change (RDS); three types add a service (CDS, EDS) and its route. */
const CHANGE_ORDER = [RDS_TYPE_URL, CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs setup (connect, subscribe every type, ACK it), then `changes` changes; counts the writes of the changes only. */
export async function runRecorderWorkload(options: RecorderWorkloadOptions): Promise<RecorderWorkloadResult> {
  const lineage = options.lineage ?? 'bench.boot.edge';
  const prefix = options.nodePrefix ?? 'envoy';
  const retentionMs = 7 * 24 * 3600 * 1000;
  const recorder = new Recorder({
    store: options.store,
    logger: options.logger,
    clock: { now: () => Date.now() },
    random: options.random,
    eventLogMode: options.mode,
    ...(options.flushIntervalMs === undefined ? {} : { flushIntervalMs: options.flushIntervalMs }),
  });
  const states = new Map<string, EnvoyState>();
  const enqueued: EnvoyEvent[] = [];
  let seq = 0;
  recorder.enqueueLineageState(lineageStateFor(lineage, 'edge', Date.now()));

  const ack = (nodeId: string, typeUrl: string, version: number): void => {
    const now = Date.now();
    const current = states.get(nodeId) as EnvoyState;
    const next = applyAck(current, { typeUrl, version: { lineage, seq: version }, now });
    states.set(nodeId, next);
    const event: EnvoyEvent = { nodeId, outcome: 'ACK', lineage, seq: version, typeUrl, at: now, ttl: ttlEpochSeconds(now, retentionMs) };
    enqueued.push(event);
    // As the tracker does: the event, then the state that reflects it.
    recorder.enqueueEvent(event);
    recorder.enqueueEnvoyState(next);
  };
  const send = (nodeId: string, typeUrl: string, version: number): void => {
    const next = applySent(states.get(nodeId) as EnvoyState, { typeUrl, version: { lineage, seq: version }, now: Date.now() });
    states.set(nodeId, next);
    recorder.enqueueEnvoyState(next);
  };

  // Setup: every Envoy subscribes to the four types and ACKs their first versions.
  const versions = new Map<string, number>();
  for (const typeUrl of ALL_TYPES) versions.set(typeUrl, ++seq);
  for (let i = 0; i < options.envoys; i++) {
    const nodeId = `${prefix}-${String(i).padStart(5, '0')}`;
    let state = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage, now: Date.now() });
    for (const typeUrl of ALL_TYPES) state = applySubscribe(state, { typeUrl, lineage, now: Date.now() });
    states.set(nodeId, state);
    for (const typeUrl of ALL_TYPES) send(nodeId, typeUrl, versions.get(typeUrl) as number);
    for (const typeUrl of ALL_TYPES) ack(nodeId, typeUrl, versions.get(typeUrl) as number);
  }
  await recorder.whenIdle();
  options.operations.reset();
  const setupAcks = enqueued.length;

  // Changes: the gateway sends each changed type to every Envoy; each ACKs after its own delay.
  const started = Date.now();
  const changed = CHANGE_ORDER.slice(0, Math.max(1, Math.min(4, options.changedTypes)));
  const [minDelay, maxDelay] = options.ackDelayMs;
  for (let change = 0; change < options.changes; change++) {
    for (const typeUrl of changed) versions.set(typeUrl, ++seq);
    const acks: Promise<void>[] = [];
    for (const nodeId of states.keys()) {
      for (const typeUrl of changed) {
        const version = versions.get(typeUrl) as number;
        send(nodeId, typeUrl, version);
        const delay = minDelay + options.random() * (maxDelay - minDelay);
        acks.push(sleep(delay).then(() => ack(nodeId, typeUrl, version)));
      }
    }
    await Promise.all(acks);
    await recorder.whenIdle();
  }
  await recorder.close();
  const wallMs = Date.now() - started;
  const writes = options.operations.counts();

  // Verify against the store: every ACK findable per Envoy and version, no state ahead of the log.
  let missingEvents = 0;
  let stateAheadOfLog = 0;
  let duplicates = 0;
  const byNode = new Map<string, Set<string>>();
  for (const event of enqueued) {
    const set = byNode.get(event.nodeId) ?? new Set<string>();
    set.add(eventIdentity(event));
    byNode.set(event.nodeId, set);
  }
  for (const [nodeId, expected] of byNode) {
    const listed: EnvoyEvent[] = [];
    let cursor: string | undefined;
    do {
      const page = await options.store.listEnvoyEvents(nodeId, cursor === undefined ? { limit: 1000 } : { limit: 1000, cursor });
      listed.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const unique = dedupeEvents(listed);
    duplicates += listed.length - unique.length;
    const found = new Set(unique.map(eventIdentity));
    for (const identity of expected) if (!found.has(identity)) missingEvents++;
    const stored = await options.store.getEnvoyState(nodeId);
    if (stored.status === 'found') {
      for (const [typeUrl, type] of Object.entries(stored.value.types)) {
        if (type.acked !== undefined && !found.has(eventIdentity({ lineage: type.lineage, seq: type.acked, typeUrl, outcome: 'ACK' }))) stateAheadOfLog++;
      }
    } else {
      stateAheadOfLog++;
    }
  }
  return { acks: enqueued.length - setupAcks, writes, missingEvents, stateAheadOfLog, duplicates, wallMs };
}
