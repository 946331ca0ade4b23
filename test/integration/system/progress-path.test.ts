// The local system on the fleet-size path (`progressPath`: the gateway, in its own process as the
// bench runs it, with --progress --state-writes class-changes; the functions with
// PROGRESS_EVALUATION): a spec change becomes True with the fleet's ground truth at or past the
// watermark first, decided from the lineage's PROGRESS item, and without one Envoy STATE write
// between the change and its True.
import pino from 'pino';
import { patchToCanary } from '../../../bench/support/changes';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { conditionOf as conditionIn, eventually } from './helpers';

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
    await eventually(async () => (await system.fleet.queries.configuredCount()) === ENVOYS, 'every Envoy ACKed all four types');
    await eventually(async () => (await conditionIn(system.kube.url, system.options.conditionType, 'sample-0'))?.status === 'True' || undefined, 'sample-0 True at generation 1');

    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    try {
      const { store } = table;
      const nodeIds: string[] = [];
      const revs = new Map<string, number>();
      const page = await store.listEnvoyStates({});
      for (const state of page.items) {
        nodeIds.push(state.nodeId);
        revs.set(state.nodeId, state.rev);
      }
      expect(nodeIds).toHaveLength(ENVOYS);
      const statesBefore = system.dynamo.local.stats.recordsByKind['EnvoyState'] ?? 0;

      const since = Date.now();
      await patchToCanary(system.kube.url, 0);
      await eventually(async () => {
        const condition = await conditionIn(system.kube.url, system.options.conditionType, 'sample-0');
        return (condition?.status === 'True' && condition.observedGeneration === 2) || undefined;
      }, 'sample-0 True at generation 2');
      const trueSeenAt = Date.now();
      // Past the recorder's answer hold (half the ACK timeout): a state written for the change would
      // be in the table by now, not only "not yet" (a names change makes every Envoy less programmed
      // for a moment, and such a state was written, one per Envoy, after the True).
      await new Promise((resolve) => setTimeout(resolve, 5000 / 2 + 1000));
      const statesAfter = system.dynamo.local.stats.recordsByKind['EnvoyState'] ?? 0;

      const read = await store.getObjectGeneration(REF, 2);
      expect(read.status).toBe('found');
      if (read.status !== 'found') return;
      // By the fleet's own ground truth every Envoy had the watermark before the True was seen.
      const targets = Object.entries(read.value.watermarks).map(([lineage, watermark]) => ({ key: 'x', lineage, seqByType: watermark.types }));
      expect(targets).toHaveLength(1);
      const programmed = await system.fleet.queries.programmedAt(targets, since);
      expect(programmed.envoysWith['x']).toBe(ENVOYS);
      expect(programmed.lastAck['x']).toBeLessThanOrEqual(trueSeenAt);
      // The lineage's PROGRESS item counts every Envoy…
      const lineage = targets[0]?.lineage ?? '';
      const progress = await table.progress.getProgress(lineage);
      expect(progress.status === 'found' && progress.value.members).toBe(ENVOYS);
      // …and no Envoy's STATE was written for the change.
      expect(statesAfter - statesBefore).toBe(0);
      for (const nodeId of nodeIds) {
        const state = await store.getEnvoyState(nodeId);
        expect(state.status === 'found' && state.value.rev).toBe(revs.get(nodeId));
      }
    } finally {
      table.close();
    }
  });
});
