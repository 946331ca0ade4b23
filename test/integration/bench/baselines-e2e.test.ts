// The bench's measuring machinery on a tiny fleet (real servers, real HTTP probes, real watch): it
// checks the counts and that every object reaches its end state, never how fast.
import { runIstioBaseline, runKnativeBaseline } from '../../../bench/baselines';
import { runE2e } from '../../../bench/e2e';

const tiny = { envoys: 3, objects: 2, changed: 2, timeoutMs: 60_000 };

describe('bench baselines (3 Envoys × 2 objects)', () => {
  it('Knative-style prober probes every (object, Envoy) pair until all answer the new hash', async () => {
    const result = await runKnativeBaseline(tiny);
    // Two objects, both measured: none left over for the default warm-up changes.
    expect(result.warmup).toEqual({ asked: 3, changes: 0, objectsPerChange: 2, doneAfterMs: [] });
    expect(result.changeToReadyMs.count).toBe(2);
    // At least one successful probe per pair; failures are retried, so requests = pairs + failures.
    expect(result.probeRequests).toBe(tiny.envoys * tiny.changed + result.probeFailures);
    expect(result.changeToReadyMs.p50).toBeGreaterThanOrEqual(200); // the published initial delay
    expect(result.floorAllObjectsSeconds).toBeCloseTo((3 * 2) / 50);
  }, 90_000);

  it('Istio-style reporter writes status while in progress and ends Reconciled for every object, after a warm-up change of other objects', async () => {
    const result = await runIstioBaseline({ ...tiny, objects: 4, warmupChanges: 1 });
    // The warm-up patched samples 2 and 3 and waited until every Envoy held their canary clusters.
    expect(result.warmup).toMatchObject({ asked: 1, changes: 1, objectsPerChange: 2 });
    expect(result.warmup?.doneAfterMs).toHaveLength(1);
    expect(result.changeToReconciledMs.count).toBe(2);
    // The first report comes 500 ms in, so there are in-progress ticks before it: > 1 write per object.
    expect(result.statusWritesPerObjectGeneration).toBeGreaterThan(1);
    expect(result.statusWrites).toBe(result.statusWritesPerObjectGeneration * 2);
    expect(result.reportWrites).toBeGreaterThanOrEqual(1);
  }, 90_000);
});

describe('bench e2e (3 Envoys × 2 objects, whole local system)', () => {
  it('sees every object True at the new generation and counts its writes and requests, after a warm-up change of other objects', async () => {
    const result = await runE2e({ envoys: 3, objects: 4, changed: 2, phaseTimeoutMs: 60_000, patchConcurrency: 2, warmupChanges: 1 });
    // The warm-up patched samples 2 and 3 and waited until both were True at generation 2.
    expect(result.warmup).toMatchObject({ asked: 1, changes: 1, objectsPerChange: 2 });
    expect(result.warmup?.doneAfterMs).toHaveLength(1);
    expect(result.conditions).toContain('after 1 warm-up change of 2 other objects each');
    expect(result.changeToTrueMs.count).toBe(2);
    expect(result.lastAckToTrueMs.count).toBe(2);
    // The condition can only be True after the last Envoy ACKed the generation.
    expect(result.lastAckToTrueMs.p50).toBeGreaterThanOrEqual(0);
    expect(result.changeToLastAckMs.max).toBeLessThanOrEqual(result.changeToTrueMs.max);
    // The last ACK is the delivered one (ACK rule and routable, whichever is later): never before the
    // ACK rule's alone, so last ACK → True is never longer when measured from it.
    expect(result.lastAckDefinition).toBe('delivered');
    expect(result.ackRuleLastAckToTrueMs?.count).toBe(2);
    expect(result.lastAckToTrueMs.max).toBeLessThanOrEqual(result.ackRuleLastAckToTrueMs?.max ?? Number.NaN);
    expect(result.changeToLastAckMs.max).toBeGreaterThanOrEqual(result.ackRuleChangeToLastAckMs?.max ?? Number.NaN);
    expect(result.kubeConditionWritesPerObjectGeneration.generation2).toBeGreaterThanOrEqual(1);
    expect(result.dynamo.writeRequests).toBeGreaterThan(0);
    expect(result.acks).toBeGreaterThanOrEqual(3 * 2); // every Envoy ACKs at least the new CDS and EDS
    expect(result.functionInvocations.status).toBeGreaterThan(0);
    // The fleet reached each changed object within its own window, and the write path's ceiling was
    // measured with one state per Envoy.
    expect(result.crossingSpreadMs?.count).toBe(2);
    expect(result.crossingSpreadMs?.p50).toBeGreaterThanOrEqual(0);
    expect(result.writeCeiling).toMatchObject({ writes: 3, concurrency: 64 });
    expect(result.writeCeiling?.writesPerSecond).toBeGreaterThan(0);
    const ceiling = result.writeCeiling;
    const spread = result.crossingSpreadMs?.p50;
    if (ceiling === undefined || spread === undefined) throw new Error('no ceiling or crossing window measured');
    // The floor is what the ceiling and the window imply: 3 writes at the measured rate, less the window.
    expect(ceiling.floorAfterLastAckMs).toBe(Math.max(0, Math.round((3 / ceiling.writesPerSecond) * 1000 - spread)));
    // The gateway recorded at least one state per Envoy during the change, each with a latency.
    expect(result.gatewayStateWrites?.writes).toBeGreaterThanOrEqual(3);
    expect(result.gatewayStateWrites?.meanLatencyMs).toBeGreaterThanOrEqual(0);
    // Per object, in order: last ACK, then the decision, then True seen, each after the object's change,
    // under a watermark seq of the one lineage.
    expect(result.objectTimingsMs?.map((object) => object.name).sort()).toEqual(['sample-0', 'sample-1']);
    for (const object of result.objectTimingsMs ?? []) {
      const { lastAck, routable, decided, trueSeen } = object;
      if (lastAck === undefined || routable === undefined || decided === undefined || trueSeen === undefined) throw new Error(`${object.name}: a moment is missing`);
      expect(lastAck).toBeGreaterThan(0);
      expect(decided).toBeGreaterThanOrEqual(lastAck);
      // Ground truth by content: never decided before every Envoy could route it.
      expect(decided).toBeGreaterThanOrEqual(routable);
      expect(trueSeen).toBeGreaterThanOrEqual(decided);
      expect(trueSeen).toBeLessThanOrEqual(result.changeToTrueMs.max); // after the change, not epoch time
      expect(Object.values(object.watermarkSeqs)).toHaveLength(1);
    }
  }, 120_000);
});

describe('bench e2e with Delta clients (3 Envoys × 2 objects, whole local system)', () => {
  it('sees every object routable on every Envoy by content, and decided only after', async () => {
    const result = await runE2e({ envoys: 3, objects: 2, phaseTimeoutMs: 60_000, patchConcurrency: 2, fleetProtocol: 'delta', writeCeiling: false });
    expect(result.conditions).toContain('ADS Delta');
    // The route watches read Delta upserts: without them no object is routable and this is empty.
    expect(result.changeToRoutableMs?.count).toBe(2);
    for (const object of result.objectTimingsMs ?? []) {
      const { routable, decided, trueSeen } = object;
      if (routable === undefined || decided === undefined || trueSeen === undefined) throw new Error(`${object.name}: a moment is missing`);
      expect(decided).toBeGreaterThanOrEqual(routable);
      expect(trueSeen).toBeGreaterThanOrEqual(decided);
    }
    expect(result.objectTimingsMs).toHaveLength(2);
  }, 120_000);
});
