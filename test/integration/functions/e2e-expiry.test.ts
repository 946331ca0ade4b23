// Issue 6, end to end: events and states written by ANOTHER OS PROCESS (test/support/
// functions-e2e-writer.ts, the gateway's part, through the store adapter to the local DynamoDB front)
// → local stream delivery → the real convergence function → the real status function → the local
// Kubernetes API server, observed by the real `kubectl wait --for=condition=EnvoyProgrammed`:
//   - it returns only after the last Envoy's ACK is written;
//   - it keeps waiting while one Envoy has NACKed (the condition's message quotes Envoy's error);
//   - it returns once that Envoy, disconnected, expires (the expire function run with its clock
//     moved past the TTL; the gateway's heartbeat is written ahead so only that Envoy ages).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { handleConvergence } from '../../../functions/convergence';
import { handleExpire } from '../../../functions/expire';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { createStatusHandler } from '../../../functions/status';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { kubectl, request, startTestServer, WIDGET_CRD, type KubectlResult, type TestServer } from '../kube/helpers';
import { CDS, deliver, LDS, silentLogger, startWorld, waitFor, waitForDecision, type World } from './convergence-support';
import { WIDGET_KIND, widgetRef, type WidgetObject } from './status-support';

const ROOT = join(__dirname, '..', '..', '..');
const WRITER = join(ROOT, 'test', 'support', 'functions-e2e-writer.ts');
const LINEAGE = 'gw-x.boot1.edge';
const TTL_MS = 60_000;
const AHEAD_MS = 10 * 60_000;
const NACK_TEXT = 'cluster "e2e": unknown field "lb_polcy"';

/** The writer process: one JSON command per line, one reply per command. */
class GatewayWriter {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private readonly stderr: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const reply = JSON.parse(line) as { id: number; ok: boolean; error?: string };
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) waiter?.resolve();
      else waiter?.reject(new Error(`writer: ${reply.error ?? 'failed'}`));
    });
    child.stderr.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  send(command: Record<string, unknown>): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`writer did not answer ${JSON.stringify(command)}; stderr: ${this.stderr.join('')}`)), 30_000);
      this.waiting.set(id, {
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }
}

/** kubectl wait in the background, remembering when it returned. */
function waitInBackground(kube: TestServer, timeout: string): { settled: () => boolean; result: Promise<KubectlResult & { at: number }> } {
  let done = false;
  const result = kubectl(kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/e2e', '-n', 'default', `--timeout=${timeout}`], undefined, 120_000).then((r) => {
    done = true;
    return { ...r, at: Date.now() };
  });
  return { settled: () => done, result };
}

describe('writer process → stream → convergence → status → kubectl wait', () => {
  let world: World;
  let kube: TestServer;
  let convergence: StreamDelivery;
  let status: StreamDelivery;
  let context: FunctionContext;
  let writer: GatewayWriter;
  const expireContexts: FunctionContext[] = [];

  const condition = async (): Promise<Record<string, unknown> | undefined> =>
    ((await request(kube, 'GET', '/apis/example.com/v1/namespaces/default/widgets/e2e')).body as WidgetObject).status?.conditions?.find((c) => c['type'] === 'EnvoyProgrammed');
  const conditionWhere = (what: string, predicate: (c: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    waitFor(what, async () => {
      const found = await condition();
      return found !== undefined && predicate(found) ? found : undefined;
    });
  /** Everything delivered and written, then a pause in which a wrongly returning kubectl would return. */
  async function settle(): Promise<void> {
    await convergence.idle();
    await status.idle();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }

  beforeAll(async () => {
    world = await startWorld('e2e', TTL_MS);
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    context = buildFunctionContext(world.env, silentLogger);
    convergence = deliver(world, (event) => handleConvergence(event, context));
    status = deliver(world, createStatusHandler({ env: { ...world.env, TRACKED_KINDS: JSON.stringify([WIDGET_KIND]), KUBECONFIG_PATH: kube.kubeconfig }, logger: silentLogger }));
    writer = new GatewayWriter(spawn(process.execPath, ['--import', 'tsx', WRITER, world.dynamo.endpoint, world.tableName], { cwd: ROOT, env: { ...process.env } }));
    await writer.send({ op: 'start', lineage: LINEAGE, types: [CDS, LDS], envoys: ['envoy-a', 'envoy-b'], heartbeatAt: Date.now() + AHEAD_MS });
    await convergence.idle();
  });

  afterAll(async () => {
    expect(await writer.close()).toBe(0);
    await convergence.stop();
    await status.stop();
    for (const expire of expireContexts) expire.close();
    context.close();
    await kube.cleanup();
    await world.close();
  });

  it('waits for the last ACK, keeps waiting on a NACK, and returns when the NACKing Envoy expires', async () => {
    expect((await request(kube, 'POST', '/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'e2e', namespace: 'default' }, spec: { size: 1 } })).status).toBe(201);

    // Generation 1 reaches the gateway; envoy-a takes it, envoy-b has it sent but not ACKed.
    await writer.send({ op: 'change', typeUrl: CDS, heartbeatAt: Date.now() + AHEAD_MS });
    await writer.send({ op: 'watermark', object: widgetRef('e2e'), generation: 1 });
    await writer.send({ op: 'ack', nodeId: 'envoy-a' });
    await writer.send({ op: 'send', nodeId: 'envoy-b', typeUrl: CDS });
    // Convergence knows envoy-b alone is behind; the condition says Pending (its message is not
    // rewritten for a count change alone: invariant 4, no write per ACK).
    const decided = await waitForDecision(world, widgetRef('e2e'), 1, (d) => d.state === 'Pending' && d.programmed === 1 && d.total === 2, 'Pending on envoy-b');
    expect(decided.blockers.map((b) => b.nodeId)).toEqual(['envoy-b']);
    expect(await conditionWhere('Pending at generation 1', (c) => c['reason'] === 'Pending' && c['observedGeneration'] === 1)).toMatchObject({ status: 'False' });
    const first = waitInBackground(kube, '90s');
    await settle();
    expect(first.settled()).toBe(false);
    const lastAckAt = Date.now();
    await writer.send({ op: 'ack', nodeId: 'envoy-b' });
    const returned = await first.result;
    expect(returned).toMatchObject({ code: 0, stderr: '' });
    expect(returned.at).toBeGreaterThanOrEqual(lastAckAt);
    expect(await condition()).toMatchObject({ status: 'True', reason: 'Programmed', message: '2/2 Envoys programmed at generation 1' });

    // Generation 2: envoy-b NACKs it.
    const patched = await fetch(`${kube.server.url}/apis/example.com/v1/namespaces/default/widgets/e2e`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { size: 2 } }),
    });
    expect(((await patched.json()) as WidgetObject).metadata.generation).toBe(2);
    await writer.send({ op: 'change', typeUrl: CDS, heartbeatAt: Date.now() + AHEAD_MS });
    await writer.send({ op: 'watermark', object: widgetRef('e2e'), generation: 2 });
    await writer.send({ op: 'ack', nodeId: 'envoy-a' });
    await writer.send({ op: 'nack', nodeId: 'envoy-b', typeUrl: CDS, message: NACK_TEXT });
    const rejected = await conditionWhere('Rejected at generation 2', (c) => c['reason'] === 'Rejected' && c['observedGeneration'] === 2);
    expect(rejected['status']).toBe('False');
    expect(rejected['message']).toContain(`envoy-b rejected CDS: ${NACK_TEXT}`);
    const second = waitInBackground(kube, '90s');
    await settle();
    expect(second.settled()).toBe(false);

    // envoy-b goes away: still counted (and still blocking) until the TTL passes.
    await writer.send({ op: 'disconnect', nodeId: 'envoy-b' });
    await settle();
    expect(second.settled()).toBe(false);
    expect(await condition()).toMatchObject({ reason: 'Rejected', observedGeneration: 2 });

    // The expire function, its clock past the TTL: envoy-b expires, generation 2 is Programmed.
    const expireAt = Date.now() + TTL_MS + 5_000;
    const expire = buildFunctionContext(world.env, silentLogger, () => expireAt);
    expireContexts.push(expire);
    const expiredAt = Date.now();
    expect(await handleExpire(expire)).toMatchObject({ expired: 1, failed: 0 });
    const afterExpiry = await second.result;
    expect(afterExpiry).toMatchObject({ code: 0, stderr: '' });
    expect(afterExpiry.at).toBeGreaterThanOrEqual(expiredAt);
    expect(await condition()).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 2, message: '1/1 Envoys programmed at generation 2' });
  }, 150_000);
});
