// Startup of the xds-programmed CLI: wall time of `--help` (no network, no Kubernetes: what a user
// feels on every run) through the bin shim as a user runs it, with the prebuilt bundle
// (dist/cli/, scripts/build-cli.mjs) and with the tsx fallback the shim takes without one
// (XDS_PROGRAMMED_TSX=1), beside bare node (`node -e 0`, the floor) and kubectl's `--help` when it
// is installed (what "feels like kubectl" is measured against). Rounds interleave the commands so a
// busy machine slows them alike; p50 and p90 of each, and ratios of the p50s, in one table.
// The bundle is rebuilt first, so it is the current sources that are measured.
// Run: `npm run bench -- cli-startup [--runs 15]`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { positiveInteger } from './support/args';
import { percentile, round } from './support/stats';

const ROOT = join(__dirname, '..');
const SHIM = join(ROOT, 'scripts', 'xds-programmed.cjs');
const KUBECTL = '/usr/bin/kubectl';

interface Subject {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
}

export interface StartupRow {
  name: string;
  runs: number;
  p50Ms: number;
  p90Ms: number;
}

function timeOnce(subject: Subject): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(subject.command, subject.args, { cwd: '/tmp', env: { ...process.env, NO_COLOR: '1', ...subject.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`bench: ${subject.name} exited ${String(result.status)}: ${result.stderr.toString().slice(0, 300)}`);
  return elapsed;
}

export function measureStartup(runs: number): StartupRow[] {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { cwd: ROOT, stdio: 'ignore' });
  const subjects: Subject[] = [
    { name: 'node -e 0', command: process.execPath, args: ['-e', '0'] },
    { name: 'xds-programmed --help (bundle)', command: process.execPath, args: [SHIM, '--help'] },
    { name: 'xds-programmed --help (tsx)', command: process.execPath, args: [SHIM, '--help'], env: { XDS_PROGRAMMED_TSX: '1' } },
    ...(existsSync(KUBECTL) ? [{ name: 'kubectl --help', command: KUBECTL, args: ['--help'] }] : []),
  ];
  const samples = new Map<string, number[]>(subjects.map((subject) => [subject.name, []]));
  // One warm-up round (file cache), then interleaved rounds.
  for (const subject of subjects) timeOnce(subject);
  for (let round = 0; round < runs; round++) for (const subject of subjects) samples.get(subject.name)?.push(timeOnce(subject));
  return subjects.map((subject) => {
    const sorted = [...(samples.get(subject.name) ?? [])].sort((a, b) => a - b);
    return { name: subject.name, runs: sorted.length, p50Ms: percentile(sorted, 50), p90Ms: percentile(sorted, 90) };
  });
}

export function renderStartup(rows: readonly StartupRow[]): string {
  const p50 = (name: string) => rows.find((row) => row.name.startsWith(name))?.p50Ms ?? Number.NaN;
  const node = p50('node -e 0');
  const bundle = p50('xds-programmed --help (bundle)');
  const header = '| command | runs | p50 ms | p90 ms | p50 / node -e 0 | p50 / bundle |';
  const lines = rows.map((row) => `| ${row.name} | ${row.runs} | ${round(row.p50Ms)} | ${round(row.p90Ms)} | ${round(row.p50Ms / node, 2)}x | ${round(row.p50Ms / bundle, 2)}x |`);
  const tsx = p50('xds-programmed --help (tsx)');
  const summary = `bundle: ${round(bundle - node)} ms above bare node; the tsx path is ${round(tsx / bundle, 1)}x slower (${round(tsx - bundle)} ms more per run)`;
  return [header, '|---|---|---|---|---|---|', ...lines, '', summary].join('\n');
}

export async function run(argv: string[]): Promise<void> {
  const options = new Command('cli-startup').option('--runs <n>', 'timed runs of each command', positiveInteger, 15).parse(argv, { from: 'user' }).opts<{ runs: number }>();
  console.log(renderStartup(measureStartup(options.runs)));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
