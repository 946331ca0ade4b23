// The truth checker (docs/RELIABILITY.md): first the checks themselves on hand-made ground truth (each must be
// able to fail), then a small budget of seeded fault schedules against the real in-process system.
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { GroundTruth } from '../../infra/local/envoys';
import type { RebuildRecord } from '../../infra/local/control-plane/rebuild-log';
import { checkRejectedMessages, checkTrueWrites, checkWriteCounts, liveAt, type TruthInputs } from './checker';
import type { ConditionWrite } from './observer';
import { runTruth } from './runner';
import { generateSchedule } from './schedule';

const X = 'projectcontour.io/HTTPProxy/default/sample-0';
const TTL = 4000;
const HEARTBEAT = 1000;

function rebuild(generation: number): RebuildRecord {
  return {
    replicaId: 'cp-1',
    seq: generation,
    at: 0,
    versions: { CDS: 'c', EDS: 'e', LDS: 'l', RDS: 'r', SDS: 's' },
    changedTypes: [],
    contained: { CDS: [`${X}@${generation}`], EDS: [], LDS: [], RDS: [`${X}@${generation}`], SDS: [] },
    objects: [],
  };
}

/** Ground truth: envoy-a accepted gen 2 on CDS and RDS at t=100; envoy-b only gen 1 (then NACKed gen 2). */
function inputs(): TruthInputs {
  const truth = new GroundTruth();
  const contents = new Map<string, ReadonlySet<string>>([
    [`${CDS_TYPE_URL}|v1`, new Set([`${X}@1`])],
    [`${RDS_TYPE_URL}|v1`, new Set([`${X}@1`])],
    [`${CDS_TYPE_URL}|v2`, new Set([`${X}@2`])],
    [`${RDS_TYPE_URL}|v2`, new Set([`${X}@2`])],
  ]);
  for (const id of ['envoy-a', 'envoy-b']) {
    truth.registerEnvoy(id, 'ingress');
    truth.recordConnection(id, { kind: 'connected', at: 0 });
    for (const typeUrl of [CDS_TYPE_URL, RDS_TYPE_URL, EDS_TYPE_URL]) truth.recordAccepted(id, typeUrl, { versionInfo: 'v1', nonce: '1', acceptedAt: 10, resources: [], removed: [] });
  }
  for (const typeUrl of [CDS_TYPE_URL, RDS_TYPE_URL]) truth.recordAccepted('envoy-a', typeUrl, { versionInfo: 'v2', nonce: '2', acceptedAt: 100, resources: [], removed: [] });
  truth.recordNack('envoy-b', CDS_TYPE_URL, { versionInfo: 'v2', nonce: '2', message: 'bad cluster', at: 100, resourceNames: [] });
  return {
    truth,
    contents: { sources: (typeUrl, version) => contents.get(`${typeUrl}|${version}`) },
    rebuildLogs: [{ all: () => [rebuild(1), rebuild(2)] }],
    subscribedTypes: [CDS_TYPE_URL, EDS_TYPE_URL, RDS_TYPE_URL],
    envoyTtlMs: TTL,
    envoyHeartbeatMs: HEARTBEAT,
    sourcePrefix: 'projectcontour.io/HTTPProxy/default/',
  };
}

function write(at: number, status: string, observedGeneration: number, reason = status === 'True' ? 'Programmed' : 'Rejected', message = ''): ConditionWrite {
  return { name: 'sample-0', at, generation: observedGeneration, condition: { status, reason, message, observedGeneration } };
}

describe('truth checks on hand-made ground truth', () => {
  it('flags True while a live Envoy has not accepted the generation (it NACKed it)', () => {
    const violations = checkTrueWrites([write(3000, 'True', 2)], inputs());
    // envoy-b is behind on CDS (NACKed) and RDS; envoy-a is fine; EDS never reflects the object.
    expect(violations.map((v) => v.detail.match(/but (envoy-\w) had accepted (\w+)/)?.slice(1))).toEqual([
      ['envoy-b', 'CDS'],
      ['envoy-b', 'RDS'],
    ]);
    expect(violations[0]).toMatchObject({ invariant: 'I1-true-only-when-programmed', known: false });
    expect(violations[0]?.detail).toContain('bad cluster');
  });

  it('accepts True once every live Envoy holds the generation, and ignores Envoys gone longer than the TTL', () => {
    expect(checkTrueWrites([write(3000, 'True', 1)], inputs())).toEqual([]);
    const truth = inputs();
    truth.truth.recordConnection('envoy-b', { kind: 'vanished', at: 3000 });
    expect(checkTrueWrites([write(3000 + TTL, 'True', 2)], truth)).toEqual([]);
    // Gone, but less than TTL − heartbeat ago: the system must still count it.
    expect(checkTrueWrites([write(3500, 'True', 2)], truth)).toHaveLength(2);
  });

  it('an Envoy that first connected moments before the write is reported as the known join race, not a failure', () => {
    const truth = inputs();
    truth.truth.registerEnvoy('envoy-new', 'ingress');
    truth.truth.recordConnection('envoy-new', { kind: 'connected', at: 2900 });
    // Its stream is up (it received the current config) but it has not ACKed yet.
    truth.truth.recordReceived('envoy-new', CDS_TYPE_URL, { versionInfo: 'v1', nonce: '1', at: 2950 });
    const violations = checkTrueWrites([write(3000, 'True', 1)], truth);
    expect(violations.map((v) => [v.known, v.detail.includes('envoy-new'), v.detail.includes('known join race')])).toEqual([
      [true, true, true],
      [true, true, true],
    ]);
  });

  it('an Envoy back moments before the write after a gap longer than the TTL is the known join race; back within the TTL it is not', () => {
    const truth = inputs();
    // envoy-b (holding generation 1 and a NACK of 2) lost its gateway at 500 and came back at 3000 + TTL.
    truth.truth.recordConnection('envoy-b', { kind: 'stream-error', at: 500, detail: 'UNAVAILABLE' });
    const back = 500 + TTL + 2000;
    truth.truth.recordConnection('envoy-b', { kind: 'connected', at: back });
    truth.truth.recordReceived('envoy-b', CDS_TYPE_URL, { versionInfo: 'v2', nonce: '3', at: back + 50 });
    const soon = checkTrueWrites([write(back + 100, 'True', 2)], truth);
    expect(soon.map((v) => [v.known, v.detail.includes('after a gap longer than the TTL')])).toEqual([
      [true, true],
      [true, true],
    ]);
    // Long after it came back, still behind: a violation again.
    expect(checkTrueWrites([write(back + 2500, 'True', 2)], truth).map((v) => v.known)).toEqual([false, false]);
    // An attempt opened at once but answered only after the gap (the new gateway took that long):
    // the gap runs until the first answer.
    const slow = inputs();
    slow.truth.recordConnection('envoy-b', { kind: 'stream-error', at: 5000, detail: 'UNAVAILABLE' });
    slow.truth.recordConnection('envoy-b', { kind: 'connected', at: 5010 });
    slow.truth.recordReceived('envoy-b', CDS_TYPE_URL, { versionInfo: 'v2', nonce: '3', at: 5000 + TTL + 1000 });
    expect(checkTrueWrites([write(5000 + TTL + 1100, 'True', 2)], slow).map((v) => v.known)).toEqual([true, true]);
    // Back after a short gap (the system still counted it meanwhile): never the join race.
    const quick = inputs();
    quick.truth.recordConnection('envoy-b', { kind: 'stream-error', at: 5000, detail: 'UNAVAILABLE' });
    quick.truth.recordConnection('envoy-b', { kind: 'connected', at: 5400 });
    quick.truth.recordReceived('envoy-b', CDS_TYPE_URL, { versionInfo: 'v2', nonce: '3', at: 5450 });
    expect(checkTrueWrites([write(5500, 'True', 2)], quick).map((v) => v.known)).toEqual([false, false]);
  });

  it('liveAt: connected counts, gone counts until TTL minus one heartbeat, never-connected does not', () => {
    const events = [{ kind: 'connected' as const, at: 0 }, { kind: 'disconnected' as const, at: 1000 }];
    expect(liveAt(events, 500, TTL, HEARTBEAT)).toBe(true);
    expect(liveAt(events, 2000, TTL, HEARTBEAT)).toBe(true);
    expect(liveAt(events, 1000 + TTL, TTL, HEARTBEAT)).toBe(false);
    expect(liveAt(events, -1, TTL, HEARTBEAT)).toBe(false);
  });

  it('liveAt: a reconnect attempt no server answered yet does not count; the TTL runs from the last established connection', () => {
    // Established at 0 (heard at 10), reset at 1000 (gateway killed), attempts at 1200 and 1500 unanswered.
    const events = [
      { kind: 'connected' as const, at: 0 },
      { kind: 'stream-error' as const, at: 1000 },
      { kind: 'connected' as const, at: 1200 },
      { kind: 'stream-error' as const, at: 1300 },
      { kind: 'connected' as const, at: 1500 },
    ];
    expect(liveAt(events, 2000, TTL, HEARTBEAT, [10])).toBe(true); // still inside the TTL window from 1000
    expect(liveAt(events, 1000 + TTL, TTL, HEARTBEAT, [10])).toBe(false);
    expect(liveAt(events, 1000 + TTL, TTL, HEARTBEAT, [10, 1600])).toBe(true); // the new gateway answered at 1600
    expect(liveAt([{ kind: 'connected', at: 0 }], 500, TTL, HEARTBEAT, [])).toBe(false); // never answered: unknown to the system
  });

  it('a Rejected condition must quote a NACK the Envoy really sent', () => {
    const truth = inputs().truth;
    expect(checkRejectedMessages([write(3000, 'False', 2, 'Rejected', '1/2 Envoys programmed at generation 2; envoy-b rejected CDS: bad cluster')], truth)).toEqual([]);
    expect(checkRejectedMessages([write(200, 'False', 2, 'Rejected', 'envoy-a rejected CDS: bad cluster')], truth)).toHaveLength(1);
    expect(checkRejectedMessages([write(50, 'False', 2, 'Rejected', 'envoy-b rejected CDS: bad cluster')], truth)).toHaveLength(1);
    expect(checkRejectedMessages([write(200, 'False', 2, 'Rejected', 'something failed')], truth)).toHaveLength(1);
  });

  it('counts condition writes per object per generation', () => {
    const writes = [write(1, 'False', 2, 'Pending'), write(2, 'False', 2, 'Rejected'), write(3, 'True', 2), write(4, 'True', 3)];
    expect(checkWriteCounts(writes, 3)).toEqual({ violations: [], max: 3, refreshes: 0 });
    expect(checkWriteCounts(writes, 2).violations.map((v) => v.detail)).toEqual(['sample-0@2: 3 condition writes changing status or reason (bound 2)']);
  });

  it('schedules are a pure function of the seed', () => {
    const shape = { envoys: 6, objects: 3, steps: 12, durationMs: 2500, leaderChange: false, gatewayKill: false };
    expect(generateSchedule(42, shape)).toEqual(generateSchedule(42, shape));
    expect(generateSchedule(42, shape)).not.toEqual(generateSchedule(43, shape));
  });
});

describe('truth checker against the in-process system on its default path (small budget)', () => {
  it('finds no violation over seeded fault schedules, and every object recovers after the heal', async () => {
    const report = await runTruth({
      schedules: 5,
      seed: 7001,
      envoys: 5,
      objects: 3,
      stepsPerSchedule: 12,
      scheduleDurationMs: 2000,
      writeBound: 6,
      // The machine is shared and noisy: invariant 3 is checked with a loose wall-clock budget here;
      // `npm run truth` checks the TTL + 5 s.
      recoveryBudgetMs: 30_000,
      // Real clients nobody here wrote, judged by their own CSDS dumps as well (client-content.ts).
      peers: { core: 2, go: 1 },
      realClients: 1,
      // The product's default, the fleet-size path (PROGRESS decides, states on class changes only);
      // the checker's other tests here run the shard path.
      progressEvaluation: true,
      logger: pino({ level: process.env['LOG_LEVEL'] ?? 'silent' }),
    });
    const failures = report.schedules.filter((s) => s.violations.length > 0).map((s) => ({ seed: s.seed, steps: s.steps, violations: s.violations }));
    expect(failures).toEqual([]);
    // The run did something: faults were injected, NACKs happened, True writes were checked.
    expect(report.schedules).toHaveLength(6); // the NACK probe + 5 schedules
    expect(report.faultsInjected).toBeGreaterThan(20);
    // At least the final True of every object in every schedule.
    expect(report.trueWritesChecked).toBeGreaterThanOrEqual(5 * 3);
    // Each peer resolves one object: at least its final True in every schedule was judged by content.
    expect(report.clientContentChecked).toBeGreaterThanOrEqual(5 * 3);
    expect(report.schedules.reduce((sum, s) => sum + s.nacksSeen, 0)).toBeGreaterThan(0);
    // The tampering competitor: every schedule ends with a tamper and one resync condition pass, and
    // each time our condition came back (a failed repair is an I3 violation above).
    expect(report.competitorWrites).toBeGreaterThanOrEqual(5);
    expect(report.schedules.filter((s) => s.repairMs !== undefined)).toHaveLength(5);
    // Leader changes, when these seeds plan any (schedules are pure: the plan is known up front).
    const shape = { envoys: 5, objects: 3, steps: 12, durationMs: 2000, leaderChange: true, gatewayKill: false };
    const planned = Array.from({ length: 5 }, (_, i) => generateSchedule(7001 + i, shape).steps).flat();
    const plannedKills = planned.filter((s) => s.step.kind === 'leaderKill').length;
    if (plannedKills > 0) {
      expect(report.faultsByKind['leaderKill'] ?? 0).toBeGreaterThan(0);
      expect(report.leaseTransitions).toBeGreaterThan(0);
    }
  }, 180_000);
});
