// DynamoDB unreachable for two minutes while spec changes are posted, on the whole local system
// (startLocalSystem). The front's `unreachable` fault resets every connection of the gateway's and
// the functions' clients and pauses stream delivery (docs/LOCAL-DYNAMO.md, "Faults"). During it the
// gateway queues what it cannot write, its relay pauses at the recorder's high-water mark
// (backpressure), /readyz says why it is not ready, a new Envoy's stream is opened but held without
// config (stream admission, and the pause), and a disconnect is queued. After it: every object True at
// its latest generation counting exactly the connected Envoys, every ACK the Envoys sent is in the
// table, the aggregates equal a recount of the Envoy states, and no True was ever written while a live
// Envoy held older content (judged by the provenance stamps in the bytes the Envoys received, as the
// truth checker does: test/truth/checker.ts). No wall-clock limit is asserted (the repo's rule); the
// recovery time is measured and printed (docs/RELIABILITY.md, "DynamoDB outage").
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, parseVersion } from '../../../common/core';
import type { SimEnvoy } from '../../../infra/local/envoys';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, sampleCanaryService, sampleService } from '../../../infra/local/system/samples';
import { buildFunctionContext } from '../../../functions/lib/context';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { checkTrueWrites, type Violation } from '../../truth/checker';
import { tapFleetResponses } from '../../truth/content';
import { ConditionObserver } from '../../truth/observer';
import { checkAggregatesMatchRecount, recountEnv } from '../../truth/recount';
import { envoyAnswers, eventually } from '../gateway/helpers';

/** The requirement: DynamoDB unreachable for two minutes. */
const OUTAGE_MS = 120_000;
const ENVOYS = 6;
const OBJECTS = 3;
const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];
const ENVOY_TTL_MS = 30_000;
// The gateway's own --queue-high-water is 50,000 events; six Envoys would need thousands of changes
// to reach it. A small mark makes the two minutes exercise the backpressure path.
const QUEUE_HIGH_WATER = 12;
// Once paused no request is read, so the queue stops at the mark, plus at most one event per stream
// and type for an answer read in the same turn (docs/GATEWAY.md, "Backpressure").
const QUEUE_BOUND = QUEUE_HIGH_WATER + (ENVOYS + 1) * TYPES.length;
const CONDITION_TYPE = 'EnvoyProgrammed';
const OBJECT_PREFIX = 'projectcontour.io/HTTPProxy/default/';
const CONNECTED_AT_THE_END = ENVOYS; // one disconnected, one joined

jest.setTimeout(OUTAGE_MS + 240_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Sample {
  at: number;
  queuedEvents: number;
  queuedEnvoyStates: number;
  paused: boolean;
  consecutiveFailures: number;
}

describe('local system, DynamoDB unreachable for 2 minutes during spec changes', () => {
  // Before any stream opens: the bytes every simulated Envoy receives, for the content judgement.
  const contents = tapFleetResponses();
  let system: LocalSystem;
  let gateway: Gateway;
  let observer: ConditionObserver;
  let dir: string;
  const generations = new Map<string, number>();
  let changeCounter = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-outage-'));
    system = await startLocalSystem(
      { envoys: ENVOYS, grpcClients: 0, objects: OBJECTS, stateDir: dir, ackTimeoutMs: 5000, envoyTtlMs: ENVOY_TTL_MS, expireEveryMs: 2000, gatewayQueueHighWater: QUEUE_HIGH_WATER },
      { logger },
    );
    const inProcess = system.gateway?.gateway;
    if (inProcess === undefined) throw new Error(`gateway not running in-process: ${JSON.stringify(system.unavailable)}`);
    gateway = inProcess;
    observer = new ConditionObserver(system.kube.url, CONDITION_TYPE);
    observer.start();
    for (const name of system.objects) generations.set(name, 1);
  }, 90_000);

  afterAll(async () => {
    system?.dynamo.local.faults.clear();
    await observer?.stop();
    await system?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const allTrue = (count: number): boolean =>
    system.objects.every((name) => {
      const condition = observer.current(name)?.condition;
      return condition?.status === 'True' && condition.observedGeneration === generations.get(name) && condition.message.startsWith(`${count}/${count} Envoys programmed`);
    });
  const describeObjects = (): string => system.objects.map((name) => `${name}@${generations.get(name)}: ${JSON.stringify(observer.current(name)?.condition)}`).join('; ');

  /** A new route prefix every time, the service moved between primary and canary (CDS and RDS change). */
  async function changeSpec(index: number): Promise<void> {
    const name = system.objects[index] ?? '';
    const service = ++changeCounter % 2 === 1 ? sampleCanaryService(index) : sampleService(index);
    const patch = { spec: { routes: [{ conditions: [{ prefix: `/outage-${changeCounter}` }], services: [{ name: service, port: 8080 }] }] } };
    const response = await fetch(`${system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify(patch),
    });
    if (!response.ok) throw new Error(`patching ${name}: HTTP ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { metadata?: { generation?: number } };
    generations.set(name, body.metadata?.generation ?? Number.NaN);
  }

  /** Whether the Envoy has ACKed, on every type, the latest version the gateway's group has (its cache). */
  const holdsLatest = (envoy: SimEnvoy): boolean => {
    const group = gateway.relay.control.groups().find((candidate) => candidate.group === 'ingress');
    if (group === undefined) return false;
    return TYPES.every((typeUrl) => {
      const seq = group.typeHistory[typeUrl]?.slice(-1)[0];
      return seq !== undefined && envoy.acceptedVersion(typeUrl) === `xp1:${group.lineage}:${seq}`;
    });
  };

  const readyz = async (): Promise<{ status: number; body: string }> => {
    const response = await fetch(`${system.endpoints.gatewayOpsUrl ?? ''}/readyz`);
    return { status: response.status, body: await response.text() };
  };
  const metric = (text: string, name: string): number | undefined => {
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(name.length + 1));
  };
  const metricSum = (text: string, name: string): number =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);

  it('holds everything while DynamoDB is unreachable and converges correctly once it returns', async () => {
    expect(system.unavailable).toEqual([]);
    await observer.waitFor(() => allTrue(ENVOYS), 60_000, `every object True 6/6 at generation 1 (${describeObjects()})`);
    expect(await readyz()).toMatchObject({ status: 200 });
    const sims = system.fleet.simEnvoys;
    const leaving = sims[ENVOYS - 1] as SimEnvoy;

    // The steady state includes the readers' table clock: the expire function has completed a tick
    // (core table-clock.ts). Before its first tick there is no clock and staleness is on wall time, so
    // an outage in a system's first seconds would age everyone (docs/CONVERGENCE.md).
    const clockReader = buildFunctionContext(
      recountEnv({ storeEnv: system.dynamo.storeEnv, envoyTtlMs: ENVOY_TTL_MS, ackTimeoutMs: 5000, conditionType: CONDITION_TYPE, kubeconfigPath: system.endpoints.kubeconfigPath }),
      logger,
    );
    try {
      await eventually(async () => ((await clockReader.aggregates.getLineageRegistry()).clock === undefined ? undefined : true), 'a completed expire tick (the table clock)', 30_000);
    } finally {
      clockReader.close();
    }

    // --- the outage
    const samples: Sample[] = [];
    const sampler = setInterval(() => {
      const stats = gateway.recorder.stats();
      samples.push({ at: Date.now(), queuedEvents: stats.queuedEvents, queuedEnvoyStates: stats.queuedEnvoyStates, paused: gateway.relay.control.paused(), consecutiveFailures: stats.consecutiveFailures });
    }, 100);
    const readyzSeen = new Set<string>();
    const outageStart = Date.now();
    system.dynamo.local.faults.set({ unreachable: true });
    const at = (offsetMs: number): Promise<void> => sleep(Math.max(0, outageStart + offsetMs - Date.now()));
    const pollReadyz = async (): Promise<void> => {
      const seen = await readyz();
      readyzSeen.add(`${seen.status} ${seen.body.trim()}`);
    };

    await at(5_000);
    await changeSpec(0);
    await at(20_000);
    await pollReadyz();
    // A disconnect during the outage: queued like any change (its state cannot be written yet).
    leaving.disconnect();
    await at(30_000);
    await changeSpec(1);
    await at(40_000);
    // A new Envoy during the outage: its stream opens (nothing refuses it) but gets no config.
    const joining = system.fleet.sim.add({
      node: { id: `envoy-${ENVOYS}`, cluster: 'ingress', userAgentName: 'envoy' },
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
      reconnectOnError: true,
      reconnectDelayMs: 500,
    });
    joining.connect();
    await at(60_000);
    await changeSpec(2);
    await pollReadyz();
    await at(90_000);
    await changeSpec(0);
    await at(100_000);
    await pollReadyz();
    const metricsDuring = await (await fetch(system.endpoints.metricsUrl ?? '')).text();
    // What the new Envoy saw so far (30 s after it connected): an open stream, no response, no status.
    const joinedTruth = system.fleet.sim.truth.envoyTruth(joining.id);
    const joinedDuring = {
      status: joining.status,
      openStreams: joining.openStreams,
      connectionEvents: joinedTruth?.connections.map((event) => event.kind) ?? [],
      responsesReceived: TYPES.filter((typeUrl) => joinedTruth?.types.get(typeUrl)?.lastReceived !== undefined).length,
    };
    const envoysHoldingLatest = sims.filter((envoy) => envoy !== leaving && holdsLatest(envoy)).length;
    await at(110_000);
    await changeSpec(1);
    await at(OUTAGE_MS);

    // --- DynamoDB returns
    system.dynamo.local.faults.clear();
    const returnedAt = Date.now();
    const writesBeforeReturn = observer.writes.filter((write) => write.at < returnedAt).length;
    await observer.waitFor(() => allTrue(CONNECTED_AT_THE_END), 180_000, `every object True ${CONNECTED_AT_THE_END}/${CONNECTED_AT_THE_END} at its latest generation after the outage (${describeObjects()})`).catch((error: unknown) => {
      throw new Error(`${String(error)}\nrecorder ${JSON.stringify(gateway.recorder.stats())}`);
    });
    const recoveryMs = Date.now() - returnedAt;
    clearInterval(sampler);
    const peak = samples.reduce((max, sample) => Math.max(max, sample.queuedEvents), 0);
    const peakStates = samples.reduce((max, sample) => Math.max(max, sample.queuedEnvoyStates), 0);
    const pausedFor = samples.filter((sample) => sample.paused).length * 100;
    const resumedAfterReturn = samples.find((sample) => sample.at >= returnedAt && !sample.paused);
    process.stdout.write(
      `dynamo outage: ${OUTAGE_MS} ms, ${changeCounter} spec changes during it; recovery (return → every object True ${CONNECTED_AT_THE_END}/${CONNECTED_AT_THE_END} at its latest generation) ${recoveryMs} ms ` +
        `(TTL ${ENVOY_TTL_MS} ms); queue peak ${peak} events (high-water ${QUEUE_HIGH_WATER}, bound ${QUEUE_BOUND}), ${peakStates} Envoy states; relay paused ~${pausedFor} ms, ` +
        `running again ${resumedAfterReturn === undefined ? '?' : resumedAfterReturn.at - returnedAt} ms after the return; readyz during: ${[...readyzSeen].join(' | ')}; ` +
        `new Envoy during: ${JSON.stringify(joinedDuring)}; Envoys holding the latest config during: ${envoysHoldingLatest}/${ENVOYS - 1}; ` +
        `connections reset ${system.dynamo.local.faults.counts.resetConnections}; condition writes during the outage ${writesBeforeReturn - observer.writes.filter((write) => write.at < outageStart).length}; ` +
        `after the return: ${observer.writes.filter((write) => write.at >= returnedAt).map((write) => `+${write.at - returnedAt} ms ${write.name}@${write.condition.observedGeneration} ${write.condition.status}/${write.condition.reason} "${write.condition.message.slice(0, 80)}"`).join('; ')}\n`,
    );

    // During: not ready, naming the store and backpressure; the queue bounded; nothing dropped.
    expect([...readyzSeen].every((seen) => seen.startsWith('503 not ready:'))).toBe(true);
    expect([...readyzSeen].some((seen) => seen.includes('store'))).toBe(true);
    expect([...readyzSeen].some((seen) => seen.includes('backpressure'))).toBe(true);
    expect(peak).toBeGreaterThanOrEqual(QUEUE_HIGH_WATER);
    expect(peak).toBeLessThanOrEqual(QUEUE_BOUND);
    expect(metric(metricsDuring, 'xds_programmed_gateway_relay_paused')).toBe(1);
    expect(metric(metricsDuring, 'xds_programmed_gateway_backpressure')).toBe(1);
    expect(metric(metricsDuring, 'xds_programmed_gateway_dropped_total')).toBe(0);
    expect(metricSum(metricsDuring, 'xds_programmed_gateway_store_write_failures_total')).toBeGreaterThan(0);
    expect(metricSum(metricsDuring, 'xds_programmed_gateway_store_writes_dropped_total')).toBe(0);
    // The new Envoy: its stream open and never ended (no gRPC status), no response before the return.
    expect(joinedDuring).toEqual({ status: 'connected', openStreams: 1, connectionEvents: ['connected'], responsesReceived: 0 });
    // The Envoys already connected got nothing past the change that paused the relay.
    expect(envoysHoldingLatest).toBe(0);
    // No condition moves while the functions cannot read or write the table.
    expect(observer.writes.filter((write) => write.at >= outageStart + 5_000 && write.at < returnedAt)).toEqual([]);
    // Nobody aged during the outage (the table clock, docs/CONVERGENCE.md "Staleness across a table
    // gap"): after the return no object says its connected Envoys are gone.
    expect(observer.writes.filter((write) => write.at >= returnedAt && write.condition.reason === 'NoEnvoys').map((write) => `${write.name}@${write.condition.observedGeneration}`)).toEqual([]);
    // Nobody is blamed for answers the paused relay did not read (the tracker credits the unread time
    // to every wait in every state it writes meanwhile, disconnects included): no Stuck after the return.
    expect(observer.writes.filter((write) => write.at >= returnedAt && write.condition.reason === 'Stuck').map((write) => `${write.name}@${write.condition.observedGeneration}: ${write.condition.message}`)).toEqual([]);
    // The totals count Envoys, never more than ever connected (envoys 0-5 and the new one): states in
    // transit that re-incarnate a member are that member again (core envoysInTransit).
    const envoysEver = ENVOYS + 1;
    const overcounted = observer.writes.filter((write) => Number(/^\d+\/(\d+) Envoys/.exec(write.condition.message)?.[1] ?? 0) > envoysEver);
    expect(overcounted.map((write) => `${write.name}@${write.condition.observedGeneration}: ${write.condition.message}`)).toEqual([]);

    // After: ready again, the relay running, every queue empty.
    await gateway.recorder.whenIdle();
    expect(await readyz()).toMatchObject({ status: 200 });
    expect(gateway.relay.control.paused()).toBe(false);
    expect(gateway.recorder.stats()).toMatchObject({ queuedEvents: 0, dropped: 0, eventsRejected: 0 });
    // The new Envoy got config once it was recorded, and no stream error on the way.
    expect(system.fleet.sim.truth.envoyTruth(joining.id)?.connections.map((event) => event.kind)).toEqual(['connected']);

    // Nothing lost: every ACK an Envoy sent is an ACK in the table, in its event log or its lineage's
    // version log (the one that left: every ACK it sent before the outage; an ACK it sent while its
    // stream was paused was never read).
    const missing: string[] = [];
    for (const envoy of [...sims, joining]) {
      const stored = await envoyAnswers(gateway.store, gateway.versionLog, envoy.id, TYPES);
      const has = new Set(stored.filter((event) => event.outcome === 'ACK').map((event) => `${event.typeUrl}|${event.lineage}|${event.seq}`));
      for (const typeUrl of TYPES) {
        for (const accepted of system.fleet.sim.truth.acceptedVersions(envoy.id, typeUrl)) {
          if (envoy === leaving && accepted.acceptedAt >= outageStart) continue;
          const version = parseVersion(accepted.versionInfo);
          if (!version.ok) throw new Error(`${envoy.id} accepted a version that is not the gateway's: ${accepted.versionInfo}`);
          if (!has.has(`${typeUrl}|${version.value.lineage}|${version.value.seq}`)) missing.push(`${envoy.id} ${typeUrl} ${accepted.versionInfo}`);
        }
      }
    }
    expect(missing).toEqual([]);

    // Invariant 5 of the truth checker: the aggregates equal a recount of the Envoy states.
    const context = buildFunctionContext(
      recountEnv({ storeEnv: system.dynamo.storeEnv, envoyTtlMs: ENVOY_TTL_MS, ackTimeoutMs: 5000, conditionType: CONDITION_TYPE, kubeconfigPath: system.endpoints.kubeconfigPath }),
      logger,
    );
    try {
      expect(await checkAggregatesMatchRecount(context.deps)).toEqual([]);
    } finally {
      context.close();
    }

    // No false True, ever: each True write judged by what every live Envoy had accepted at that moment.
    const violations: Violation[] = checkTrueWrites(observer.writes, {
      truth: system.fleet.sim.truth,
      contents,
      rebuildLogs: system.controlPlane.replicas.map((replica) => replica.controlPlane.rebuildLog),
      subscribedTypes: TYPES,
      envoyTtlMs: ENVOY_TTL_MS,
      envoyHeartbeatMs: Math.min(30_000, Math.floor(ENVOY_TTL_MS / 4)),
      sourcePrefix: OBJECT_PREFIX,
    });
    expect(violations.filter((violation) => violation.known !== true)).toEqual([]);
    expect(contents.undecodable).toEqual([]);
    // The judgement ran on the Trues after the return, at the final generations.
    expect(observer.writes.filter((write) => write.at >= returnedAt && write.condition.status === 'True').length).toBeGreaterThanOrEqual(OBJECTS);
  });
});
