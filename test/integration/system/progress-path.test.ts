// The local system on the fleet-size path (`progressPath`: the gateway, in its own process as the
// bench runs it, with --progress --state-writes class-changes; the functions with
// PROGRESS_EVALUATION): a spec change becomes True with the fleet's ground truth at or past the
// watermark first, decided from the lineage's PROGRESS item, and without one Envoy STATE write
// between the change and its True.
import pino from 'pino';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { fleetAtWatermark, patchToCanaryUntilTrue, settledAtFirstGeneration } from './helpers';

const ENVOYS = 6;
const REF = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' };
jest.setTimeout(120_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('local system on the fleet-size path', () => {
  let system: LocalSystem;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1, ackTimeoutMs: 5000, gatewayProcess: 'child', progressPath: true }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
  });

  it('decides from PROGRESS, after the fleet holds the change, with no Envoy STATE written for it', async () => {
    expect(system.unavailable).toEqual([]);
    expect(system.options.progressPath).toBe(true);
    await settledAtFirstGeneration(system, ENVOYS);

    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    try {
      const { store } = table;
      const revs = new Map((await store.listEnvoyStates({})).items.map((state) => [state.nodeId, state.rev] as const));
      expect(revs.size).toBe(ENVOYS);
      const statesBefore = system.dynamo.local.stats.recordsByKind['EnvoyState'] ?? 0;

      const { since, trueSeenAt } = await patchToCanaryUntilTrue(system.kube.url, system.options.conditionType, 0, 2);
      // Past the recorder's answer hold (half the ACK timeout): a state written for the change would
      // be in the table by now, not only "not yet" (a names change makes every Envoy less programmed
      // for a moment, and such a state was written, one per Envoy, after the True).
      await new Promise((resolve) => setTimeout(resolve, 5000 / 2 + 1000));
      const statesAfter = system.dynamo.local.stats.recordsByKind['EnvoyState'] ?? 0;

      // By the fleet's own ground truth every Envoy had the watermark before the True was seen.
      const atWatermark = await fleetAtWatermark(store, system.fleet.queries, REF, 2, since);
      expect(atWatermark.lineages).toHaveLength(1);
      expect(atWatermark.envoysWith).toBe(ENVOYS);
      expect(atWatermark.lastAck).toBeLessThanOrEqual(trueSeenAt);
      // The lineage's PROGRESS item counts every Envoy…
      const lineage = atWatermark.lineages[0] ?? '';
      const progress = await table.progress.getProgress(lineage);
      expect(progress.status === 'found' && progress.value.members).toBe(ENVOYS);
      // …and no Envoy's STATE was written for the change.
      expect(statesAfter - statesBefore).toBe(0);
      for (const [nodeId, rev] of revs) {
        const state = await store.getEnvoyState(nodeId);
        expect(state.status === 'found' && state.value.rev).toBe(rev);
      }
      // The query function's object view agrees with the decision: on this path the Envoy states were
      // not written for the change, so its live counts come from PROGRESS, as the decision's did.
      const response = await fetch(`${system.endpoints.queryUrl}/objects/projectcontour.io/HTTPProxy/default/sample-0?generation=2`, { headers: { authorization: `Bearer ${system.endpoints.queryToken}` } });
      expect(response.status).toBe(200);
      const view = (await response.json()) as { decision: { state: string; programmed: number; total: number }; live: { state: string; programmed: number; total: number; source: string } };
      expect(view.decision).toMatchObject({ state: 'Programmed', programmed: ENVOYS, total: ENVOYS });
      expect(view.live).toMatchObject({ state: 'Programmed', programmed: ENVOYS, total: ENVOYS, source: 'progress' });
      // The fleet view: each row's STATE is behind the change (not written for it), and its lineage's
      // PROGRESS says the Envoy is at or past the watermark.
      const seq = (view as unknown as { watermarks: Record<string, { seq: number }> }).watermarks[lineage]?.seq ?? Number.NaN;
      const fleet = (await (await fetch(`${system.endpoints.queryUrl}/envoys`, { headers: { authorization: `Bearer ${system.endpoints.queryToken}` } })).json()) as { envoys: { nodeId: string; programmedThrough: number | null; progress: { lineage: string; programmedThroughAtLeast: number } | null }[] };
      expect(fleet.envoys).toHaveLength(ENVOYS);
      for (const row of fleet.envoys) {
        expect(row.programmedThrough ?? -1).toBeLessThan(seq);
        expect(row.progress).toMatchObject({ lineage });
        expect(row.progress?.programmedThroughAtLeast).toBeGreaterThanOrEqual(seq);
      }
    } finally {
      table.close();
    }
  });
});
