// Shared by the system and CLI tests: the real kubectl (own HOME, so its discovery cache is ours),
// the CLI through its bin shim (a real child process), and polling.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { HTTPPROXIES_PATH, patchToCanary } from '../../../bench/support/changes';
import type { EventStore, ObjectRef } from '../../../common/core';
import type { FleetQueries } from '../../../infra/local/envoys/fleet-process';
import { eventually as pollEventually, type Probe } from '../../support/eventually';

export const REPO_ROOT = join(__dirname, '..', '..', '..');
export const CLI_SHIM = join(REPO_ROOT, 'scripts', 'xds-programmed.cjs');

export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function kubectl(kubeconfig: string, home: string, args: string[], timeoutMs = 90_000): Promise<ProcessResult> {
  mkdirSync(home, { recursive: true });
  return new Promise((resolve) => {
    const child = execFile('/usr/bin/kubectl', ['--kubeconfig', kubeconfig, ...args], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home }, timeout: timeoutMs }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** Runs `xds-programmed <args>` as a user would (the package.json bin shim), with only the given environment. */
export function cli(args: string[], env: Record<string, string> = {}, timeoutMs = 90_000): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_SHIM, ...args], {
      cwd: '/tmp',
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp', NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** Polls (every 100 ms, retrying through probe errors) until `probe` returns something other than `undefined`/`false`. */
export function eventually<T>(probe: Probe<T>, description: string, timeoutMs = 60_000): Promise<T> {
  return pollEventually(probe, description, { timeoutMs, intervalMs: 100, retryOnError: true });
}

/**
 * The local system settled at generation 1: every one of `envoys` Envoys ACKed all four types (the
 * fleet's own ground truth), then sample-0's condition True.
 */
export async function settledAtFirstGeneration(system: { kube: { url: string }; options: { conditionType: string }; fleet: { queries: Pick<FleetQueries, 'configuredCount'> } }, envoys: number): Promise<void> {
  await eventually(async () => (await system.fleet.queries.configuredCount()) === envoys, 'every Envoy ACKed all four types');
  await eventually(async () => (await conditionOf(system.kube.url, system.options.conditionType, 'sample-0'))?.status === 'True' || undefined, 'sample-0 True at generation 1');
}

export function patchSpec(serviceName: string, fqdn: string, prefix = '/'): string {
  return JSON.stringify({ spec: { virtualhost: { fqdn }, routes: [{ conditions: [{ prefix }], services: [{ name: serviceName, port: 8080 }] }] } });
}

/** Whether a process exists (signal 0; EPERM means it exists but is not ours). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface TrackedCondition {
  type: string;
  status: string;
  message?: string;
  observedGeneration?: number;
}

/** The condition of type `conditionType` on an HTTPProxy, as the API server has it (undefined if none). */
export async function conditionOf(kubeUrl: string, conditionType: string, name: string): Promise<TrackedCondition | undefined> {
  const response = await fetch(`${kubeUrl}${HTTPPROXIES_PATH}/${name}`);
  if (!response.ok) return undefined;
  const body = (await response.json()) as { status?: { conditions?: TrackedCondition[] } };
  return body.status?.conditions?.find((condition) => condition.type === conditionType);
}

/** Moves sample-<index>'s route to its canary and waits for our condition True at `generation`. */
export async function patchToCanaryUntilTrue(kubeUrl: string, conditionType: string, index: number, generation: number): Promise<{ since: number; trueSeenAt: number }> {
  const since = Date.now();
  await patchToCanary(kubeUrl, index);
  await eventually(async () => {
    const condition = await conditionOf(kubeUrl, conditionType, `sample-${index}`);
    return (condition?.status === 'True' && condition.observedGeneration === generation) || undefined;
  }, `sample-${index} True at generation ${generation}`);
  return { since, trueSeenAt: Date.now() };
}

/**
 * The fleet's own ground truth at the watermarks the gateway wrote for `ref` at `generation` (one
 * lineage): how many Envoys hold every watermarked type at or past it, and when the last of them
 * ACKed, since `since`. Throws when the generation has no stored watermark.
 */
export async function fleetAtWatermark(store: EventStore, fleet: Pick<FleetQueries, 'programmedAt'>, ref: ObjectRef, generation: number, since: number): Promise<{ lineages: string[]; envoysWith: number | undefined; lastAck: number | undefined }> {
  const read = await store.getObjectGeneration(ref, generation);
  if (read.status !== 'found') throw new Error(`no OBJECT generation ${generation} of ${ref.name}: ${read.status}`);
  const targets = Object.entries(read.value.watermarks).map(([lineage, watermark]) => ({ key: 'x', lineage, seqByType: watermark.types }));
  const programmed = await fleet.programmedAt(targets, since);
  return { lineages: targets.map((target) => target.lineage), envoysWith: programmed.envoysWith['x'], lastAck: programmed.lastAck['x'] };
}
