// The truth checker against unmodified Contour (`run.ts --control-plane contour`): the whole local
// system from startLocalSystem with `controlPlane: 'contour'` (two `contour serve` replicas on the
// Lease `projectcontour/leader-elect`, the gateway in barrier mode following it), a fleet of
// simulated Envoys of every mode, and the same seeded schedules as the reference run, less what
// needs something Contour does not have.
//
// Ground truth by content only: Contour stamps no provenance, so each spec change moves the route
// to prefix `/gen-<G>` (test/integration/contour/held-content.ts decodes what every Envoy accepted,
// as it applied it) and a True of generation G is judged by whether every live Envoy could route the
// object's fqdn at G or later, to the Service the spec at that generation names — nothing of the
// gateway's watermarks or the product's own notion of "programmed" is asked.
//
// Faults: leaderKill is a SIGKILL of the Lease holder's replica (the Lease runs out), leaderStepDown
// a SIGTERM (Contour releases its Lease on the way out); either way the replica is started again
// under the same hostname and port, as its pod would be, and the heal waits for it. Left out:
// conditionTamper (its repair phase runs the resync condition pass over the reference system's
// context) and gatewayKill (startLocalSystem has no kill-and-restart of a child gateway). There are
// no real gRPC clients: Contour serves no API listeners.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { buildFunctionContext } from '../../functions/lib/context';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/xds';
import { DEFAULT_BEHAVIOUR, parseBehaviour, type SimEnvoy } from '../../infra/local/envoys';
import { startLocalSystem, type LocalSystem } from '../../infra/local/system';
import { startServingContourProcess, type ContourProcess } from '../../infra/local/system/contour';
import { streamFaultsFor, type StreamFaultSettings } from '../../infra/local/dynamo/stream-faults';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, sampleCanaryService, sampleFqdn, sampleName, sampleService } from '../../infra/local/system/samples';
import { HeldConfig } from '../integration/contour/held-content';
import { checkClientContent, type ClientUnderCheck } from './client-content';
import { checkRejectedMessages, checkWriteCounts, heardTimes, JOIN_RACE_MS, liveAt, type Violation } from './checker';
import { statusStorm } from './competitor';
import { applyFleetFault } from './fleet-faults';
import { checkRemovals } from './tamper';
import { DEFAULT_FLEET_MIX, describeMix, modeForEnvoy, protocolOf, transportOf, type EnvoyMode, type FleetMix } from './fleet-mix';
import { ConditionObserver } from './observer';
import { checkAggregatesMatchRecount, recountEnv } from './recount';
import { describeStep, generateSchedule, type FaultStep } from './schedule';
import type { ScheduleResult, TruthRunReport } from './runner';
import { CONDITION_TYPE, DEFAULT_TIMINGS, TRUTH_LEASE_TIMINGS } from './system';
import { describeDecisions, describeStoredStates, withTrueEvidence } from './diagnostics';
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../common/core/status-update';

export interface ContourTruthOptions {
  schedules: number;
  seed: number;
  envoys: number;
  objects: number;
  stepsPerSchedule: number;
  scheduleDurationMs: number;
  writeBound: number;
  recoveryBudgetMs?: number;
  leaderChange?: boolean;
  fleetMix?: FleetMix;
  /**
   * envoy-0 ACKs this late as its normal behaviour (restored at every heal; below the ACK timeout, so
   * never stuck): a watermark taken before Contour's snapshot has the change finds it still holding
   * the old route when True is written. Default 1000 ms; 0 turns it off.
   */
  slowAckMs?: number;
  /**
   * The local system's fleet-size path (PROGRESS decides; the gateway writes Envoy states on class
   * changes only and their answers to the version log): `--progress-evaluation`.
   */
  progressPath?: boolean;
  logger?: Logger;
  onSchedule?: (result: ScheduleResult) => void;
}

/** Step kinds that need the reference system (see the header); the schedule keeps its seed, they are skipped. */
export const CONTOUR_SKIPPED_STEPS: ReadonlySet<FaultStep['kind']> = new Set(['conditionTamper', 'gatewayKill']);
const OBJECT_PREFIX = `projectcontour.io/HTTPProxy/${SAMPLE_NAMESPACE}/`;
const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Contour names clusters `<ns>/<service>/<port>/<hash>`; the hash is Contour's, so judge on the rest. */
const withoutHash = (cluster: string): string => cluster.split('/').slice(0, 3).join('/');

export async function runContourTruth(options: ContourTruthOptions): Promise<TruthRunReport> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const timings = DEFAULT_TIMINGS;
  const stateDir = mkdtempSync(join(tmpdir(), 'xp-truth-contour-'));
  const system: LocalSystem<'inline', 'contour'> = await startLocalSystem(
    {
      controlPlane: 'contour',
      envoys: 0,
      grpcClients: 0,
      objects: options.objects,
      stateDir,
      envoyTtlMs: timings.envoyTtlMs,
      ackTimeoutMs: timings.ackTimeoutMs,
      expireEveryMs: timings.expireEveryMs,
      batchWindowMs: timings.batchWindowMs,
      // Invariant 5 must see drift, so the resync timer must not repair it first.
      resyncEveryMs: 3_600_000,
      controlPlaneLease: TRUTH_LEASE_TIMINGS,
      progressPath: options.progressPath === true,
    },
    { logger },
  );
  const run = new ContourRun(system, options, logger);
  try {
    if (system.unavailable.length > 0) throw new Error(`local system incomplete: ${JSON.stringify(system.unavailable)}`);
    return await run.all();
  } finally {
    await run.close();
    await system.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

class ContourRun {
  private readonly observer: ConditionObserver;
  private readonly envoys: SimEnvoy[] = [];
  private readonly held = new Map<string, HeldConfig>();
  private readonly modes = new Map<string, EnvoyMode>();
  private readonly gone = new Set<string>();
  private readonly partitioned: SimEnvoy[] = [];
  private readonly generations = new Map<string, number>();
  private readonly services = new Map<string, string>();
  private readonly waits: Array<Promise<void>> = [];
  /** Contour processes a leader fault stopped (a restart of one of them ending early is expected). */
  private readonly faulted = new WeakSet<ContourProcess>();
  private streamSettings: StreamFaultSettings = {};
  private stormConflicts = 0;
  private restarts = 0;
  private nextIndex = 0;
  private readonly resync;

  constructor(
    private readonly system: LocalSystem<'inline', 'contour'>,
    private readonly options: ContourTruthOptions,
    private readonly logger: Logger,
  ) {
    this.observer = new ConditionObserver(system.endpoints.kubeUrl, CONDITION_TYPE);
    this.resync = buildFunctionContext(
      recountEnv({ storeEnv: system.dynamo.storeEnv, envoyTtlMs: DEFAULT_TIMINGS.envoyTtlMs, ackTimeoutMs: DEFAULT_TIMINGS.ackTimeoutMs, conditionType: CONDITION_TYPE, kubeconfigPath: system.kube.kubeconfigPath, progressEvaluation: options.progressPath === true }),
      logger.child({ component: 'truth-recount' }),
    );
    for (let index = 0; index < options.objects; index++) {
      this.generations.set(sampleName(index), 1);
      this.services.set(`${sampleName(index)}@1`, sampleService(index));
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.waits.splice(0));
    await this.observer.stop();
    this.resync.close();
  }

  async all(): Promise<TruthRunReport> {
    this.observer.start();
    for (let index = 0; index < this.options.envoys; index++) this.addEnvoy();
    await this.observer.waitFor(() => this.allProgrammed(), 60_000, 'initial convergence').catch((error: unknown) => {
      throw new Error(`the system did not converge before any fault: ${String(error)}; ${this.describeObjects()}`);
    });
    const results: ScheduleResult[] = [];
    for (let index = 0; index < this.options.schedules; index++) {
      const result = await this.schedule(this.options.seed + index);
      results.push(result);
      this.options.onSchedule?.(result);
    }
    const faultsByKind: Record<string, number> = {};
    for (const result of results) for (const [kind, n] of Object.entries(result.faultsByKind)) faultsByKind[kind] = (faultsByKind[kind] ?? 0) + n;
    faultsByKind['contourRestart'] = this.restarts;
    const sum = (pick: (r: ScheduleResult) => number): number => results.reduce((total, r) => total + pick(r), 0);
    return {
      schedules: results,
      faultsInjected: sum((r) => r.faultsInjected),
      faultsByKind,
      violations: sum((r) => r.violations.length),
      knownRaces: sum((r) => r.knownRaces.length),
      maxRecoveryMs: Math.max(0, ...results.map((r) => r.recoveryMs)),
      maxWritesPerGeneration: Math.max(0, ...results.map((r) => r.maxWritesPerGeneration)),
      trueWritesChecked: sum((r) => r.trueWritesChecked),
      clientContentChecked: sum((r) => r.clientContentChecked),
      stormConflicts: this.stormConflicts,
      failedSeeds: results.filter((r) => r.violations.length > 0).map((r) => r.seed),
      fleet: describeMix([...this.modes.values()]),
      streamFaults: { ...streamFaultsFor(this.tableStream()).counts },
      leaseTransitions: await this.leaseTransitions(),
      competitorWrites: 0,
      repairs: 0,
      maxRepairMs: 0,
    };
  }

  private tableStream(): Parameters<typeof streamFaultsFor>[0] {
    const stream = this.system.dynamo.local.tableStreams.get(this.system.dynamo.storeEnv['TABLE_NAME'] ?? '');
    if (stream === undefined) throw new Error('the project table has no stream');
    return stream;
  }

  private async leaseTransitions(): Promise<number> {
    const response = await fetch(`${this.system.endpoints.kubeUrl}/apis/coordination.k8s.io/v1/namespaces/projectcontour/leases/leader-elect`).catch(() => undefined);
    if (!response?.ok) return 0;
    const lease = (await response.json()) as { spec?: { leaseTransitions?: number } };
    return lease.spec?.leaseTransitions ?? 0;
  }

  private addEnvoy(): void {
    const index = this.nextIndex++;
    const mode = modeForEnvoy(this.options.fleetMix ?? DEFAULT_FLEET_MIX, index, this.options.seed);
    const id = `envoy-${index}`;
    const config = new HeldConfig(id, new Map(Array.from({ length: this.options.objects }, (_, i) => [sampleName(i), sampleFqdn(i)])));
    this.modes.set(id, mode);
    this.held.set(id, config);
    const envoy = this.system.fleet.sim.add({
      node: { id, cluster: 'ingress', userAgentName: 'envoy' },
      transport: transportOf(mode),
      protocol: protocolOf(mode),
      subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
      reconnectOnError: true,
      reconnectDelayMs: 200,
      onAccepted: config.accept,
    });
    envoy.setBehaviour(this.baseline(envoy));
    envoy.connect();
    this.envoys.push(envoy);
  }

  /** What an Envoy does when no fault is on it (envoy-0 is the slow one). */
  private baseline(envoy: SimEnvoy): ReturnType<typeof parseBehaviour> {
    const slow = this.options.slowAckMs ?? 1000;
    return envoy.id === 'envoy-0' && slow > 0 ? parseBehaviour({ ackDelayMs: slow }) : DEFAULT_BEHAVIOUR;
  }

  private envoyAt(index: number): SimEnvoy | undefined {
    const live = this.envoys.filter((envoy) => !this.gone.has(envoy.id));
    return live.length === 0 ? undefined : live[index % live.length];
  }

  private generation(name: string): number {
    return this.generations.get(name) ?? 1;
  }

  /** Moves the route to `/gen-<next generation>` (on the primary or the canary Service). */
  private async changeSpec(object: number, canary: boolean): Promise<void> {
    const name = sampleName(object);
    const service = canary ? sampleCanaryService(object) : sampleService(object);
    const expected = this.generation(name) + 1;
    const url = `${this.system.endpoints.kubeUrl}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`;
    const response = await fetch(url, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { routes: [{ conditions: [{ prefix: `/gen-${expected}` }], services: [{ name: service, port: SAMPLE_SERVICE_PORT }] }] } }),
    });
    if (!response.ok) throw new Error(`patching ${name}: HTTP ${response.status} ${await response.text()}`);
    const generation = ((await response.json()) as { metadata?: { generation?: number } }).metadata?.generation;
    // Only this run changes specs; if the server's generation differs, the prefix would lie about it.
    if (generation !== expected) throw new Error(`${name}: generation ${String(generation)} after the patch, expected ${expected} (the prefix encodes it)`);
    this.generations.set(name, generation);
    this.services.set(`${name}@${generation}`, service);
  }

  /** Stops the Lease holder's replica (SIGKILL, or SIGTERM: it releases the Lease) and starts it again in its slot. */
  private async leaderFault(kill: boolean): Promise<boolean> {
    const contour = this.system.controlPlane;
    const leader = await contour.leader();
    if (leader === undefined) return false;
    const slot = contour.replicas.indexOf(leader);
    this.faulted.add(leader.process);
    await (kill ? leader.process.kill() : leader.process.stop(5000));
    const port = Number(leader.xdsAddress.slice(leader.xdsAddress.lastIndexOf(':') + 1));
    const lease = TRUTH_LEASE_TIMINGS;
    // Same hostname and port: the gateway's --leader-targets still map this replica's Lease holder.
    let spawned: ContourProcess | undefined;
    const restart = startServingContourProcess({
      binary: contour.install.binary,
      kubeconfig: this.system.kube.kubeconfigPath,
      extraArgs: ['--leader-election-lease-duration', `${lease.leaseDurationSeconds}s`, '--leader-election-renew-deadline', `${lease.renewDeadlineMs}ms`, '--leader-election-retry-period', `${lease.retryPeriodMs}ms`],
      hostname: leader.name,
      xdsPort: port,
      portChoice: 'fixed',
      onSpawn: (process) => {
        spawned = process;
        contour.replicas[slot] = { name: leader.name, xdsAddress: leader.xdsAddress, process };
      },
      logFile: join(this.system.endpoints.stateDir, `${leader.name}.log`),
    }).then(
      () => {
        this.restarts++;
      },
      (error: unknown) => {
        // A later leader fault may stop this replica while it starts (it carries the Lease holder's
        // name): that fault restarts it again, and this start's end is the fault, not a failure.
        if (spawned !== undefined && this.faulted.has(spawned)) return;
        throw error;
      },
    );
    this.waits.push(restart);
    return true;
  }

  private setStreamFaults(change: StreamFaultSettings): void {
    this.streamSettings = { ...this.streamSettings, ...change };
    streamFaultsFor(this.tableStream()).set(this.streamSettings);
  }

  private clearFaults(): void {
    this.system.dynamo.local.faults.clear();
    this.streamSettings = {};
    streamFaultsFor(this.tableStream()).clear();
  }

  /** Applies one step; returns whether it injected something (undefined: skipped with Contour). */
  private async apply(step: FaultStep): Promise<boolean | undefined> {
    const shared = applyFleetFault(step, {
      envoyAt: (index) => this.envoyAt(index),
      baseline: (envoy) => this.baseline(envoy),
      gone: this.gone,
      partitioned: this.partitioned,
      addEnvoy: () => this.addEnvoy(),
      nackTypeUrl: CDS_TYPE_URL,
      dynamoFaults: this.system.dynamo.local.faults,
      setStreamFaults: (change) => this.setStreamFaults(change),
      clearFaults: () => this.clearFaults(),
    });
    if (shared !== 'notShared') return shared;
    switch (step.kind) {
      case 'specChange':
        await this.changeSpec(step.object, step.canary);
        return true;
      case 'leaderKill':
        return this.leaderFault(true);
      case 'leaderStepDown':
        return this.leaderFault(false);
      case 'statusStorm':
        // Contour is a status writer too; the competing writer adds 409s for it and for us.
        this.waits.push(
          statusStorm(this.system.endpoints.kubeUrl, sampleName(step.object), step.ms).then((report) => {
            this.stormConflicts += report.conflicts;
          }),
        );
        return true;
      case 'conditionTamper':
      case 'gatewayKill':
        return undefined;
      default:
        throw new Error(`fault step ${step.kind} is applied by applyFleetFault`);
    }
  }

  private heal(): void {
    this.clearFaults();
    for (const envoy of this.partitioned.splice(0)) envoy.dispose();
    for (const envoy of this.envoys) {
      if (this.gone.has(envoy.id)) continue;
      envoy.setBehaviour(this.baseline(envoy));
      if (envoy.status === 'disconnected') envoy.connect();
    }
    while (this.envoys.filter((envoy) => !this.gone.has(envoy.id)).length < this.options.envoys) this.addEnvoy();
  }

  private allProgrammed(): boolean {
    return Array.from({ length: this.options.objects }, (_, index) => sampleName(index)).every((name) => {
      const condition = this.observer.current(name)?.condition;
      return condition?.status === 'True' && condition.observedGeneration === this.generation(name);
    });
  }

  private describeObjects(): string {
    return Array.from({ length: this.options.objects }, (_, index) => {
      const name = sampleName(index);
      const c = this.observer.current(name)?.condition;
      const views = [...this.held.values()].filter((h) => !this.gone.has(h.nodeId)).map((h) => `${h.nodeId} ${JSON.stringify(h.current(name))}`);
      return `${name} gen ${this.generation(name)}: ${c ? `${c.status}/${c.reason}@${c.observedGeneration} "${c.message.slice(0, 160)}"` : 'no condition'}; held: ${views.join('; ')}`;
    }).join('\n  ');
  }

  /** Every simulated Envoy, per object, as the content check sees it: its held views and its connections. */
  private clients(): ClientUnderCheck[] {
    const truth = this.system.fleet.sim.truth;
    const { envoyTtlMs, envoyHeartbeatMs } = DEFAULT_TIMINGS;
    return [...this.held.values()].flatMap((config) =>
      Array.from({ length: this.options.objects }, (_, index) => {
        const base = config.underCheck(sampleName(index), OBJECT_PREFIX);
        return {
          ...base,
          viewsBetween: (from: number, to: number) => base.viewsBetween(from, to).map((view) => ({ ...view, clusters: view.clusters.map(withoutHash) })),
          liveAt: (at: number) => {
            const recorded = truth.envoyTruth(config.nodeId);
            return recorded !== undefined && liveAt(recorded.connections, at, envoyTtlMs, envoyHeartbeatMs, heardTimes(recorded));
          },
          joinedRecently: (at: number) => {
            const connected = truth.envoyTruth(config.nodeId)?.connections.filter((event) => event.kind === 'connected' && event.at <= at).at(-1);
            return connected !== undefined && at - connected.at < JOIN_RACE_MS;
          },
        };
      }),
    );
  }

  private async schedule(seed: number): Promise<ScheduleResult> {
    const schedule = generateSchedule(seed, {
      envoys: this.options.envoys,
      objects: this.options.objects,
      steps: this.options.stepsPerSchedule,
      durationMs: this.options.scheduleDurationMs,
      leaderChange: this.options.leaderChange ?? true,
      gatewayKill: false,
    });
    const firstWrite = this.observer.writes.length;
    const startedAt = Date.now();
    const faultsByKind: Record<string, number> = {};
    const violations: Violation[] = [];
    const steps: string[] = [];
    for (const scheduled of schedule.steps) {
      const wait = startedAt + scheduled.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      try {
        const injected = await this.apply(scheduled.step);
        steps.push(`${describeStep(scheduled)}${injected === undefined ? ' (skipped with Contour)' : ''}`);
        if (injected === true) faultsByKind[scheduled.step.kind] = (faultsByKind[scheduled.step.kind] ?? 0) + 1;
      } catch (error) {
        violations.push({ invariant: 'checker', detail: `step ${describeStep(scheduled)} failed: ${String(error)}` });
      }
    }
    // Heal: competing writers done and restarted replicas serving, then every fault off and one
    // more change per object (the fix a user posts after a NACK), back on the primary Service.
    for (const result of await Promise.allSettled(this.waits.splice(0))) {
      if (result.status === 'rejected') violations.push({ invariant: 'checker', detail: String(result.reason) });
    }
    this.heal();
    const healedAt = Date.now();
    for (let index = 0; index < this.options.objects; index++) await this.changeSpec(index, false);
    const budget = this.options.recoveryBudgetMs ?? DEFAULT_TIMINGS.envoyTtlMs + 5000;
    await this.observer.waitFor(() => this.allProgrammed(), budget + 10_000, 'recovery').catch(() => undefined);
    const recoveryMs = Date.now() - healedAt;
    if (!this.allProgrammed() || recoveryMs > budget) {
      const refs = Array.from({ length: this.options.objects }, (_, index) => ({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: SAMPLE_NAMESPACE, name: sampleName(index) }));
      violations.push({
        invariant: 'I3-recovery',
        detail: `not every object True at its final generation within ${budget} ms (took ${recoveryMs} ms):\n  ${this.describeObjects()}\n  states (stored | gateway's tracker where it differs): ${await describeStoredStates(this.resync.deps, this.system.gateway?.gateway?.tracker)}\n  decisions: ${await describeDecisions(this.resync.deps, refs)}`,
      });
    }
    violations.push(...(await checkAggregatesMatchRecount(this.resync.deps)));
    // No competitor here touches our condition: any removal of it (Contour writes status too) is lost.
    violations.push(...checkRemovals({ isCompetitorWrite: () => false, observer: this.observer }, startedAt));
    const writes = this.observer.writes.slice(firstWrite);
    const content = checkClientContent(writes, {
      clients: this.clients(),
      sourcePrefix: OBJECT_PREFIX,
      expectedClusters: (object, generation) => {
        const service = this.services.get(`${object.slice(OBJECT_PREFIX.length)}@${generation}`);
        return service === undefined ? undefined : [`${SAMPLE_NAMESPACE}/${service}/${SAMPLE_SERVICE_PORT}`];
      },
      // Held views are recorded at the ACK itself, not polled.
      slackMs: 0,
    });
    violations.push(...(await withTrueEvidence(content.violations.filter((v) => !v.known), this.resync.deps)));
    violations.push(...checkRejectedMessages(writes, this.system.fleet.sim.truth));
    const counts = checkWriteCounts(writes, this.options.writeBound, DEFAULT_MESSAGE_REFRESH_MS);
    violations.push(...counts.violations);
    const truth = this.system.fleet.sim.truth;
    const nacksSeen = truth.nodeIds().reduce((sum, id) => sum + [...(truth.envoyTruth(id)?.types.values() ?? [])].reduce((s, t) => s + t.nacks.filter((n) => n.at >= startedAt).length, 0), 0);
    this.logger.debug({ seed, violations: violations.length }, 'contour schedule done');
    return {
      seed,
      steps,
      faultsInjected: Object.values(faultsByKind).reduce((a, b) => a + b, 0),
      faultsByKind,
      recoveryMs,
      violations,
      knownRaces: content.violations.filter((v) => v.known),
      maxWritesPerGeneration: counts.max,
      trueWritesChecked: writes.filter((w) => w.condition.status === 'True').length,
      clientContentChecked: content.checked,
      nacksSeen,
      stormConflicts: 0,
    };
  }
}
