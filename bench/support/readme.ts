// Renders docs/bench/README.md from results.json: the targets of issue 9 (met, missed by how much,
// or not measured, each with its conditions), then the tables per size and the baselines.
import type { BenchResults, SizeRun } from './results';
import { sizeKey } from './results';

export type Verdict = 'met' | 'missed' | 'not measured';

export interface TargetRow {
  id: string;
  target: string;
  measured: string;
  verdict: Verdict;
  /** "by how much" when missed. */
  gap: string;
  conditions: string;
}

/** Why a target is missed, for the README (the mechanism, not an excuse; see docs/bench/README.md). */
export const WHY_MISSED: Record<string, string> = {
  'ack-to-true':
    'On this machine the convergence function is the bottleneck: the e2e timeline (results.json, `timeline`) shows stream records appended faster than the convergence delivery consumes them (a backlog of several hundred records, about 90 records/s consumed), because every function, dynalite, the API server, the control plane, the gateway and the fleet share one Node process on 2 cores that other engineers\' tests also load (load average ≈ 10). The ACKs themselves are late too: change → last ACK p99 is seconds here against ~100-200 ms in the isolated gateway bench, for the same reason. Structurally, the path after the last ACK is gateway recorder flush → stream (200 ms batching window locally, 1 s on AWS) → convergence → OBJECT item → stream (another window) → status → PATCH, so two batching windows alone are 400 ms locally: with these windows 250 ms is not reachable even unloaded; it needs a window ≤ 100 ms per hop (more invocations) or a direct status call from convergence. Measured alone (the convergence table below), the hop from the last blocking Envoy state to the OBJECT decision takes a few hundred ms with dynalite. Not a measurement of AWS, where Lambda runs batches of different shards in parallel and DynamoDB is not in the same process.',
  'gateway-ratio':
    'The relay adds a hop (decode, record, re-encode) per response and per ACK; at small fleets the direct delivery is a few milliseconds, so a constant per-hop cost is a large ratio.',
  'rss-per-stream': 'Per-stream buffers of the relay (upstream and downstream HTTP/2 stream state, the last response per type kept for provenance).',
  'k8s-writes':
    'The third write is a Stuck condition: the sequence is False/Pending → False/Stuck → True/Programmed. The gateway reports an Envoy STUCK when a response is unanswered after the ACK timeout (10 s); in the overloaded single process some Envoys ACKed the change only after more than 10 s (change → last ACK p99), so Stuck was the truth at that moment and the write was correct. Unloaded (a 10 Envoys × 5 objects run), one write per object per generation was seen. The target holds for the normal path (Pending → Programmed = 2).',
  'dynamo-per-ack':
    'By design the gateway writes one EVENT item per ACK (docs/GATEWAY.md, the audit trail) plus the Envoy\'s STATE item, coalesced per flush window (100 ms) but also written when a response is sent, so a response and its ACK landing in different flushes cost two STATE writes. That makes 1 item write per ACK the floor before any STATE or function write, so the target cannot hold while every ACK is an item; on top come STUCK events (when ACKs are late, as here) and the convergence function\'s shard, lineage and OBJECT items. Item writes per ACK fell from 2.77 at 100 Envoys to 1.83 at 1,000 as the per-change function writes amortize; meeting ≤ 1 needs ACK events folded into the STATE item (or batched per Envoy per flush).',
  'convergence-flat':
    'Items read per batch grew with the fleet: evaluation touched more than the lineage\'s shards. (If the row says "not measured": bench/convergence.ts failed at the time of this run with "no Programmed decision within 60 s"; it belongs to another engineer.)',
  'fleet-5000': 'A 5,000-Envoy run was not attempted on this shared 2-core machine (the brief allowed at most 1,000 Envoys here); the local system accepts 5,000 (`npm run bench -- report --sizes 5000x100`).',
};

function fmt(value: number | undefined, unit = ''): string {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  return `${Number(value.toFixed(2))}${unit}`;
}

function largest<T>(runs: readonly SizeRun[], pick: (run: SizeRun) => T | undefined): { run: SizeRun; value: T } | undefined {
  for (const run of [...runs].reverse()) {
    const value = pick(run);
    if (value !== undefined) return { run, value };
  }
  return undefined;
}

function row(id: string, target: string, measured: number | undefined, limit: number, unit: string, conditions: string, better: 'lower' | 'higher' = 'lower'): TargetRow {
  if (measured === undefined || !Number.isFinite(measured)) return { id, target, measured: 'n/a', verdict: 'not measured', gap: '', conditions };
  const met = better === 'lower' ? measured <= limit : measured >= limit;
  const gap = met ? '' : better === 'lower' ? `+${fmt(measured - limit, unit)} (${fmt(measured / limit)}× the target)` : `${fmt(limit - measured, unit)} short`;
  return { id, target, measured: fmt(measured, unit), verdict: met ? 'met' : 'missed', gap, conditions };
}

export function evaluateTargets(results: BenchResults): TargetRow[] {
  const runs = results.runs;
  const rows: TargetRow[] = [];
  // 1,000 Envoys × 1,000 objects is the anchor; the local system caps objects at 500, so the largest
  // run with at least 1,000 Envoys stands in, labelled with its size.
  const anchor = [...runs].reverse().find((run) => run.envoys >= 1000 && run.e2e !== undefined);
  const ackRun = anchor ?? largest(runs, (run) => run.e2e)?.run;
  rows.push(
    row(
      'ack-to-true',
      'last ACK → True p99 ≤ 250 ms at 1,000 Envoys × 1,000 objects',
      ackRun?.e2e?.lastAckToTrueMs.p99,
      250,
      ' ms',
      ackRun ? `${sizeKey(ackRun)}${anchor ? '' : ' (no 1,000-Envoy run: smaller size shown)'}` : 'no e2e run',
    ),
  );
  const gateway = largest(runs, (run) => run.gateway);
  rows.push(
    row(
      'gateway-ratio',
      'gateway config-delivery p99 ≤ 1.2 × direct',
      gateway ? gateway.value.relay.deliveryP99Ms / Math.max(1, gateway.value.direct.deliveryP99Ms) : undefined,
      1.2,
      '×',
      gateway ? `${gateway.run.envoys} Envoys, ${gateway.value.changes} changes (bench/gateway.ts)` : 'no gateway run',
    ),
  );
  rows.push(
    row(
      'rss-per-stream',
      '≤ 64 KiB RSS per Envoy stream (gateway process)',
      gateway?.value.relay.relayRssPerStreamKiB,
      64,
      ' KiB',
      gateway ? `relay in its own process, ${gateway.run.envoys} streams` : 'no gateway run',
    ),
  );
  const biggestFleet = Math.max(0, ...runs.filter((run) => run.e2e !== undefined || run.gateway !== undefined).map((run) => run.envoys));
  // Below 5,000 the target was not tried, which is not the same as failing it.
  const fleetRow = row('fleet-5000', '5,000 Envoys per gateway process', biggestFleet === 0 ? undefined : biggestFleet, 5000, ' Envoys', 'largest fleet that completed', 'higher');
  rows.push(fleetRow.verdict === 'missed' ? { ...fleetRow, verdict: 'not measured', gap: '', conditions: `largest fleet run: ${biggestFleet}` } : fleetRow);
  const writes = runs.flatMap((run) => [run.e2e, run.e2eBurst].flatMap((e) => (e ? [e.kubeConditionWritesPerObjectGeneration.max] : [])));
  rows.push(row('k8s-writes', '≤ 2 Kubernetes writes per object per generation', writes.length ? Math.max(...writes) : undefined, 2, '', 'max over objects and runs (condition-changing writes seen by a watch)'));
  const dynamo = largest(runs, (run) => run.e2e);
  rows.push(
    row('dynamo-per-ack', '≤ 1 DynamoDB write per ACK, amortized', dynamo?.value.dynamo.itemWritesPerAck, 1, '', dynamo ? `${sizeKey(dynamo.run)}, item writes (stream records) / ACKs during the change` : 'no e2e run'),
  );
  const convergence = results.convergence?.rows ?? [];
  const small = convergence.find((r) => r.envoys === 1000);
  const big = convergence.find((r) => r.envoys === 10000);
  rows.push(
    row(
      'convergence-flat',
      'convergence items read per batch flat in fleet size (10k / 1k ≤ 1.1)',
      small && big ? big.itemsReadPerBatch / Math.max(1, small.itemsReadPerBatch) : undefined,
      1.1,
      '×',
      small && big ? `${small.itemsReadPerBatch} vs ${big.itemsReadPerBatch} items per batch of ${big.recordsPerBatch} (bench/convergence.ts)` : 'not run',
    ),
  );
  return rows;
}

function table(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string>>): string {
  return [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function renderReadme(results: BenchResults): string {
  const targets = evaluateTargets(results);
  const lines: string[] = [
    '# Benchmarks (issue 9)',
    '',
    'Generated by `npm run bench -- report` (bench/report.ts) from `results.json`; do not edit by hand,',
    'the analysis below the tables is part of the generator (bench/support/readme.ts).',
    '',
    `Machine: ${results.machine}. Every figure is from this machine, with the whole system in one Node`,
    'process (e2e) and dynalite standing in for DynamoDB: compare within a run, not with AWS.',
    '',
    '## Running',
    '',
    '- `npm run bench -- report --quick`: 100 Envoys × 100 objects, every stage (≈ 2-4 min here; add `--burst` for the every-object-changed e2e row, ≈ +2 min).',
    '- `npm run bench -- report --sizes 1000x100,1000x500,5000x500`: larger sizes; each size\'s wall time is listed under "Runs and conditions". The local system caps objects at 500 (infra/local/system/options.ts), so 1,000 × 1,000 and 10,000 objects cannot run locally yet. Expect tens of minutes per 1,000-Envoy size on 2 cores: initial convergence alone grows with Envoys × objects.',
    '- `npm run bench -- report --render-only`: README and plots again from results.json. Each size run replaces its own row in results.json.',
    '- The pieces: `npm run bench -- e2e --envoys N --objects M [--changed K]`, `npm run bench -- baselines --envoys N --objects M --changed K`.',
    '',
    '## Targets',
    '',
    table(
      ['Target', 'Measured', 'Verdict', 'Gap', 'Conditions'],
      targets.map((t) => [t.target, t.measured, t.verdict, t.gap, t.conditions]),
    ),
    '',
  ];
  const missed = targets.filter((t) => t.verdict !== 'met');
  if (missed.length > 0) {
    lines.push('### Why', '');
    for (const t of missed) lines.push(`- **${t.target}** (${t.verdict}): ${WHY_MISSED[t.id] ?? 'not run at that size on this machine in the time available; run `npm run bench -- report --sizes …` to fill it.'}`);
    lines.push('');
  }
  lines.push('## End to end (ours)', '', 'Control plane → gateway → simulated Envoys; DynamoDB stream → convergence and status functions → Kubernetes. The first row of a size changes as many objects as the baselines; a second row (`--burst`) changes every object at once.', '');
  lines.push(
    table(
      ['Envoys × objects (changed)', 'last ACK→True p50/p99 ms', 'change→True p50/p99 ms', 'change→last ACK p50/p99 ms (control plane delivery)', 'K8s writes/object/gen (gen1, gen2, max)', 'gen-2 condition sequence (one object)', 'Dynamo write req / read req per change', 'item writes per ACK', 'ACKs/s over the change phase', 'stream fn invocations per change (before event filtering)', 'CPU s (change)', 'RSS MiB (process)'],
      results.runs.flatMap((run) =>
        [run.e2e, run.e2eBurst].flatMap((e) => {
          if (!e) return [];
          return [[
            `${sizeKey(run)} (${e.changed ?? e.objects})`,
            `${fmt(e.lastAckToTrueMs.p50)} / ${fmt(e.lastAckToTrueMs.p99)}`,
            `${fmt(e.changeToTrueMs.p50)} / ${fmt(e.changeToTrueMs.p99)}`,
            `${fmt(e.changeToLastAckMs.p50)} / ${fmt(e.changeToLastAckMs.p99)}`,
            `${fmt(e.kubeConditionWritesPerObjectGeneration.generation1)}, ${fmt(e.kubeConditionWritesPerObjectGeneration.generation2)}, ${e.kubeConditionWritesPerObjectGeneration.max}`,
            (e.conditionSequenceExample ?? []).join(' → '),
            `${fmt(e.dynamo.writesPerChange)} / ${fmt(e.dynamo.readsPerChange)}`,
            fmt(e.dynamo.itemWritesPerAck),
            fmt(e.ackEventsPerSecond),
            fmt(e.functionInvocations.perChange),
            fmt(e.process.cpuSecondsDuringChange),
            fmt(e.process.rssMiB),
          ]];
        }),
      ),
    ),
    '',
  );
  lines.push('## Gateway vs Envoys straight to the control plane (baseline a)', '', 'bench/gateway.ts `runMode`: one cluster change at a time, delivery = change applied → every Envoy ACKed the new cluster and endpoints. Direct runs first in the same process and pays the JIT warm-up and first-connection costs, so a ratio below 1 means no measurable gateway overhead at that size, not a speed-up. Note how much faster delivery is here than the e2e column "change → last ACK": there the same process also runs dynalite, the functions and the API server.', '');
  lines.push(
    table(
      ['Envoys', 'direct p50/p99 ms', 'gateway p50/p99 ms', 'p99 ratio', 'relay RSS KiB/stream', 'relay heap KiB/stream'],
      results.runs.flatMap((run) => {
        const g = run.gateway;
        if (!g) return [];
        return [[String(run.envoys), `${fmt(g.direct.deliveryP50Ms)} / ${fmt(g.direct.deliveryP99Ms)}`, `${fmt(g.relay.deliveryP50Ms)} / ${fmt(g.relay.deliveryP99Ms)}`, fmt(g.relay.deliveryP99Ms / Math.max(1, g.direct.deliveryP99Ms)), fmt(g.relay.relayRssPerStreamKiB), fmt(g.relay.relayHeapPerStreamKiB)]];
      }),
    ),
    '',
  );
  lines.push(
    '## Baselines b and c (same run, labelled: implemented from published parameters)',
    '',
    '- **Knative-style prober** (knative.dev/networking pkg/status): per (object, Envoy) HTTP probe to a per-Envoy endpoint on 127.0.0.1, first probe 200 ms after the change, 1 s timeout, retries at max(per-item backoff 50 ms→30 s, global token bucket 50 qps burst 100), 15 workers; Ready when every Envoy answers the new config\'s hash.',
    '- **Istio-style distribution reporting** (pilot/pkg/status/distribution): a reporter snapshots per-Envoy ACK state every 500 ms; a leader writes the status of every object still in progress every 200 ms tick (one write per object per tick) to the API server; Reconciled when every Envoy has it. The report itself (a ConfigMap write per 500 ms in Istio) is counted, not sent (the local API server serves no ConfigMaps), and handed to the leader in-process (favourable to the baseline).',
    '',
  );
  lines.push(
    table(
      ['Envoys × objects (changed)', 'Knative probes per object', 'Knative probe failures', 'Knative change→Ready p50/p99 ms', 'Knative 50 qps floor, all objects (s)', 'Istio status writes per object/gen', 'Istio reports', 'Istio change→Reconciled p50/p99 ms', 'ours change→True p50/p99 ms', 'ours K8s writes/object/gen'],
      results.runs.flatMap((run) => {
        if (!run.knative && !run.istio) return [];
        const k = run.knative;
        const i = run.istio;
        return [[
          `${sizeKey(run)} (${run.changed})`,
          fmt(k?.probesPerObject),
          fmt(k?.probeFailures),
          k ? `${fmt(k.changeToReadyMs.p50)} / ${fmt(k.changeToReadyMs.p99)}` : 'n/a',
          fmt(k?.floorAllObjectsSeconds),
          fmt(i?.statusWritesPerObjectGeneration),
          fmt(i?.reportWrites),
          i ? `${fmt(i.changeToReconciledMs.p50)} / ${fmt(i.changeToReconciledMs.p99)}` : 'n/a',
          run.e2e ? `${fmt(run.e2e.changeToTrueMs.p50)} / ${fmt(run.e2e.changeToTrueMs.p99)}` : 'n/a',
          run.e2e ? fmt(run.e2e.kubeConditionWritesPerObjectGeneration.generation2) : 'n/a',
        ]];
      }),
    ),
    '',
  );
  if (results.convergence) {
    lines.push('## Convergence work per stream batch (bench/convergence.ts)', '', results.convergence.conditions, '');
    lines.push(table(['Envoys', 'records/batch', 'items read/batch', 'requests/batch', 'batch ms', 'decision latency ms'], results.convergence.rows.map((r) => [String(r.envoys), String(r.recordsPerBatch), String(r.itemsReadPerBatch), String(r.requestsPerBatch), fmt(r.batchMs), fmt(r.decisionLatencyMs)])), '');
  }
  lines.push('## Runs and conditions', '');
  for (const run of results.runs) {
    lines.push(`- **${sizeKey(run)}** finished ${run.finishedAt} in ${run.durationSeconds} s. ${run.e2e?.conditions ?? ''}${run.errors.length ? ` Errors: ${run.errors.join('; ')}` : ''}`);
  }
  lines.push('', '## Plots', '', '![latency](latency.svg)', '', '![writes](writes.svg)', '', '![requests](requests.svg)', '');
  return `${lines.join('\n')}\n`;
}
