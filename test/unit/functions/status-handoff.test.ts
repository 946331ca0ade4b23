// Pure pieces of convergence's handoff to the status writer (functions/lib/status-handoff.ts) and of
// the writer's revalidation rule (functions/kube/status-writer.ts), and the handoff's bounds (at most
// N direct writes in flight, a deadline, a pause after a failure) with a scripted writer standing in
// for Kubernetes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { parse, type Tags, type YAMLSeq } from 'yaml';

import type { Condition, ConditionDraft, Decision, ItemRead, ObjectGeneration } from '../../../common/core';
import { needsRevalidation, type WriteOutcome } from '../../../functions/kube/status-writer';
import { buildStatusHandoff, isHandoffVerdict, StatusHandoff } from '../../../functions/lib/status-handoff';
import { storedDecisionRevalidator } from '../../../functions/status/decision';
import type { StatusProcessorDeps } from '../../../functions/status/process';

const silent = pino({ level: 'silent' });
const base: Decision = { state: 'Pending', programmed: 1, total: 3, blockers: [], blockersOmitted: 0, decidedAt: 1000, evaluatedRev: 5 };
const programmed: Decision = { ...base, state: 'Programmed', programmed: 3 };
const rejected: Decision = { ...base, state: 'Rejected' };

describe('isHandoffVerdict', () => {
  it.each([
    ['first decision Programmed', undefined, programmed, true],
    ['Pending → Programmed', base, programmed, true],
    ['Pending → Rejected', base, rejected, true],
    ['Pending → Stuck', base, { ...base, state: 'Stuck' }, true],
    ['Rejected → Programmed', rejected, programmed, true],
    ['first decision Pending (left to the stream)', undefined, base, false],
    ['Rejected → Pending (left to the stream)', rejected, base, false],
    ['count-only change', rejected, { ...rejected, programmed: 2 }, false],
    ['superseded', base, { ...programmed, supersededBy: 2 }, false],
    ['not-observable reason changed', { ...base, state: 'GenerationNotObservable', notObservableReason: 'a' }, { ...base, state: 'GenerationNotObservable', notObservableReason: 'b' }, true],
  ] as Array<[string, Decision | undefined, Decision, boolean]>)('%s', (_name, previous, next, expected) => {
    expect(isHandoffVerdict(previous, next)).toBe(expected);
  });
});

describe('needsRevalidation', () => {
  const held = (status: Condition['status'], observedGeneration: number): Condition => ({ type: 'EnvoyProgrammed', status, reason: status === 'True' ? 'Programmed' : 'Pending', message: '', observedGeneration, lastTransitionTime: '2026-01-01T00:00:00Z' });
  const draft = (status: ConditionDraft['status'], observedGeneration: number): ConditionDraft => ({ type: 'EnvoyProgrammed', status, reason: status === 'True' ? 'Programmed' : 'Pending', message: '', observedGeneration });
  it.each([
    ['True held, Pending draft, same generation', held('True', 2), draft('False', 2), true],
    ['Rejected held, Pending draft, same generation', { ...held('False', 2), reason: 'Rejected' }, draft('False', 2), true],
    ['a True draft is never asked about (Programmed is final)', held('False', 2), draft('True', 2), false],
    ['an older generation held', held('True', 1), draft('False', 2), false],
    ['nothing held', undefined, draft('False', 2), false],
  ] as Array<[string, Condition | undefined, ConditionDraft, boolean]>)('%s', (_name, current, next, expected) => {
    expect(needsRevalidation(current, next)).toBe(expected);
  });
});

function record(name: string, decision: Decision, previousState?: Decision['state']): { record: ObjectGeneration; previous: Decision | undefined } {
  return {
    record: { object: { group: 'example.com', kind: 'Widget', namespace: 'default', name }, generation: 1, watermarks: {}, firstSeenAt: 0, decision },
    previous: previousState === undefined ? undefined : { ...decision, state: previousState },
  };
}

/** A writer whose calls wait until the test releases them (or fail, or never answer). */
class ScriptedWriter {
  inFlight = 0;
  maxInFlight = 0;
  calls: string[] = [];
  private readonly pending: Array<() => void> = [];
  mode: 'hold' | 'fail' | 'hang' = 'hold';

  async write(ref: { name: string }, draft: ConditionDraft): Promise<WriteOutcome> {
    this.calls.push(ref.name);
    if (this.mode === 'fail') throw new Error('HTTP 500: etcdserver: request timed out');
    if (this.mode === 'hang') return new Promise<WriteOutcome>(() => undefined);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise<void>((resolve) => this.pending.push(resolve));
    this.inFlight--;
    return { outcome: 'written', condition: { ...draft, lastTransitionTime: '2026-01-01T00:00:00Z' }, previous: undefined, resourceVersion: '1', conflicts: 0 };
  }

  releaseAll(): number {
    const released = this.pending.splice(0);
    for (const release of released) release();
    return released.length;
  }
}

function handoffWith(writer: ScriptedWriter, options: { concurrency?: number; timeoutMs?: number; now?: () => number } = {}): { handoff: StatusHandoff; recorded: string[] } {
  const recorded: string[] = [];
  const now = options.now ?? (() => 0);
  const status: StatusProcessorDeps = {
    writer,
    store: { recordCondition: async (ref) => void recorded.push(ref.name) },
    cleanup: { markDeleted: async () => 0 },
    logger: silent,
    conditionType: 'EnvoyProgrammed',
    writeOnMessageChange: false,
    now,
  };
  return { handoff: new StatusHandoff({ status, logger: silent, now, concurrency: options.concurrency, timeoutMs: options.timeoutMs ?? 60_000, pauseAfterFailureMs: 1000 }), recorded };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(condition()).toBe(true);
}

describe('StatusHandoff', () => {
  it('keeps at most `concurrency` direct writes in flight and records each written condition', async () => {
    const writer = new ScriptedWriter();
    const { handoff, recorded } = handoffWith(writer, { concurrency: 2 });
    const batch = handoff.begin();
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      const { record: r, previous } = record(name, programmed, 'Pending');
      batch.offer(r, previous);
    }
    // Pending and count-only changes are not offered to Kubernetes at all.
    const pending = record('p', base);
    batch.offer(pending.record, pending.previous);
    const settled = batch.settle();
    let released = 0;
    while (released < 5) {
      await until(() => writer.inFlight > 0);
      expect(writer.inFlight).toBeLessThanOrEqual(2);
      released += writer.releaseAll();
    }
    expect(await settled).toEqual({ offered: 5, written: 5, unchanged: 0, notWritten: 0, failed: 0, paused: 0 });
    expect(writer.maxInFlight).toBe(2);
    expect(recorded.sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('a failure is reported, never thrown, and pauses direct writes for a while', async () => {
    const writer = new ScriptedWriter();
    writer.mode = 'fail';
    let now = 0;
    const { handoff, recorded } = handoffWith(writer, { concurrency: 1, now: () => now });
    const batch = handoff.begin();
    for (const name of ['a', 'b']) {
      const { record: r, previous } = record(name, rejected, 'Pending');
      batch.offer(r, previous);
    }
    expect(await batch.settle()).toMatchObject({ offered: 2, failed: 1, paused: 1 });
    expect(writer.calls).toEqual(['a']);
    expect(recorded).toEqual([]);
    // After the pause, direct writes resume.
    now = 1000;
    writer.mode = 'hold';
    const next = handoff.begin();
    const { record: r, previous } = record('c', programmed, 'Pending');
    next.offer(r, previous);
    const settled = next.settle();
    await until(() => writer.inFlight === 1);
    writer.releaseAll();
    expect(await settled).toMatchObject({ offered: 1, written: 1 });
  });

  it('stops waiting for a write past its deadline (the batch goes on)', async () => {
    const writer = new ScriptedWriter();
    writer.mode = 'hang';
    const { handoff } = handoffWith(writer, { timeoutMs: 20 });
    const batch = handoff.begin();
    const { record: r, previous } = record('slow', programmed, 'Pending');
    batch.offer(r, previous);
    expect(await batch.settle()).toMatchObject({ offered: 1, failed: 1 });
  });
});

describe('buildStatusHandoff (configuration)', () => {
  const store = { recordCondition: async () => undefined, getObjectGeneration: async () => ({ status: 'missing' as const }) };
  const kinds = JSON.stringify([{ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets' }]);
  const kubeconfig = 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n';

  it('is on by default when Kubernetes is configured, off when switched off or not configured', () => {
    expect(buildStatusHandoff({ TRACKED_KINDS: kinds, KUBECONFIG_YAML: kubeconfig }, silent, { store })).toHaveProperty('handoff');
    expect(buildStatusHandoff({ STATUS_HANDOFF: 'false', TRACKED_KINDS: kinds, KUBECONFIG_YAML: kubeconfig }, silent, { store })).toEqual({ off: 'STATUS_HANDOFF=false' });
    expect(buildStatusHandoff({}, silent, { store })).toMatchObject({ off: expect.stringMatching(/TRACKED_KINDS/) as unknown });
  });

  it('refuses invalid settings with a clear error', () => {
    expect(() => buildStatusHandoff({ STATUS_HANDOFF: 'yes' }, silent, { store })).toThrow(/STATUS_HANDOFF/);
    expect(() => buildStatusHandoff({ TRACKED_KINDS: kinds }, silent, { store })).toThrow(/exactly one of/);
    expect(() => buildStatusHandoff({ TRACKED_KINDS: kinds, KUBECONFIG_YAML: kubeconfig, STATUS_HANDOFF_TIMEOUT_MS: '0' }, silent, { store })).toThrow(/STATUS_HANDOFF_TIMEOUT_MS/);
  });
});

describe('serverless.yml wiring', () => {
  // CloudFormation short tags are kept as plain values: only the environment maps are looked at.
  const tags: Tags = [
    ...['!GetAtt', '!Ref', '!Sub'].map((tag) => ({ tag, resolve: (value: string) => value })),
    { tag: '!Join', collection: 'seq', resolve: (value: YAMLSeq) => value },
  ];
  const config = parse(readFileSync(join(__dirname, '..', '..', '..', 'serverless.yml'), 'utf8'), { merge: true, customTags: tags }) as { functions: Record<string, { environment?: Record<string, string> }> };
  const environment = (name: string): Record<string, string> => config.functions[name]?.environment ?? {};

  it('gives convergence the switch and the status function\'s Kubernetes settings, and only convergence', () => {
    const kubernetes = ['TRACKED_KINDS', 'CONDITION_TYPE', 'EKS_CLUSTER_NAME', 'EKS_CLUSTER_ENDPOINT', 'EKS_CLUSTER_CA'];
    for (const key of kubernetes) expect(environment('convergence')[key]).toBe(environment('status')[key]);
    expect(environment('convergence')['STATUS_HANDOFF']).toBe('${param:statusHandoff}');
    // The aggregate settings are still shared with expire, which gets no Kubernetes access.
    for (const key of ['ENVOY_TTL_MS', 'ACK_TIMEOUT_MS', 'AGGREGATE_SHARDS', 'REQUIRED_TYPE_URLS']) expect(environment('expire')[key]).toBe(environment('convergence')[key]);
    expect(Object.keys(environment('expire')).filter((key) => kubernetes.includes(key) || key.startsWith('STATUS_'))).toEqual([]);
  });
});

describe('storedDecisionRevalidator', () => {
  const { record: stale } = record('w', base);
  const draft: ConditionDraft = { type: 'EnvoyProgrammed', status: 'False', reason: 'Pending', message: 'stale', observedGeneration: 1 };
  const revalidate = (stored: ItemRead<ObjectGeneration>): Promise<ConditionDraft | undefined> =>
    storedDecisionRevalidator({ getObjectGeneration: async () => stored }, stale, draft, { type: 'EnvoyProgrammed' })();

  it('gives the stored decision\'s draft, nothing for a superseded one, and keeps the draft when the item cannot be read', async () => {
    expect(await revalidate({ status: 'found', value: { ...stale, decision: programmed } })).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 1 });
    expect(await revalidate({ status: 'found', value: { ...stale, decision: { ...rejected, supersededBy: 2 } } })).toBeUndefined();
    expect(await revalidate({ status: 'missing' })).toBe(draft);
    expect(await revalidate({ status: 'corrupt', error: 'bad' })).toBe(draft);
    expect(await revalidate({ status: 'found', value: { ...stale, decision: undefined } })).toBe(draft);
  });
});
