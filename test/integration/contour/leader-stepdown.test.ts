// Unmodified Contour behind the gateway (barrier mode, following the Lease) through the two ways its
// status writer goes away other than a crash (through-gateway.test.ts covers the SIGKILL):
//
// 1. The leader steps down (SIGTERM: Contour releases its Lease on the way out) while a spec change
//    is in flight; the other replica takes the Lease and the gateway follows it. Then the stopped
//    replica comes back (ContourComponent.restartReplica) and another change converges.
// 2. Every replica stops and starts again: new processes with a fresh snapshot version space on the
//    same addresses. The leader's replica is started first so that the gateway's target stays the
//    same address (no re-targeting, so no new lineage from setUpstreamTarget): whatever Contour's new
//    version strings are, the barrier must still only say True after content.
//
// Every True write is judged by what every Envoy holds (held-content.ts, test/truth/client-content.ts);
// the slow Envoy ACKs 1.5 s late so a watermark taken too early shows as a violation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { sampleFqdn, sampleName } from '../../../infra/local/system/samples';
import { waitFor } from '../../support/eventually';
import { ConditionObserver, type ConditionWrite } from '../../truth/observer';
import { connectHeldEnvoys, ContourJudge, type HeldEnvoyMode } from './system-support';

const CONDITION = 'EnvoyProgrammed';
const OBJECTS = 2;
const ENVOY_TTL_MS = 6000;
/** As through-gateway.test.ts: a 3 s Lease, so a lost leader is replaced within seconds. */
const LEASE = { leaseDurationSeconds: 3, renewDeadlineMs: 2000, retryPeriodMs: 500 };
/** The bound a change in flight across a leader change must be True within. */
const RECOVERY_BOUND_MS = ENVOY_TTL_MS + 5000;

const ENVOYS: HeldEnvoyMode[] = [
  { id: 'envoy-per-type-sotw', cluster: 'ingress', transport: 'per-type', protocol: 'sotw' },
  { id: 'envoy-ads-delta', cluster: 'ingress', transport: 'ads', protocol: 'delta' },
  { id: 'envoy-slow', cluster: 'edge', transport: 'per-type', protocol: 'sotw', ackDelayMs: 1500 },
];

jest.setTimeout(240_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('unmodified Contour behind the gateway: leader step-down and a restart of every replica', () => {
  let system: LocalSystem<'inline', 'contour'>;
  let dir: string;
  let watch: ConditionObserver | undefined;
  let judge: ContourJudge;
  const measured: Record<string, number | string> = {};
  const observer = (): ConditionObserver => {
    if (!watch) throw new Error('no condition watch');
    return watch;
  };
  const changeRoute = (index: number): Promise<number> => judge.changeRoute(index);
  const waitTrue = (name: string, generation: number, timeoutMs: number): Promise<ConditionWrite> => judge.waitTrue(name, generation, timeoutMs);

  /** A change True at its generation no earlier than every Envoy held it, and no false True so far. */
  const expectConverged = async (index: number, generation: number, since: number, timeoutMs: number): Promise<ConditionWrite> => {
    const name = sampleName(index);
    const write = await waitTrue(name, generation, timeoutMs);
    const { violations } = judge.contentViolations();
    if (violations.length > 0) {
      const history = observer().writes.filter((w) => w.name === name).map((w) => `${new Date(w.at).toISOString()} ${w.condition.status} G${String(w.condition.observedGeneration)} ${w.condition.message ?? ''}`);
      throw new Error(`false True: ${violations.join('; ')}\n${name}'s condition writes:\n${history.join('\n')}`);
    }
    const everywhere = judge.programmedEverywhereAt(name, generation, since);
    expect(everywhere).toBeDefined();
    expect(write.at).toBeGreaterThanOrEqual(everywhere ?? Number.POSITIVE_INFINITY);
    return write;
  };

  const gatewayLeader = (): NonNullable<NonNullable<NonNullable<LocalSystem['gateway']>['gateway']>['leader']> => {
    const leader = system.gateway?.gateway?.leader;
    if (leader === undefined) throw new Error('the gateway does not follow a Lease');
    return leader;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'contour-stepdown-'));
    system = await startLocalSystem(
      { controlPlane: 'contour', envoys: 0, grpcClients: 0, objects: OBJECTS, stateDir: dir, envoyTtlMs: ENVOY_TTL_MS, ackTimeoutMs: 5000, expireEveryMs: 1000, controlPlaneLease: LEASE },
      { logger },
    );
    expect(system.unavailable).toEqual([]);
    judge = new ContourJudge(system, connectHeldEnvoys(system, ENVOYS, OBJECTS), OBJECTS, observer);
    for (const envoy of judge.held.values()) {
      for (let index = 0; index < OBJECTS; index++) {
        await waitFor(`${envoy.nodeId} routing ${sampleFqdn(index)}`, () => envoy.current(sampleName(index))?.complete === true || undefined, { timeoutMs: 30_000 });
      }
    }
    watch = new ConditionObserver(system.endpoints.kubeUrl, CONDITION);
    watch.start();
    for (let index = 0; index < OBJECTS; index++) await waitTrue(sampleName(index), 1, 30_000);
  }, 150_000);

  afterAll(async () => {
    await watch?.stop();
    await system?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    // The numbers docs/CONTOUR.md quotes ("Verified").
    if (Object.keys(measured).length > 0) console.log(`contour leader step-down / restart: ${JSON.stringify(measured)}`);
  });

  it('(1) the leader steps down (SIGTERM) mid-change: the other replica takes the Lease, the gateway follows, no false True, True within TTL + 5 s; the stopped replica comes back and another change converges', async () => {
    const following = gatewayLeader();
    const leader = await system.controlPlane.leader();
    if (leader === undefined) throw new Error('no Contour replica holds the Lease');
    const leaderIndex = system.controlPlane.replicas.indexOf(leader);
    const survivor = system.controlPlane.replicas.find((replica) => replica !== leader);
    if (survivor === undefined) throw new Error('no second Contour replica');
    await waitFor('the gateway following the Lease holder', () => following.currentTarget() === leader.xdsAddress || undefined, { timeoutMs: 10_000 });

    // Every holder the gateway's follower sees, in order: a step-down shows as a released Lease ('').
    const holdersSeen: { at: number; holder: string }[] = [];
    following.onChange(() => holdersSeen.push({ at: Date.now(), holder: following.currentHolder() }));

    const since = Date.now();
    const generation = await changeRoute(0);
    const steppedAt = Date.now();
    // A short grace, as a pod with a small terminationGracePeriodSeconds: Contour v1.33.6 sometimes
    // never finishes its shutdown (an informer event arriving after its event handler stopped blocks
    // on the handler's channel, so the caches never stop and the Lease is never released). Then the
    // SIGKILL makes this a crash and the Lease runs out; which path a run took is recorded.
    const stopped = leader.process.stop(2000).then((code) => ({ code, at: Date.now() }));
    const takenAt = await waitFor('the other replica holding the Lease', async () => ((await system.controlPlane.leaseHolder()).startsWith(`${survivor.name}_`) ? Date.now() : undefined), { timeoutMs: 20_000, intervalMs: 50 });
    const followedAt = await waitFor('the gateway following the new holder', () => (following.currentTarget() === survivor.xdsAddress ? Date.now() : undefined), { timeoutMs: 10_000, intervalMs: 20 });
    // The leader released its Lease before the survivor took it (not a Lease running out).
    const exit = await stopped;
    const released = holdersSeen.find((seen) => seen.holder === '');
    // A clean step-down exits 0 having released the Lease before the survivor took it. The follower
    // may not see the released state: a consistent read it makes for a barrier (LeaderFollower.confirm)
    // can apply the survivor's holder first, and the watch's older '' event is then dropped as stale
    // (seen once in CI). When it is seen, it comes first.
    if (exit.code === 0 && released !== undefined) {
      expect(holdersSeen.findIndex((seen) => seen.holder === '')).toBeLessThan(holdersSeen.findIndex((seen) => seen.holder.startsWith(`${survivor.name}_`)));
    }
    measured['stepDownReleaseSeenByFollower'] = released !== undefined ? 1 : 0;
    const write = await expectConverged(0, generation, since, RECOVERY_BOUND_MS - (Date.now() - steppedAt));
    expect(write.at - steppedAt).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    measured['stepDownToLeaseTakenMs'] = takenAt - steppedAt;
    measured['stepDownToGatewayFollowsMs'] = followedAt - steppedAt;
    measured['stepDownToTrueMs'] = write.at - steppedAt;
    measured['stepDownToReleasedMs'] = released === undefined ? 'never' : released.at - steppedAt;
    measured['stepDownToExitMs'] = `${exit.at - steppedAt} (code ${String(exit.code)}, Lease ${released === undefined ? 'ran out' : 'released'})`;

    // The stopped replica comes back as a follower; a change on the other sample converges.
    await system.controlPlane.restartReplica(leaderIndex);
    expect((await system.controlPlane.leader())?.name).toBe(survivor.name);
    const nextSince = Date.now();
    const next = await changeRoute(1);
    await expectConverged(1, next, nextSince, 30_000);
  });

  it('(2) every replica stops and starts again (fresh version space, same addresses): a change made while Contour is down, and one after, are True only after content', async () => {
    const following = gatewayLeader();
    const leader = await system.controlPlane.leader();
    if (leader === undefined) throw new Error('no Contour replica holds the Lease');
    const leaderIndex = system.controlPlane.replicas.indexOf(leader);
    const holderBefore = await system.controlPlane.leaseHolder();
    const writesBefore = observer().writes.length;
    const lineage = (): string => JSON.stringify((system.gateway?.gateway?.relay.control.groups() ?? []).map((g) => g.lineage).sort());
    const lineagesBefore = lineage();

    const stoppedAt = Date.now();
    const exits: string[] = [];
    for (const replica of system.controlPlane.replicas) exits.push(`${replica.name} ${String(await replica.process.stop(5000))}`);
    // Exit codes of the stop (null: Contour's shutdown hung, see (1), and the SIGKILL ended it).
    measured['stopAllExits'] = exits.join(', ');
    // A change in flight across the restart: no Contour is running to process it.
    const since = Date.now();
    const generation = await changeRoute(0);
    const restartedAt = Date.now();
    // The old leader's replica first, so the new holder maps to the address the gateway already targets.
    await system.controlPlane.restartReplica(leaderIndex);
    const holderAfter = await waitFor('a new holder of the Lease', async () => {
      const holder = await system.controlPlane.leaseHolder();
      return holder !== '' && holder !== holderBefore ? holder : undefined;
    }, { timeoutMs: 20_000, intervalMs: 50 });
    expect(holderAfter.startsWith(`${leader.name}_`)).toBe(true);
    const newLeader = system.controlPlane.replicas[leaderIndex];
    await waitFor('the gateway following the new holder', () => (following.currentHolder() === holderAfter && following.currentTarget() === newLeader?.xdsAddress ? true : undefined), { timeoutMs: 10_000, intervalMs: 20 });
    for (let index = 0; index < system.controlPlane.replicas.length; index++) {
      if (index !== leaderIndex) await system.controlPlane.restartReplica(index);
    }
    const write = await expectConverged(0, generation, since, 30_000);
    measured['stopAllToTrueMs'] = write.at - stoppedAt;
    measured['restartToTrueMs'] = write.at - restartedAt;
    // Recorded, not asserted: the same target keeps the lineage unless the relay starts a new one on its own.
    measured['restartKeptLineages'] = String(lineage() === lineagesBefore);

    // One more change, each sample, against the restarted Contour.
    for (const index of [0, 1]) {
      const changeSince = Date.now();
      const changed = await changeRoute(index);
      const changedWrite = await expectConverged(index, changed, changeSince, 30_000);
      measured[`restartedChange${index}ToTrueMs`] = changedWrite.at - changeSince;
    }
    const { violations, checked } = judge.contentViolations();
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThan(0);
    expect(observer().writes.length).toBeGreaterThan(writesBefore);
  });
});
