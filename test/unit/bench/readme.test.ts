import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateTargets, renderReadme } from '../../../bench/support/readme';
import { mergeRuns, withMachine, type BenchResults, type SizeRun } from '../../../bench/support/results';
import { parseSizes, writeReport } from '../../../bench/report';
import { deliveredAt, meanCpuBetween, type E2eResult } from '../../../bench/e2e';
import { meanWriteLatencyMs, storeWriteTotals } from '../../../bench/support/gateway-metrics';

const summary = (p50: number, p99: number) => ({ count: 10, p50, p99, max: p99 });

function e2e(envoys: number, objects: number, ackToTrueP99: number, writesMax: number, itemWritesPerAck: number): E2eResult {
  return {
    conditions: 'test',
    envoys,
    objects,
    changed: objects,
    initialConvergenceMs: 1000,
    lastAckToTrueMs: summary(100, ackToTrueP99),
    changeToTrueMs: summary(200, ackToTrueP99 + 100),
    changeToLastAckMs: summary(50, 100),
    kubeConditionWritesPerObjectGeneration: { generation1: 1, generation2: 1, max: writesMax },
    dynamo: { requests: 10, writeRequests: 5, itemWrites: 5, readRequests: 5, writesPerChange: 1, readsPerChange: 1, itemWritesPerAck },
    acks: 100,
    ackEventsPerSecond: 50,
    functionInvocations: { convergence: 1, status: 1, perChange: 2 },
    process: { cpuSecondsDuringChange: 1, rssMiB: 300, rssKiBPerEnvoy: 3000 },
    changePhaseMs: 2000,
    timeline: [],
    conditionSequenceExample: [],
  };
}

function sizeRun(envoys: number, objects: number, extra: Partial<SizeRun> = {}): SizeRun {
  return { envoys, objects, changed: 10, finishedAt: '2026-11-29T00:00:00Z', durationSeconds: 1, errors: [], ...extra };
}

describe('bench report', () => {
  it('parses sizes and rejects junk', () => {
    expect(parseSizes('100x100, 1000X500')).toEqual([{ envoys: 100, objects: 100 }, { envoys: 1000, objects: 500 }]);
    expect(() => parseSizes('100by100')).toThrow(/not a size/);
    expect(() => parseSizes('0x5')).toThrow(/positive/);
  });

  it('merges runs by size, newest wins, sorted', () => {
    const merged = mergeRuns([sizeRun(1000, 500, { durationSeconds: 1 }), sizeRun(100, 100)], [sizeRun(1000, 500, { durationSeconds: 2 })]);
    expect(merged.map((r) => [r.envoys, r.durationSeconds])).toEqual([[100, 1], [1000, 2]]);
  });

  it('keeps the stages a fresh run did not run, and says when they were measured', () => {
    const istio = { statusWritesPerObjectGeneration: 7 } as unknown as NonNullable<SizeRun['istio']>;
    const earlier = sizeRun(1000, 100, { finishedAt: '2026-11-29T10:00:00Z', istio, e2e: e2e(1000, 100, 100, 3, 1) });
    const fresh = sizeRun(1000, 100, { finishedAt: '2026-11-30T02:00:00Z', e2e: e2e(1000, 100, 100, 2, 1) });
    const [merged] = mergeRuns([earlier], [fresh]);
    expect(merged?.e2e).toBe(fresh.e2e);
    expect(merged?.istio).toBe(istio);
    expect(merged?.carried).toEqual([{ stage: 'istio', finishedAt: '2026-11-29T10:00:00Z' }]);
    // Carried again later: the original time stays.
    const [again] = mergeRuns([merged as SizeRun], [sizeRun(1000, 100, { finishedAt: '2026-11-30T03:00:00Z', e2e: e2e(1000, 100, 100, 2, 1) })]);
    expect(again?.carried).toEqual([{ stage: 'istio', finishedAt: '2026-11-29T10:00:00Z' }]);
  });

  it('names the machine of every run and carried stage, also after a run on another machine', () => {
    const gateway: NonNullable<SizeRun['gateway']> = {
      changes: 3,
      direct: { mode: 'direct', envoys: 1000, deliveryP50Ms: 10, deliveryP99Ms: 100, relayRssPerStreamKiB: undefined, relayHeapPerStreamKiB: undefined },
      relay: { mode: 'relay', envoys: 1000, deliveryP50Ms: 11, deliveryP99Ms: 110, relayRssPerStreamKiB: 80, relayHeapPerStreamKiB: 20 },
    };
    // Measured before runs recorded their machine: the file's machine is theirs.
    const loaded = withMachine([sizeRun(1000, 100, { finishedAt: '2026-11-29T10:00:00Z', gateway, e2e: e2e(1000, 100, 100, 3, 1) }), sizeRun(100, 100)], 'machine A');
    expect(loaded.map((run) => run.machine)).toEqual(['machine A', 'machine A']);
    const runs = mergeRuns(loaded, [sizeRun(1000, 100, { finishedAt: '2026-12-07T08:00:00Z', machine: 'machine B', e2e: e2e(1000, 100, 100, 2, 1) })]);
    expect(runs.find((run) => run.envoys === 1000)?.carried).toEqual([{ stage: 'gateway', finishedAt: '2026-11-29T10:00:00Z', machine: 'machine A' }]);
    const readme = renderReadme({ machine: 'machine B', runs });
    expect(readme).toContain('**1000x100** finished 2026-12-07T08:00:00Z in 1 s on machine B.');
    expect(readme).toContain('gateway (2026-11-29T10:00:00Z, on machine A)');
    expect(readme).toMatch(/\*\*100x100\*\* finished [^\n]* on machine A\./);
    // Loaded again from the file written after the second run: nothing is relabelled.
    expect(withMachine(runs, 'machine B').map((run) => run.machine)).toEqual(['machine A', 'machine B']);
  });

  it('judges targets with their gap, and says "not measured" rather than guessing', () => {
    const results: BenchResults = {
      machine: 'test',
      runs: [
        sizeRun(100, 100, { e2e: e2e(100, 100, 100, 2, 0.5) }),
        sizeRun(1000, 500, {
          e2e: e2e(1000, 500, 500, 3, 2),
          gateway: {
            changes: 3,
            direct: { mode: 'direct', envoys: 1000, deliveryP50Ms: 10, deliveryP99Ms: 100, relayRssPerStreamKiB: undefined, relayHeapPerStreamKiB: undefined },
            relay: { mode: 'relay', envoys: 1000, deliveryP50Ms: 11, deliveryP99Ms: 110, relayRssPerStreamKiB: 80, relayHeapPerStreamKiB: 20 },
          },
        }),
      ],
    };
    const byId = new Map(evaluateTargets(results).map((t) => [t.id, t]));
    expect(byId.get('ack-to-true')).toMatchObject({ verdict: 'missed', measured: '500 ms', conditions: '1000x500' });
    expect(byId.get('ack-to-true')?.gap).toContain('2×');
    expect(byId.get('gateway-ratio')).toMatchObject({ verdict: 'met', measured: '1.1×' });
    expect(byId.get('rss-per-stream')).toMatchObject({ verdict: 'missed' });
    expect(byId.get('k8s-writes')).toMatchObject({ verdict: 'missed', measured: '3' });
    expect(byId.get('dynamo-per-ack')).toMatchObject({ verdict: 'missed' });
    expect(byId.get('fleet-5000')).toMatchObject({ verdict: 'not measured', measured: '1000 Envoys', conditions: 'largest fleet run: 1000' });
    expect(byId.get('convergence-flat')).toMatchObject({ verdict: 'not measured' });
    const readme = renderReadme(results);
    expect(readme).toContain('## Targets');
    expect(readme).toContain('| 1000x500 |');
    expect(readme).toContain('### Why');
  });

  it('writes results.json, README.md and three SVG plots', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
    try {
      const results: BenchResults = { machine: 'test', runs: [sizeRun(100, 100, { e2e: e2e(100, 100, 100, 1, 0.5) })] };
      const written = writeReport(dir, results);
      expect(written.map((f) => f.slice(dir.length + 1)).sort()).toEqual(['README.md', 'latency.svg', 'requests.svg', 'results.json', 'writes.svg']);
      expect(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8'))).toEqual(results);
      expect(readFileSync(join(dir, 'latency.svg'), 'utf8')).toContain('ours: last ACK → True');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the write path ceiling table', () => {
  it('is rendered only for rows that measured it, with the floor and the crossing window next to last ACK → True', () => {
    const measured: E2eResult = {
      ...e2e(1000, 1000, 2500, 2, 0.3),
      crossingSpreadMs: summary(1100, 1150),
      busyAfterLastAck: { system: 98, gateway: 60, fleet: 10, dynalite: 30, machine: 198 },
      gatewayStateWrites: { writes: 1200, meanLatencyMs: 156 },
      writeCeiling: { writes: 1000, concurrency: 64, wallMs: 1400, writesPerSecond: 714, cpuMsPerWrite: { writer: 1.5, front: 0.6, dynalite: 0.7 }, floorAfterLastAckMs: 300 },
    };
    const without = renderReadme({ machine: 'test', runs: [sizeRun(100, 100, { e2e: e2e(100, 100, 100, 1, 0.5) })] });
    expect(without).not.toContain('### The write path\'s ceiling (same run)');
    const rendered = renderReadme({ machine: 'test', runs: [sizeRun(100, 100, { e2e: e2e(100, 100, 100, 1, 0.5) }), sizeRun(1000, 1000, { e2e: measured })] });
    const rows = rendered.split('\n').filter((line) => line.startsWith('| 1000x1000 (1000) | 1100 / 1150 |'));
    expect(rows).toEqual(['| 1000x1000 (1000) | 1100 / 1150 | 1000 | 714 | 90 / 156 | 1.5 / 0.6 / 0.7 | 300 | 100 / 2500 | 98 / 60 / 10 / 30 = 198 |']);
  });
});

describe('gateway store-write metrics', () => {
  const text = [
    '# HELP xds_programmed_gateway_store_write_seconds store call latency by operation',
    'xds_programmed_gateway_store_write_seconds_bucket{le="0.1",operation="envoyState"} 3',
    'xds_programmed_gateway_store_write_seconds_sum{operation="envoyState"} 12.5',
    'xds_programmed_gateway_store_write_seconds_count{operation="envoyState"} 100',
    'xds_programmed_gateway_store_write_seconds_sum{operation="putEvents"} 1',
    'xds_programmed_gateway_store_write_seconds_count{operation="putEvents"} 2',
  ].join('\n');

  it('reads one operation\'s totals and ignores the others', () => {
    expect(storeWriteTotals(text, 'envoyState')).toEqual({ count: 100, sumSeconds: 12.5 });
    expect(storeWriteTotals(text, 'putEvents')).toEqual({ count: 2, sumSeconds: 1 });
    expect(storeWriteTotals(text, 'watermark')).toEqual({ count: 0, sumSeconds: 0 });
  });

  it.each([
    { before: { count: 100, sumSeconds: 12.5 }, after: { count: 300, sumSeconds: 43.7 }, expected: { writes: 200, meanLatencyMs: 156 } },
    { before: { count: 100, sumSeconds: 12.5 }, after: { count: 100, sumSeconds: 12.5 }, expected: undefined },
  ])('means the writes between two readings ($expected)', ({ before, after, expected }) => {
    expect(meanWriteLatencyMs(before, after)).toEqual(expected);
  });
});

describe('deliveredAt (the last ACK of lastAckToTrueMs)', () => {
  it('is the later of the ACK rule and routable by content, the ACK rule alone where some Envoy could not route', () => {
    const ackRule = new Map([
      ['endpoints-late', 100],
      ['removal-late', 300],
      ['never-routable', 50],
    ]);
    const routable = new Map([
      ['endpoints-late', 250],
      ['removal-late', 200],
      ['no-ack', 10],
    ]);
    const delivered = deliveredAt(['endpoints-late', 'removal-late', 'never-routable', 'no-ack'], ackRule, (name) => routable.get(name));
    expect(Object.fromEntries(delivered)).toEqual({ 'endpoints-late': 250, 'removal-late': 300, 'never-routable': 50 });
  });
});

describe('meanCpuBetween', () => {
  const entry = (atMs: number, cpuPercent?: E2eResult['timeline'][number]['cpuPercent']): E2eResult['timeline'][number] => ({ atMs, streamRecords: 0, convergenceDelivered: 0, statusDelivered: 0, objectsTrue: 0, ...(cpuPercent === undefined ? {} : { cpuPercent }) });
  const timeline = [entry(250, { system: 10, gateway: 5 }), entry(500, { system: 90, gateway: 40, dynalite: 30 }), entry(750, { system: 100, gateway: 60, dynalite: 50 }), entry(1000), entry(1250, { system: 20 })];

  it.each([
    { from: 400, to: 800, expected: { system: 95, gateway: 50, dynalite: 40, machine: 185 } },
    { from: 0, to: 300, expected: { system: 10, gateway: 5, machine: 15 } },
    { from: 900, to: 1100, expected: undefined }, // only a sample without CPU readings
  ])('averages the samples in [$from, $to] per process and sums the machine', ({ from, to, expected }) => {
    expect(meanCpuBetween(timeline, from, to)).toEqual(expected);
  });
});

describe('target rows pick the right run', () => {
  it('judges last ACK → True at the 1,000 × 1,000 anchor even when a bigger fleet ran, and writes per ACK at the worst row', () => {
    const results: BenchResults = {
      machine: 'test',
      runs: [
        sizeRun(1000, 100, { e2e: e2e(1000, 100, 900, 2, 0.4) }),
        sizeRun(1000, 1000, { e2e: e2e(1000, 1000, 700, 2, 1.04) }),
        sizeRun(5000, 100, { e2e: e2e(5000, 100, 9000, 2, 0.5) }),
      ],
    };
    const rows = evaluateTargets(results);
    const ack = rows.find((r) => r.id === 'ack-to-true');
    expect(ack?.measured).toBe('700 ms');
    expect(ack?.conditions).toBe('1000x1000');
    const perAck = rows.find((r) => r.id === 'dynamo-per-ack');
    expect(perAck?.measured).toBe('1.04');
    expect(perAck?.verdict).toBe('missed');
  });
});

describe('the fleet-size path table', () => {
  it('pairs each size\'s shard-path row with its fleet-size-path row, with the writes by kind', () => {
    const shard = e2e(100, 100, 900, 2, 1);
    // Per object, True after the later of its last ACK and its routable moment: 50 (routable later) and 70 ms (last ACK later).
    const objectTimingsMs = [
      { name: 'a', watermarkSeqs: {}, lastAck: 100, routable: 150, decided: 180, trueSeen: 200 },
      { name: 'b', watermarkSeqs: {}, lastAck: 130, routable: 90, decided: 180, trueSeen: 200 },
    ];
    const fleetSize: E2eResult = { ...e2e(100, 100, 200, 2, 0.3), progressPath: true, objectTimingsMs, changeToRoutableMs: { count: 100, p50: 80, p99: 90, max: 90 }, dynamo: { ...e2e(100, 100, 200, 2, 0.3).dynamo, itemWrites: 140, itemWritesByKind: { EnvoyEventLog: 100, VersionLogChunk: 12, VersionLogMember: 8, LineageProgress: 4, EnvoyState: 1 } } };
    const without = renderReadme({ machine: 'test', runs: [sizeRun(100, 100, { e2e: shard })] });
    expect(without).not.toContain('### Fleet-size path against the shard path');
    const rendered = renderReadme({ machine: 'test', runs: [sizeRun(100, 100, { e2e: shard, e2eProgressPath: fleetSize })] });
    expect(rendered).toContain('### Fleet-size path against the shard path (same size run)');
    const rows = rendered.split('\n').filter((line) => line.startsWith('| 100x100 (100) | shard |') || line.startsWith('| 100x100 (100) | fleet-size |'));
    expect(rows).toEqual([
      // Both rows predate the delivered last ACK: their last ACK is the ACK rule's (so marked), and the
      // delivered figure comes from per-object times where the row has them (n/a for the shard row).
      '| 100x100 (100) | shard | 100 (ACK rule) | n/a | 1000 | n/a | 900 | 10 | 0.1 | 0.05 | n/a | n/a |',
      '| 100x100 (100) | fleet-size | 100 (ACK rule) | 90 | 300 | 70 | 200 | 3 | 0.2 | 1.4 | n/a | 1 / 100 / 20 / 4 |',
    ]);
  });

  it('shows a delivered row\'s own figures, and the ACK rule alone beside them', () => {
    const shard = e2e(100, 100, 900, 2, 1);
    const base = e2e(100, 100, 200, 2, 0.3);
    // The per-object times would say 70: a delivered row's own summary (250) is what is shown.
    const objectTimingsMs = [{ name: 'a', watermarkSeqs: {}, lastAck: 130, routable: 90, decided: 180, trueSeen: 200 }];
    const fleetSize: E2eResult = {
      ...base,
      progressPath: true,
      objectTimingsMs,
      lastAckDefinition: 'delivered',
      lastAckToTrueMs: { count: 10, p50: 240, p99: 250, max: 250 },
      ackRuleLastAckToTrueMs: { count: 10, p50: 1700, p99: 1800, max: 1800 },
    };
    const rendered = renderReadme({ machine: 'test', runs: [sizeRun(100, 100, { e2e: shard, e2eProgressPath: fleetSize })] });
    const row = rendered.split('\n').find((line) => line.startsWith('| 100x100 (100) | fleet-size |'));
    expect(row?.split(' | ').slice(2, 7)).toEqual(['100', 'n/a', '300', '250', '1800']);
  });
});

describe('the fleet-size targets on both paths', () => {
  it('judges the fleet-size path\'s rows apart, only where a run measured it', () => {
    const shardOnly = evaluateTargets({ machine: 'test', runs: [sizeRun(1000, 100, { e2e: e2e(1000, 100, 900, 2, 1) })] });
    expect(shardOnly.some((t) => t.id.endsWith('-fleet-size'))).toBe(false);
    const shard = e2e(1000, 100, 900, 2, 1);
    const fleetSize: E2eResult = { ...e2e(1000, 100, 200, 2, 0.3), progressPath: true, dynamo: { ...shard.dynamo, itemWrites: 500 } };
    const both = evaluateTargets({ machine: 'test', runs: [sizeRun(1000, 100, { e2e: { ...shard, dynamo: { ...shard.dynamo, itemWrites: 1500 } }, e2eProgressPath: fleetSize })] });
    const shardRow = both.find((t) => t.id === 'writes-per-envoy-change-1000');
    const fleetRow = both.find((t) => t.id === 'writes-per-envoy-change-1000-fleet-size');
    expect(shardRow?.target).toContain('(shard path)');
    expect(fleetRow?.target).toContain('(fleet-size path, the default)');
    // The default path's rows come first.
    expect(both.indexOf(fleetRow!)).toBeLessThan(both.indexOf(shardRow!));
    expect(fleetRow?.measured).not.toBe(shardRow?.measured);
  });

  it('judges last ACK → True at the anchor on the default path too, first, where the anchor measured it', () => {
    const shard = e2e(1000, 1000, 900, 2, 1);
    const fleetSize: E2eResult = { ...e2e(1000, 1000, 200, 2, 0.3), progressPath: true };
    const shardOnly = evaluateTargets({ machine: 'test', runs: [sizeRun(1000, 1000, { e2e: shard })] });
    expect(shardOnly.find((t) => t.id === 'ack-to-true-fleet-size')).toBeUndefined();
    const both = evaluateTargets({ machine: 'test', runs: [sizeRun(1000, 1000, { e2e: shard, e2eProgressPath: fleetSize })] });
    expect(both[0]?.id).toBe('ack-to-true-fleet-size');
    expect(both[1]?.id).toBe('ack-to-true');
    expect(both[0]?.measured).toBe(`${fleetSize.lastAckToTrueMs.p99} ms`);
    expect(both[0]?.measured).not.toBe(both[1]?.measured);
  });
});
