// Reproduction of a fixed finding (docs/RELIABILITY.md, "Findings"; fix: docs/PROVENANCE.md §6): a
// control-plane leader change to a replica whose snapshot is behind made the system write True for a
// generation no Envoy runs.
//
//   npx tsx test/truth/lagging-leader.ts        exit 0: no violation; 1: invariant 1 violated
//
// Script, not in the jest run (about 15 s). Steps: converge; freeze the follower's
// informers (it keeps serving its generation-1 snapshot: a replica with a stalled watch); change the
// object's spec (generation 2, built by the leader only; the gateway records W(X, 2) from its
// provenance stamps) while every Envoy delays its ACKs; make the leader's Lease writes fail so the
// frozen follower takes over; the gateway follows it and relays its generation-1 content at a *higher*
// lineage seq; the Envoys ACK that, `programmedThrough ≥ W(X, 2).seq`, and the condition turns True at
// generation 2 while every Envoy holds generation 1. With the fix the gateway moves to a new lineage on
// the target change instead, and the condition stays Pending at 2 (the follower never builds it).
// The ACK delay outlasts the leader change (~2.5 s here), so no Envoy ACKs generation 2 before it: with
// a shorter one the legitimate True@2 is written first and the bug hides (1.5 s did on a busy machine).
import pino from 'pino';
import { DEFAULT_BEHAVIOUR, parseBehaviour } from '../../infra/local/envoys';
import { checkTrueWrites } from './checker';
import { tapFleetResponses } from './content';
import { parseFleetMix } from './fleet-mix';
import { Harness } from './harness';
import { ConditionObserver } from './observer';
import { CONDITION_TYPE, DEFAULT_TIMINGS, startTruthSystem, SUBSCRIBED_TYPES } from './system';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
  const contents = tapFleetResponses();
  const system = await startTruthSystem({ objects: 1, envoys: 0, fleetMix: parseFleetMix('ads-sotw'), mixSeed: 1, logger });
  const observer = new ConditionObserver(system.kube.url, CONDITION_TYPE);
  const harness = new Harness(system, observer, contents, 1, logger);
  observer.start();
  try {
    for (let index = 0; index < 3; index++) harness.addEnvoy();
    await harness.createObjects();
    await observer.waitFor(() => harness.allProgrammed(), 30_000, 'initial convergence');
    const controlPlane = system.controlPlane;
    const leader = controlPlane.leader();
    const follower = controlPlane.replicas.find((replica) => replica !== leader);
    if (leader === undefined || follower === undefined) throw new Error('need a leader and a follower');
    await follower.source.close();
    for (const envoy of harness.envoys) envoy.setBehaviour(parseBehaviour({ ackDelayMs: 4000 }));
    const firstWrite = observer.writes.length;
    await harness.changeSpec(0, true);
    await sleep(300);
    leader.failLeaseWritesUntil = Date.now() + 4000;
    const changeStarted = Date.now();
    while (controlPlane.leader() !== follower && Date.now() - changeStarted < 8000) await sleep(50);
    process.stdout.write(`leader ${leader.replicaId} → ${controlPlane.leader()?.replicaId ?? 'none'} after ${Date.now() - changeStarted} ms\n`);
    for (const envoy of harness.envoys) envoy.setBehaviour(DEFAULT_BEHAVIOUR);
    await sleep(6000);
    const writes = observer.writes.slice(firstWrite);
    process.stdout.write(`condition writes: ${writes.map((w) => `${w.condition.status}/${w.condition.reason}@${w.condition.observedGeneration}`).join(', ')}\n`);
    const violations = checkTrueWrites(writes, {
      truth: system.fleet.truth,
      contents,
      rebuildLogs: controlPlane.replicas.map((replica) => replica.controlPlane.rebuildLog),
      subscribedTypes: SUBSCRIBED_TYPES,
      envoyTtlMs: DEFAULT_TIMINGS.envoyTtlMs,
      envoyHeartbeatMs: DEFAULT_TIMINGS.envoyHeartbeatMs,
      sourcePrefix: 'projectcontour.io/HTTPProxy/default/',
    });
    process.stdout.write(`invariant 1 violations: ${violations.length}\n${violations.map((v) => `  ${v.detail}`).join('\n')}\n`);
    process.exitCode = violations.length > 0 ? 1 : 0;
  } finally {
    await observer.stop();
    await system.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`lagging-leader reproduction failed to run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 2;
});
