// Renders docs/bench/README.md from results.json: the targets of issue 9 (met, missed by how much,
// or not measured, each with its conditions), then the tables per size and the baselines.
import type { BenchResults, SizeRun } from './results';
import { sizeKey } from './results';
import { formatRecorderWrites } from '../recorder-writes';

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
    'Measured at 1,000 Envoys with 100 objects: 1,000 × 1,000 did not finish here (see "Sizes" below). The gap is convergence throughput on this machine, by numbers: after a 10-object change at 1,000 Envoys the ground truth has every Envoy ACKed within 1.4 s (change → last ACK p99), but the gateway\'s ~1,600 ACKs become ~1,900 stream records (1.2 item writes per ACK), appended over ~20 s, and the convergence delivery consumes them at ~85-100 records/s (the run\'s `timeline`: delivered count advancing in steps of 100-250 records every 2-3 s); an object turns True only after the record carrying its last Envoy\'s state is applied, so last ACK → True ≈ records per change ÷ convergence throughput ≈ 16-20 s (16.5 s p99 in the latest 1,000 × 100 run). One convergence batch of 100 Envoy states costs ~1 s even alone (bench/convergence.ts: 979 ms and 60 DynamoDB requests at 1,000 Envoys, 1,758 ms at 10,000, the shard items growing), and its profile is DynamoDB emulation, not our logic: dynalite 28% self (its condition-expression parser alone ~15%: every shard, pending and decision write is conditional), Node HTTP/socket internals 29%, AWS SDK ~10%, zod 3.5%, functions/** 0.5%. In the e2e the whole system shares that one event loop (see the profile below), so each request also waits for the loop. What would close it: on AWS each stream shard has its own Lambda invocation in parallel and DynamoDB answers in single-digit ms, so ~60 requests per batch is tens of ms, not a second; and structurally, after the last ACK the path is gateway recorder flush (≤ 100 ms) → stream → convergence → OBJECT item → stream → status → PATCH, i.e. two stream hops; with serverless.yml\'s windows now 0 (Lambda polls each shard ~4 times a second, ~125 ms per hop on average) the two hops alone are ~250 ms on average, so 250 ms at p99 also needs the status write to follow a Programmed decision without the second stream hop (convergence handing it to the status writer), which is not done.',
  'gateway-ratio':
    'The relay adds a hop (decode, record, re-encode) per response and per ACK; at small fleets the direct delivery is a few milliseconds, so a constant per-hop cost is a large ratio.',
  'rss-per-stream': 'Per-stream buffers of the relay (upstream and downstream HTTP/2 stream state, the last response per type kept for provenance).',
  'k8s-writes':
    'The third write is a Stuck condition: False/Pending → False/Stuck → True/Programmed. Convergence calls an Envoy stuck when a type behind the watermark has waited longer than the ACK timeout (10 s locally) since the response was sent, judged at the wall-clock time of the evaluation. At 1,000 × 100 the ground truth says every Envoy ACKed the change within 1.4 s, yet Stuck was written: the Envoys had ACKed, but their states reached the aggregates ~20 s later (the convergence backlog above), and a batch evaluated in between saw them still waiting. So here the Stuck write is our own pipeline\'s lag, not the Envoys\' fault: a product bug, not fixed in this round. The fix: judge stuck where the wait is witnessed, at the gateway (it already emits a STUCK event once per response unanswered past the timeout), and let convergence report stuck only from that evidence; pipeline lag could then delay a Stuck report but never invent one, and the normal path stays Pending → Programmed (2 writes).',
  'dynamo-per-ack':
    'Since issue 9 an ACK costs no item of its own: it rides in the Envoy\'s STATE write, which convergence needs anyway, and events move to event-log items nine at a time (docs/GATEWAY.md, "The event log"; `npm run bench -- recorder-writes` measures the gateway alone: item writes per ACK before → after are 2.63 → 1.17 for a one-type change and 1.65 → 0.67 for a three-type change at 1,000 Envoys). The floor is therefore one STATE write per ACK when a change touches one type per Envoy (1 + 1/9 with the log), so a run whose changes touch one type each cannot meet ≤ 1; on top come STUCK events (when ACKs are late) and the convergence function\'s shard, lineage and OBJECT items, which amortize over the fleet.',
  'convergence-flat':
    'Items read per batch grew with the fleet: evaluation touched more than the lineage\'s shards. (If the row says "not measured": bench/convergence.ts failed at the time of this run with "no Programmed decision within 60 s"; it belongs to another engineer.)',
  'fleet-5000': 'No 5,000-Envoy run finished on this shared machine in the time available (see "Sizes" below); the local system accepts 5,000 Envoys (`npm run bench -- report --sizes 5000x100 --stages e2e,gateway`).',
};

/**
 * Profile and optimisation notes of issue 9's latency round (measured by hand with `node --cpu-prof`
 * and the convergence batch log; see the report in the lead's merge). Static: re-measure before editing.
 */
export const ANALYSIS: readonly string[] = [
  '## Profile (where the time goes)',
  '',
  '`node --cpu-prof --import tsx bench/e2e.ts --envoys 100 --objects 100 --changed 100`, before this round\'s changes; the change phase (20 s) only. The process was busy 97% of it (1 s buckets), so everything below is a share of one saturated event loop.',
  '',
  '| self time | where |',
  '| --- | --- |',
  '| 21.8% | Node internals: HTTP client/server, sockets, streams (`socketOnData`, `_addHeaderLine`, `nextTick`) |',
  '| 13.4% | garbage collector |',
  '| 12.3% + 3.8% | dynalite (`decode` in formats.js 2.8% alone) + its level/abstract-level storage |',
  '| 12.9% | AWS SDK v3 (@smithy/core 8.6%, @aws-sdk/core 1.8%, util-dynamodb 1.3%, SigV4 1.2%) |',
  '| 7.1% | the local DynamoDB front (wire `call` 1.2%, change-record `canonicalize` 0.7%) and stream delivery (`invoke`: a structuredClone of every batch, 2.6%) |',
  '| 3.2% | `writev` (socket writes) |',
  '| 2.5% / 1.6% / 1.0% | reference control plane / API server / protobufjs |',
  '| 2.4% / 2.3% | common/core / zod |',
  '| 0.4% | functions/** inclusive (convergence and status logic) |',
  '',
  'So about 60% of the loop is the DynamoDB request path (client SDK, HTTP, front, dynalite), and the convergence logic is noise: convergence is slow here because of how many requests it makes and how long each waits for the loop, not because of its own CPU. Requests in the same scenario (100 × 100, all changed; counted by a patched `http.request` in a diagnostic script, so the front\'s forwarding to dynalite doubles every count), with shards already in parallel and the rewrite throttle on but no cache yet: OBJECT generation items dominated (GetItem 2,766, UpdateItem 2,618, Query 2,574, plus the front\'s image reads of them), i.e. convergence re-reading every pending generation on every Envoy batch, rewriting its decision whenever a count moved, and asking for the latest generation before each write. Convergence batch log (`phaseMs`, added this round): shard updates 50-75 ms, pending index 40-2,500 ms, evaluation 0.1-4.8 s, i.e. ~50 ms per request on the saturated loop. Aggregate CAS retries were not a factor (shard conflicts were rare: each stream shard\'s batch touches its own Envoys).',
  '',
  '## Optimisations (this round)',
  '',
  '- **Shards in parallel**: a batch\'s aggregate shards (independent items) and different objects\' pending-index updates are written concurrently; a batch costs one shard round trip, not 16 in a row.',
  '- **Fewer reads per pending generation**: each convergence container keeps the OBJECT generation items it read or wrote in the last `DECISION_REFRESH_MS`; a pending generation whose verdict did not change is re-evaluated from memory, without a read. The "latest generation" query runs only before a write. Same diagnostic scenario without → with the cache: OBJECT GetItem 2,766 → 1,390, Query 2,574 → 1,296, UpdateItem 2,618 → 1,394 for the same 100 changes (all True after 85 s → 30 s; single runs on a loaded machine, so the time is indicative only).',
  '- **One evaluation per watermark per batch**: evaluation is O(live members) per pending generation and built every blocker; 1,000 pending generations × 1,000 Envoys all behind cost 1.7 s of CPU per batch (0.13 s when all are programmed; measured with `evaluateFromAggregates` alone on this machine). Generations stamped by the same rebuild share a watermark, so a batch now evaluates each distinct watermark once, as of the snapshot\'s read time, and copies the result.',
  '- **No count-only rewrites within `DECISION_REFRESH_MS`** (1 s locally, off by default on Lambda): a decision whose verdict (state) is unchanged is rewritten at most once per second; a verdict change is always written at once, so the condition is never delayed (docs/CONVERGENCE.md, "Decision refresh"). Invariants 1-5 unchanged; tests: test/integration/functions/convergence-refresh.test.ts.',
  '- **Measured effect** (e2e, 10 objects changed, runs in the tables; single runs on a shared machine): at 1,000 × 100, start → every object True went from 207 s to 32 s and change → last ACK p99 from 21.6 s to 1.4 s (both together with the gateway\'s recorder changes of the same round), while last ACK → True stayed ~20 s, bounded by the convergence throughput (see "Why"); at 100 × 100 last ACK → True measured 6.9 / 7.2 s (p50/p99) in a run right after the convergence changes and 19.0 / 19.9 s in the final run, against 18.0 / 18.4 s before: on this machine the figure moves with the load more than with these changes.',
  '- **Stuck judged on evidence** (fixes the third Kubernetes write): convergence used to call an Envoy stuck when a type behind the watermark had waited past the ACK timeout by the evaluation\'s wall clock; at 1,000 × 100 every Envoy had ACKed within 1.4 s, but their states reached the aggregates ~20 s later, so objects went Pending → Stuck → Programmed (3 writes, and a false message). Now the wait is judged at the stored state\'s `lastSeenAt`, which the gateway refreshes when it really finds a response unanswered past the timeout (docs/CONVERGENCE.md, "Expiry and stuck Envoys"). Re-measured after the fix: 2 writes per object per generation at both 100 × 100 and 1,000 × 100 (Pending → Programmed).',
  '- **Batching windows**: locally convergence 200 → 100 ms, status 200 → 0 ms; serverless.yml 1 s → 0 for both (the AWS default: Lambda polls each shard about 4 times a second, so ~125 ms per hop on average and at most ~4 invocations/s per shard while records flow; a 1 s window cuts invocations up to 4× during a rollout at +1 s per hop). The trade-off is visible in the table: stream invocations per change (counted before event filtering, i.e. what the local mapping polls) rose with window 0, since the status mapping now runs for almost every few records.',
  '',
  '## Sizes',
  '',
  '- **1,000 × 1,000** (the anchor; `--sizes 1000x1000 --stages e2e --phase-timeout-ms 600000`, alone on the machine, load average ≈ 3-5): did not finish. Startup (1,000 HTTPProxies created 8 at a time, 1,000 Envoys connected) took ~100 s; 600 s later only 65 of 1,000 objects were True at generation 1. The convergence function was not the limit there: it had consumed 6,559 of the 6,665 stream records appended; the records themselves came slowly (~9 per second), i.e. the producers of watermarks and ACK states (control plane rebuilds of 1,000 objects with status writes, the gateway\'s barrier re-opens, the fleet in the same process) were. That part was not profiled in this round. So no last ACK → True figure exists at the anchor size; the 1,000 × 100 row stands in.',
  '- **5,000 Envoys per gateway process** (`--sizes 5000x100 --stages gateway`): measured, the relay served 5,000 streams at 19.4 KiB RSS per stream, config delivery p50/p99 1,283 / 2,085 ms against 2,647 / 4,546 ms for the same fleet connected straight to the control plane (ratio 0.46; direct runs first and pays the warm-up). A 5,000 × 100 end-to-end run was not attempted: given the 1,000 × 1,000 run, it could not finish in the time left.',
  '- The local system now accepts up to 10,000 objects (infra/local/system/options.ts; samples are created 8 at a time); `npm start -- --objects N` takes the same 10,000.',
  '',
];

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
  // 1,000 Envoys × 1,000 objects is the anchor; when it has no run (too long on a loaded machine),
  // the largest run with at least 1,000 Envoys stands in, labelled with its size.
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
    '- `npm run bench -- report --sizes 1000x100,1000x1000,5000x100`: larger sizes (the local system takes up to 5,000 Envoys and 10,000 objects); each size\'s wall time is listed under "Runs and conditions". `--stages e2e,gateway` skips the baselines (the Knative prober alone needs Envoys × changed / 50 qps seconds). Expect tens of minutes per 1,000-Envoy size on 2 cores: initial convergence alone grows with Envoys × objects.',
    '- The e2e bench takes the functions\' settings for before/after runs: `--batch-window-ms` (convergence, default 100), `--status-batch-window-ms` (default 0), `--decision-refresh-ms` (default 1000); the settings before issue 9\'s optimisation round were 200 / 200 / 0.',
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
  lines.push(...ANALYSIS);
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
  if (results.recorderWrites) {
    lines.push('## Gateway item writes per ACK (bench/recorder-writes.ts)', '', results.recorderWrites.conditions, '');
    lines.push(formatRecorderWrites(results.recorderWrites.rows), '');
  }
  lines.push('## Runs and conditions', '');
  for (const run of results.runs) {
    const carried = run.carried?.length ? ` Carried from earlier runs of this size (not re-run): ${run.carried.map((entry) => `${entry.stage} (${entry.finishedAt})`).join(', ')}.` : '';
    lines.push(`- **${sizeKey(run)}** finished ${run.finishedAt} in ${run.durationSeconds} s. ${run.e2e?.conditions ?? ''}${carried}${run.errors.length ? ` Errors: ${run.errors.join('; ')}` : ''}`);
  }
  lines.push('', '## Plots', '', '![latency](latency.svg)', '', '![writes](writes.svg)', '', '![requests](requests.svg)', '');
  return `${lines.join('\n')}\n`;
}
