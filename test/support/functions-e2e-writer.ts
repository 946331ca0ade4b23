// A separate OS process playing the xDS gateway's part for the functions' end-to-end test: it writes
// lineage state, Envoy states (core transitions, conditional on rev), ACK/NACK events and watermarks
// through the real store adapter to the local DynamoDB front, exactly as the gateway's Recorder
// would. The test drives it with one JSON command per stdin line; each gets one JSON reply line
// `{ id, ok, ... }` on stdout once its writes are acknowledged by DynamoDB. Usage:
//   node --import tsx test/support/functions-e2e-writer.ts <endpoint> <table>
import { createInterface } from 'node:readline';
import pino from 'pino';
import { z } from 'zod';

import {
  applyAck,
  applyDisconnect,
  applyNack,
  applySent,
  applySubscribe,
  newEnvoyState,
  ttlEpochSeconds,
  withProgrammedThrough,
  type EnvoyEvent,
  type EnvoyState,
  type LineageState,
} from '../../common/core';
import { openTable } from '../../common/store';

const [endpoint, tableName] = process.argv.slice(2);
if (endpoint === undefined || tableName === undefined) {
  console.error('usage: functions-e2e-writer.ts <endpoint> <table>');
  process.exit(2);
}

const logger = pino({ level: 'silent' });
const table = openTable({
  tableName,
  client: { region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 10 },
  logger,
});
const { store } = table;

const refSchema = z.object({ group: z.string(), kind: z.string(), namespace: z.string(), name: z.string() });
const commandSchema = z.discriminatedUnion('op', [
  z.object({ id: z.number(), op: z.literal('start'), lineage: z.string(), types: z.array(z.string()).min(1), envoys: z.array(z.string()).min(1), heartbeatAt: z.number() }),
  z.object({ id: z.number(), op: z.literal('change'), typeUrl: z.string(), heartbeatAt: z.number() }),
  z.object({ id: z.number(), op: z.literal('watermark'), object: refSchema, generation: z.number().int().positive() }),
  z.object({ id: z.number(), op: z.literal('send'), nodeId: z.string(), typeUrl: z.string() }),
  z.object({ id: z.number(), op: z.literal('ack'), nodeId: z.string() }),
  z.object({ id: z.number(), op: z.literal('nack'), nodeId: z.string(), typeUrl: z.string(), message: z.string() }),
  z.object({ id: z.number(), op: z.literal('disconnect'), nodeId: z.string() }),
]);
type Command = z.infer<typeof commandSchema>;

const EVENT_RETENTION_MS = 86_400_000;
let lineage: LineageState | undefined;
let lineageRev: number | undefined;
const envoys = new Map<string, { state: EnvoyState; rev: number | undefined }>();
/** Node ids counted in the lineage's `envoysRecorded` (convergence's denominator check). */
const recorded = new Set<string>();

function currentLineage(): LineageState {
  if (lineage === undefined) throw new Error('no "start" command yet');
  return lineage;
}

function versionOf(typeUrl: string): { lineage: string; seq: number } {
  const state = currentLineage();
  const history = state.typeHistory[typeUrl] ?? [];
  return { lineage: state.lineage, seq: history[history.length - 1] ?? 0 };
}

async function saveLineage(next: LineageState): Promise<void> {
  const rev = lineageRev === undefined ? 0 : lineageRev + 1;
  const result = await store.putLineageState({ ...next, envoysRecorded: recorded.size, rev }, lineageRev);
  if (!result.ok) throw new Error(`lineage ${next.lineage}: rev conflict`);
  lineage = { ...next, rev };
  lineageRev = rev;
}

function takeSeq(state: LineageState, typeUrl: string): LineageState {
  const seq = state.currentSeq + 1;
  return { ...state, currentSeq: seq, typeHistory: { ...state.typeHistory, [typeUrl]: [...(state.typeHistory[typeUrl] ?? []), seq] } };
}

async function saveEnvoy(nodeId: string, next: EnvoyState): Promise<void> {
  const known = envoys.get(nodeId);
  const state = currentLineage();
  const rev = known?.rev === undefined ? 0 : known.rev + 1;
  const computed = { ...withProgrammedThrough(next, state.typeHistory, { currentSeq: state.currentSeq }), rev };
  // Like the gateway's Recorder: the lineage counts a new Envoy before its first state is written,
  // so convergence never decides without an Envoy whose state is still in transit.
  if (!recorded.has(nodeId)) {
    recorded.add(nodeId);
    await saveLineage(state);
  }
  const result = await store.updateEnvoyState(computed, known?.rev);
  if (!result.ok) throw new Error(`envoy ${nodeId}: rev conflict`);
  envoys.set(nodeId, { state: computed, rev });
}

function envoy(nodeId: string): EnvoyState {
  const known = envoys.get(nodeId);
  if (known === undefined) throw new Error(`unknown envoy ${nodeId}`);
  return known.state;
}

async function recordEvents(events: EnvoyEvent[]): Promise<void> {
  const result = await store.putEvents(events);
  if (result.failed.length > 0) throw new Error(`${result.failed.length} events not written`);
}

function event(nodeId: string, outcome: 'ACK' | 'NACK', typeUrl: string, now: number, message?: string): EnvoyEvent {
  const { lineage: eventLineage, seq } = versionOf(typeUrl);
  return { nodeId, outcome, lineage: eventLineage, seq, typeUrl, at: now, ttl: ttlEpochSeconds(now, EVENT_RETENTION_MS), ...(message === undefined ? {} : { message }) };
}

async function ackAll(nodeId: string, now: number): Promise<void> {
  let state = envoy(nodeId);
  const events: EnvoyEvent[] = [];
  for (const typeUrl of Object.keys(state.types)) {
    const version = versionOf(typeUrl);
    state = applyAck(applySent(state, { typeUrl, version, now }), { typeUrl, version, now });
    events.push(event(nodeId, 'ACK', typeUrl, now));
  }
  // The Recorder's order: events, then states.
  await recordEvents(events);
  await saveEnvoy(nodeId, state);
}

async function run(command: Command): Promise<void> {
  const now = Date.now();
  switch (command.op) {
    case 'start': {
      let state: LineageState = {
        lineage: command.lineage,
        instanceId: command.lineage.split('.')[0] ?? 'gw',
        bootId: command.lineage.split('.')[1] ?? 'boot',
        group: 'edge',
        currentSeq: 0,
        typeHistory: {},
        historyStart: 0,
        startedAt: now,
        heartbeatAt: command.heartbeatAt,
        rev: 0,
      };
      for (const typeUrl of command.types) state = takeSeq(state, typeUrl);
      await saveLineage(state);
      for (const nodeId of command.envoys) {
        let fresh = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: command.lineage, now });
        for (const typeUrl of command.types) fresh = applySubscribe(fresh, { typeUrl, lineage: command.lineage, now });
        envoys.set(nodeId, { state: fresh, rev: undefined });
        await ackAll(nodeId, now);
      }
      return;
    }
    case 'change':
      await saveLineage({ ...takeSeq(currentLineage(), command.typeUrl), heartbeatAt: command.heartbeatAt });
      return;
    case 'watermark': {
      const state = currentLineage();
      const types = Object.fromEntries(Object.keys(state.typeHistory).map((typeUrl) => [typeUrl, versionOf(typeUrl).seq]));
      await store.putWatermark(command.object, command.generation, state.lineage, { seq: state.currentSeq, types, at: now });
      return;
    }
    case 'send':
      await saveEnvoy(command.nodeId, applySent(envoy(command.nodeId), { typeUrl: command.typeUrl, version: versionOf(command.typeUrl), now }));
      return;
    case 'ack':
      await ackAll(command.nodeId, now);
      return;
    case 'nack': {
      const version = versionOf(command.typeUrl);
      const sent = applySent(envoy(command.nodeId), { typeUrl: command.typeUrl, version, now });
      await recordEvents([event(command.nodeId, 'NACK', command.typeUrl, now, command.message)]);
      await saveEnvoy(command.nodeId, applyNack(sent, { typeUrl: command.typeUrl, version, message: command.message, now }));
      return;
    }
    case 'disconnect':
      await saveEnvoy(command.nodeId, applyDisconnect(envoy(command.nodeId), now));
      return;
  }
}

function reply(body: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(body)}\n`);
}

// One command at a time, in order: the test waits for each reply before the next.
let queue: Promise<void> = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  queue = queue.then(async () => {
    let id: unknown;
    try {
      const parsed: unknown = JSON.parse(line);
      id = typeof parsed === 'object' && parsed !== null && 'id' in parsed ? parsed.id : undefined;
      const command = commandSchema.parse(parsed);
      await run(command);
      reply({ id: command.id, ok: true });
    } catch (error) {
      reply({ id, ok: false, error: error instanceof Error ? error.message : String(error) });
    }
  });
});
lines.on('close', () => {
  void queue.then(() => table.close());
});
