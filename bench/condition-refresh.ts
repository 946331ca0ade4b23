// Kubernetes status writes per object per generation, and how stale the condition's message gets,
// under a slowly converging fleet: the real convergence handler (handoff + refresh sweep) and status
// handler on local DynamoDB's stream, the local Kubernetes API server, a gateway-shaped writer that
// heartbeats every 5 s, and Envoys that ACK one at a time (each ACK changes every object's count),
// with a stall half way (no Envoy record at all for a while: only the heartbeat runs convergence).
// Three settings of the same run:
//   refresh     STATUS_MESSAGE_REFRESH_MS=10000 (the default): counts rewritten at most every 10 s
//   off         STATUS_MESSAGE_REFRESH_MS=0: message-only changes never written (before the rule)
//   every       STATUS_WRITE_ON_MESSAGE_CHANGE=true: a write per count change (the churn Istio's
//               removed distribution reporter had, writing every 200 ms)
// "stale" is, per object, the longest time a message it held disagreed with the decision stored on
// its item (sampled every 100 ms), while both said the same not-True verdict.
// Run: `npm run bench -- condition-refresh [--envoys 20] [--objects 10] [--ack-every-ms 2000] [--stall-ms 20000] [--modes refresh,off,every]`.
import { Command } from 'commander';

import { DEFAULT_MESSAGE_REFRESH_MS } from '../common/core/status-update';
import { startRefreshWorld } from '../test/integration/functions/status-refresh-support';

export type RefreshMode = 'refresh' | 'off' | 'every';

export interface ConditionRefreshOptions {
  envoys: number;
  objects: number;
  ackEveryMs: number;
  /** No Envoy ACKs for this long once half of them have (0: none). */
  stallMs: number;
  modes: RefreshMode[];
}

export interface ConditionRefreshRow {
  mode: RefreshMode;
  /** From the first Pending write to True, per object (mean), ms. */
  notTrueMs: number;
  writesMin: number;
  writesMean: number;
  writesMax: number;
  /** The rule's bound for that time: 2 + one per interval. */
  bound: number;
  staleMaxMs: number;
  staleMeanMs: number;
}

export const defaultConditionRefreshOptions: ConditionRefreshOptions = { envoys: 20, objects: 10, ackEveryMs: 2000, stallMs: 20_000, modes: ['refresh', 'off', 'every'] };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function runMode(mode: RefreshMode, options: ConditionRefreshOptions): Promise<ConditionRefreshRow> {
  const w = await startRefreshWorld({
    envoys: options.envoys,
    heartbeatMs: 5000,
    ...(mode === 'off' ? { refreshMs: '0' } : {}),
    ...(mode === 'every' ? { writeOnMessageChange: true } : {}),
  });
  try {
    const names = Array.from({ length: options.objects }, (_, i) => `obj-${i}`);
    for (const name of names) await w.createWidget(name);
    await w.idle();
    const sampler = w.staleness(names);
    await w.rebuild(names);
    // Envoys come round one at a time: the generation stays Pending for envoys × ackEveryMs.
    for (const [index, envoy] of w.envoys.entries()) {
      await sleep(options.ackEveryMs + (index === Math.floor(w.envoys.length / 2) ? options.stallMs : 0));
      await envoy.ackAll(Date.now());
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      const conditions = await Promise.all(names.map((name) => w.conditionOf(name)));
      if (conditions.every((c) => c?.['status'] === 'True')) break;
      if (Date.now() > deadline) throw new Error(`${mode}: not every object True within 60 s after the last ACK`);
      await sleep(100);
    }
    await w.idle();
    const stale = await sampler.stop();
    const writes = w.writes();
    const perObject = names.map((name) => writes.filter((write) => write.name === name));
    const counts = perObject.map((list) => list.length);
    const spans = perObject.map((list) => (list.length === 0 ? 0 : (list[list.length - 1]?.at ?? 0) - (list[0]?.at ?? 0)));
    const notTrueMs = spans.reduce((a, b) => a + b, 0) / spans.length;
    const staleValues = [...stale.values()];
    return {
      mode,
      notTrueMs: Math.round(notTrueMs),
      writesMin: Math.min(...counts),
      writesMean: Math.round((counts.reduce((a, b) => a + b, 0) / counts.length) * 10) / 10,
      writesMax: Math.max(...counts),
      bound: 2 + Math.floor(Math.max(...spans) / DEFAULT_MESSAGE_REFRESH_MS),
      staleMaxMs: Math.max(...staleValues),
      staleMeanMs: Math.round(staleValues.reduce((a, b) => a + b, 0) / staleValues.length),
    };
  } finally {
    await w.close();
  }
}

export async function runConditionRefresh(options: ConditionRefreshOptions = defaultConditionRefreshOptions): Promise<ConditionRefreshRow[]> {
  const rows: ConditionRefreshRow[] = [];
  for (const mode of options.modes) rows.push(await runMode(mode, options));
  return rows;
}

export function formatConditionRefresh(rows: readonly ConditionRefreshRow[]): string {
  const label: Record<RefreshMode, string> = {
    refresh: `refresh every ${DEFAULT_MESSAGE_REFRESH_MS / 1000} s (default)`,
    off: 'off (message-only never written)',
    every: 'every count change written',
  };
  const lines = [
    '| setting | Pending → True (mean) | writes / object / generation (min–mean–max) | bound 2 + ⌊T/10 s⌋ | message stale, worst object | message stale, mean of objects |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows) {
    lines.push(`| ${label[row.mode]} | ${(row.notTrueMs / 1000).toFixed(1)} s | ${row.writesMin}–${row.writesMean}–${row.writesMax} | ${row.bound} | ${(row.staleMaxMs / 1000).toFixed(1)} s | ${(row.staleMeanMs / 1000).toFixed(1)} s |`);
  }
  return lines.join('\n');
}

const positive = (value: string): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`not a positive integer: ${value}`);
  return n;
};

export async function run(argv: string[]): Promise<void> {
  const opts = new Command()
    .name('condition-refresh')
    .option('--envoys <n>', 'Envoys, ACKing one at a time', positive, defaultConditionRefreshOptions.envoys)
    .option('--objects <n>', 'objects in the rollout', positive, defaultConditionRefreshOptions.objects)
    .option('--ack-every-ms <ms>', 'pause before each Envoy ACKs', positive, defaultConditionRefreshOptions.ackEveryMs)
    .option('--stall-ms <ms>', 'no ACK for this long half way (0: none)', (value: string) => Math.max(0, Number(value)), defaultConditionRefreshOptions.stallMs)
    .option('--modes <list>', 'refresh,off,every', (value: string) => value.split(',') as RefreshMode[], defaultConditionRefreshOptions.modes)
    .parse(['node', 'condition-refresh', ...argv])
    .opts<ConditionRefreshOptions>();
  const rows = await runConditionRefresh(opts);
  console.log(`slowly converging fleet: ${opts.objects} objects, ${opts.envoys} Envoys ACKing one every ${opts.ackEveryMs} ms, no ACK for ${opts.stallMs} ms half way, gateway heartbeat 5 s; local DynamoDB + local API server`);
  console.log(formatConditionRefresh(rows));
  const refresh = rows.find((row) => row.mode === 'refresh');
  if (refresh !== undefined && refresh.writesMax > refresh.bound) {
    console.error(`writes per object per generation ${refresh.writesMax} exceed the bound ${refresh.bound}`);
    process.exitCode = 1;
  }
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
