// The e2e bench's fleet-size figures (bench/support/scale-figures.ts), from a row's own fields: the
// 5,000 × 100 row of docs/bench/results.json (40,000 ACKs = 2 waves of 4 types, 8,019 item writes for
// 10 changed objects, 23.43 s of gateway CPU).
import type { E2eResult } from '../../../bench/e2e';
import { scaleFigures, withScaleFigures } from '../../../bench/support/scale-figures';

const row = {
  envoys: 5000,
  objects: 100,
  changed: 10,
  acks: 40_000,
  changeToTrueMs: { count: 10, p50: 50_000, p99: 51_890, max: 51_890 },
  changeToLastAckMs: { count: 10, p50: 25_000, p99: 25_057, max: 25_057 },
  dynamo: { requests: 0, writeRequests: 0, itemWrites: 8_019, readRequests: 0, writesPerChange: 0, readsPerChange: 0, itemWritesPerAck: 0.2 },
  gateway: { process: 'child' as const, cpuSecondsDuringChange: 23.43 },
};

it('computes waves, the overhead ratio, writes per change and per Envoy-change, and CPU per Envoy-change', () => {
  expect(scaleFigures(row)).toEqual({
    changeWaves: 2,
    signalOverheadRatio: 2.07,
    criticalPathItemWritesPerChange: 801.9,
    itemWritesPerEnvoyChange: 0.802,
    cpuMsPerEnvoyChange: 2.343,
  });
});

it('counts at least one wave, and leaves out what a row did not measure', () => {
  const figures = scaleFigures({ ...row, acks: 0, gateway: {}, changeToLastAckMs: { count: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN } });
  expect(figures.changeWaves).toBe(1);
  expect(figures.itemWritesPerEnvoyChange).toBe(1.604);
  expect(figures).not.toHaveProperty('signalOverheadRatio');
  expect(figures).not.toHaveProperty('cpuMsPerEnvoyChange');
});

it('puts the figures where results.json keeps them', () => {
  const placed = withScaleFigures(row as unknown as E2eResult);
  expect(placed.dynamo).toMatchObject({ criticalPathItemWritesPerChange: 801.9, itemWritesPerEnvoyChange: 0.802, itemWrites: 8_019 });
  expect(placed.gateway).toMatchObject({ cpuMsPerEnvoyChange: 2.343, cpuSecondsDuringChange: 23.43 });
  expect(placed).toMatchObject({ changeWaves: 2, signalOverheadRatio: 2.07 });
});

it('leaves the batched event-log items out of the critical path on the fleet-size path only', () => {
  const byKind = { EnvoyEventLog: 7_000, LineageProgress: 19 };
  expect(scaleFigures({ ...row, dynamo: { ...row.dynamo, itemWritesByKind: byKind } }).criticalPathItemWritesPerChange).toBe(801.9);
  const fleetSize = scaleFigures({ ...row, progressPath: true, dynamo: { ...row.dynamo, itemWritesByKind: byKind } });
  expect(fleetSize.criticalPathItemWritesPerChange).toBe(101.9);
  // Every item write still counts per Envoy-change.
  expect(fleetSize.itemWritesPerEnvoyChange).toBe(0.802);
});
