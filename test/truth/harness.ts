// The harness of one truth run: the objects and their generations, the fleet as the schedule sees it
// (indexes over the Envoys still around), and the application of each fault step to the system.
import type { Logger } from 'pino';
import { DEFAULT_BEHAVIOUR, type SimEnvoy } from '../../infra/local/envoys';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, sampleCanaryService, sampleName, sampleProxy, sampleService, SAMPLE_SERVICE_PORT } from '../../infra/local/system/samples';
import { streamFaultsFor, type StreamFaultSeam, type StreamFaultSettings } from '../../infra/local/dynamo/stream-faults';
import type { RebuildLog } from '../../infra/local/control-plane/rebuild-log';
import type { ConditionResyncReport } from '../../functions/lib/resync-conditions';
import { statusStorm, tamperCondition } from './competitor';
import { applyFleetFault } from './fleet-faults';
import type { ResponseContents } from './content';
import type { ConditionObserver } from './observer';
import type { FaultStep, TamperMode } from './schedule';
import { CONDITION_TYPE, SUBSCRIBED_TYPES, type TruthSystem } from './system';

export class Harness {
  readonly envoys: SimEnvoy[] = [];
  private readonly gone = new Set<string>();
  /** Silently vanished Envoys whose streams are still open (a partition with no FIN/RST yet). */
  private readonly partitioned: SimEnvoy[] = [];
  private readonly generations = new Map<string, number>();
  /** `name@generation` → the Service its route names (what the test posted), for the content check. */
  private readonly services = new Map<string, string>();
  private changeCounter = 0;
  private readonly storms: Array<Promise<void>> = [];
  /** 409s the competing status writer met (each one a write it lost to someone else). */
  stormConflicts = 0;
  /** Stream delivery faults now in force (duplicates and reorders are independent windows). */
  private streamFaultSettings: StreamFaultSettings = {};

  /** The delivery fault seam of the project table's stream (every function's deliveries see it). */
  streamFaults(): StreamFaultSeam {
    return streamFaultsFor(this.system.dynamo.local.tableStreams.get(this.system.dynamo.storeEnv['TABLE_NAME'] ?? ''));
  }

  private setStreamFaults(change: StreamFaultSettings): void {
    this.streamFaultSettings = { ...this.streamFaultSettings, ...change };
    this.streamFaults().set(this.streamFaultSettings);
  }

  private clearStreamFaults(): void {
    this.streamFaultSettings = {};
    this.streamFaults().clear();
  }

  /**
   * resourceVersions of the tampering competitor's writes: the watch event carrying one is its write,
   * never ours (invariants 1, 2 and 4 are checked on our writes only).
   */
  readonly competitorVersions = new Set<string>();
  /** Rebuild logs of control-plane replicas replaced by a leaderKill (still ground truth for their content). */
  readonly retiredRebuildLogs: RebuildLog[] = [];

  /** The resync function's condition pass (set by the runner), run once to repair a tampered condition. */
  runConditionPass?: () => Promise<ConditionResyncReport>;

  /** Whether a condition write (by its resourceVersion) was the tampering competitor's. */
  isCompetitorWrite(resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && this.competitorVersions.has(resourceVersion);
  }

  /** One tamper with an object's condition; returns whether the competitor wrote. */
  async tamper(object: number, mode: TamperMode): Promise<boolean> {
    const report = await tamperCondition(this.system.kube.url, sampleName(object), CONDITION_TYPE, mode);
    if (report.resourceVersion === undefined) return false;
    this.competitorVersions.add(report.resourceVersion);
    return true;
  }

  /** Waits for every competing-writer window (and Lease-renewal fault window) still running. */
  async stormsDone(): Promise<void> {
    await Promise.all(this.storms.splice(0));
  }

  constructor(
    readonly system: TruthSystem,
    readonly observer: ConditionObserver,
    readonly contents: ResponseContents,
    private readonly objects: number,
    private readonly logger: Logger,
  ) {}

  generation(name: string): number {
    return this.generations.get(name) ?? 1;
  }

  async createObjects(): Promise<void> {
    for (let index = 0; index < this.objects; index++) {
      const response = await fetch(`${this.system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(sampleProxy(index)),
      });
      if (response.status !== 201) throw new Error(`creating ${sampleName(index)}: HTTP ${response.status} ${await response.text()}`);
      this.generations.set(sampleName(index), 1);
      this.services.set(`${sampleName(index)}@1`, sampleService(index));
    }
  }

  /** A spec change: a new route prefix every time (RDS changes), and the service moved or not (CDS). */
  async changeSpec(object: number, canary: boolean): Promise<void> {
    const name = sampleName(object);
    const service = canary ? sampleCanaryService(object) : sampleService(object);
    const patch = { spec: { routes: [{ conditions: [{ prefix: `/c${++this.changeCounter}` }], services: [{ name: service, port: SAMPLE_SERVICE_PORT }] }] } };
    const response = await fetch(`${this.system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify(patch),
    });
    if (!response.ok) throw new Error(`patching ${name}: HTTP ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { metadata?: { generation?: number } };
    this.generations.set(name, body.metadata?.generation ?? this.generation(name));
    if (body.metadata?.generation !== undefined) this.services.set(`${name}@${body.metadata.generation}`, service);
  }

  /** The Service object `name`'s route named at `generation`, if this harness posted it. */
  serviceAt(name: string, generation: number): string | undefined {
    return this.services.get(`${name}@${generation}`);
  }

  envoyAt(index: number): SimEnvoy | undefined {
    const live = this.envoys.filter((envoy) => !this.gone.has(envoy.id));
    return live.length === 0 ? undefined : live[index % live.length];
  }

  addEnvoy(): void {
    this.envoys.push(this.system.addEnvoy());
  }

  /**
   * Scales the simulated fleet to `target` live Envoys: new ones join, or the newest leave as a
   * scaled-down pod does (its streams reset, never back). Returns the change (+ joined, − left).
   */
  resize(target: number): number {
    const live = this.envoys.filter((envoy) => !this.gone.has(envoy.id));
    for (let index = live.length; index < target; index++) this.addEnvoy();
    for (const envoy of live.slice(target).reverse()) {
      envoy.vanish('cancel');
      this.gone.add(envoy.id);
    }
    return target - live.length;
  }

  /** Applies one step; returns whether it injected something. */
  async apply(step: FaultStep): Promise<boolean> {
    const shared = applyFleetFault(step, {
      envoyAt: (index) => this.envoyAt(index),
      baseline: () => DEFAULT_BEHAVIOUR,
      gone: this.gone,
      partitioned: this.partitioned,
      addEnvoy: () => this.addEnvoy(),
      nackTypeUrl: SUBSCRIBED_TYPES[0] as string,
      dynamoFaults: this.system.dynamo.local.faults,
      setStreamFaults: (change) => this.setStreamFaults(change),
      clearFaults: () => {
        this.system.dynamo.local.faults.clear();
        this.clearStreamFaults();
      },
    });
    if (shared !== 'notShared') return shared;
    switch (step.kind) {
      case 'specChange':
        await this.changeSpec(step.object, step.canary);
        return true;
      case 'leaderKill': {
        // The leader's pod replaced: stopped (Lease released, or left to expire as after a crash), a
        // fresh replica with a new identity and address started in its slot. The gateway follows
        // the Lease to whichever replica holds it next.
        const controlPlane = this.system.controlPlane;
        const leader = controlPlane.leader();
        if (leader === undefined) return false;
        const old = await controlPlane.replaceReplica(controlPlane.replicas.indexOf(leader), { release: step.release });
        this.retiredRebuildLogs.push(old.controlPlane.rebuildLog);
        return true;
      }
      case 'leaderStepDown': {
        // The API server refuses the leader's Lease writes for a while: it steps down at its renew
        // deadline and the other replica takes over once the Lease expires (if the window outlasts it).
        const leader = this.system.controlPlane.leader();
        if (leader === undefined) return false;
        leader.failLeaseWritesUntil = Date.now() + step.ms;
        // The heal waits for the window to end, like a competing-writer window.
        this.storms.push(new Promise((resolve) => setTimeout(resolve, step.ms)));
        return true;
      }
      case 'conditionTamper':
        return this.tamper(step.object, step.mode);
      case 'statusStorm': {
        // Runs beside the rest of the schedule; the heal waits for it.
        const storm = statusStorm(this.system.kube.url, sampleName(step.object), step.ms).then((report) => {
          this.stormConflicts += report.conflicts;
          if (report.errors > 0) this.logger.warn({ report }, 'competing status writer: errors');
        });
        this.storms.push(storm);
        return true;
      }
      case 'gatewayKill':
        if (!this.system.gatewayProcess) return false;
        await this.system.gatewayProcess.killAndRestart();
        return true;
      default:
        throw new Error(`fault step ${step.kind} is applied by applyFleetFault`);
    }
  }

  /** Ends every fault: DynamoDB healthy, every Envoy default behaviour and connected, fleet size restored. */
  heal(targetEnvoys: number): void {
    this.system.dynamo.local.faults.clear();
    this.clearStreamFaults();
    // A silent vanish leaves an open stream that never answers: to the gateway that is a stuck Envoy
    // on a live connection, which rightly blocks True forever. The partition "heals" when the
    // connection finally breaks (keepalive, RST): the streams are cancelled, and the TTL runs.
    for (const envoy of this.partitioned.splice(0)) envoy.dispose();
    for (const envoy of this.envoys) {
      if (this.gone.has(envoy.id)) continue;
      envoy.setBehaviour(DEFAULT_BEHAVIOUR);
      if (envoy.status === 'disconnected') envoy.connect();
    }
    while (this.envoys.filter((envoy) => !this.gone.has(envoy.id)).length < targetEnvoys) this.addEnvoy();
  }

  allProgrammed(): boolean {
    for (let index = 0; index < this.objects; index++) {
      const name = sampleName(index);
      const write = this.observer.current(name);
      const condition = write?.condition;
      if (condition?.status !== 'True' || condition.observedGeneration !== this.generation(name)) return false;
      // A True the competitor wrote is not ours: the system must write its own.
      if (this.isCompetitorWrite(write?.resourceVersion)) return false;
    }
    return true;
  }

  describeObjects(): string {
    return Array.from({ length: this.objects }, (_, index) => {
      const name = sampleName(index);
      const condition = this.observer.current(name)?.condition;
      const by = this.isCompetitorWrite(this.observer.current(name)?.resourceVersion) ? ' (written by the competitor)' : '';
      return `${name} gen ${this.generation(name)}: ${condition ? `${condition.status}/${condition.reason}@${condition.observedGeneration} "${condition.message.slice(0, 160)}"${by}` : 'no condition'}`;
    }).join('\n  ');
  }

  /** Each Envoy's own view (ground truth): connection status, and per type last received / accepted. */
  describeEnvoys(): string {
    const truth = this.system.fleet.truth;
    return this.envoys
      .map((envoy) => {
        const types = [...(truth.envoyTruth(envoy.id)?.types.values() ?? [])].map((t) => {
          const accepted = t.accepted[t.accepted.length - 1];
          return `${t.typeUrl.split('.').pop() ?? t.typeUrl} rcv ${t.lastReceived?.versionInfo ?? '-'} acc ${accepted?.versionInfo ?? '-'}${t.nacks.length ? ` nacks ${t.nacks.length}` : ''}`;
        });
        return `${envoy.id} ${envoy.status}: ${types.join(', ')}`;
      })
      .join('\n  ');
  }
}
