// A slowly converging fleet against the real functions, shared by status-refresh.test.ts and
// bench/condition-refresh.ts: local DynamoDB with its stream, the real convergence handler (with its
// handoff and refresh sweep) and status handler on stream deliveries, the local Kubernetes API server
// with the Widget CRD, a gateway-shaped writer (Envoy states, LINEAGE heartbeats, watermarks) and a
// watch counting every status write. `staleness()` samples, while it runs, how long each object's
// condition message has disagreed with the decision stored on its item.
import type { DynamoDBStreamEvent } from 'aws-lambda';

import { conditionForDecision } from '../../../common/core';
import { configureStatusHandoff, handleConvergence } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { createStatusHandler } from '../../../functions/status';
import { openWatch, request, startTestServer, WIDGET_CRD, type OpenWatch, type TestServer } from '../kube/helpers';
import { CDS, FakeEnvoy, FakeGateway, LDS, silentLogger, startWorld, streamDeliveryFor, type World } from './convergence-support';
import { WIDGET_KIND, widgetRef, type WidgetObject } from './status-support';

export const CONDITION = 'EnvoyProgrammed';
export type Condition = Record<string, unknown>;

/** The Widget these tests track (status-support's reference). */
export const widget = widgetRef;


export interface RefreshWorldOptions {
  /** STATUS_MESSAGE_REFRESH_MS for both functions ('' = the default). */
  refreshMs?: string;
  /** STATUS_WRITE_ON_MESSAGE_CHANGE (a baseline: every count change written). */
  writeOnMessageChange?: boolean;
  envoys: number;
  /** How often the gateway writes its LINEAGE heartbeat (the real gateway's default is 5000 ms). */
  heartbeatMs?: number;
}

export interface StatusWrite {
  name: string;
  at: number;
  condition: Condition | undefined;
}

export interface RefreshWorld {
  world: World;
  kube: TestServer;
  context: FunctionContext;
  gateway: FakeGateway;
  envoys: FakeEnvoy[];
  createWidget(name: string): Promise<void>;
  /** A config change reflecting these objects at generation 1 (one rebuild, one watermark each). */
  rebuild(names: readonly string[]): Promise<void>;
  conditionOf(name: string): Promise<Condition | undefined>;
  /** Status writes seen by the watch so far (MODIFIED events whose conditions changed). */
  writes(): StatusWrite[];
  /** Starts sampling how long each object's message has disagreed with its stored decision. */
  staleness(names: readonly string[], everyMs?: number): { stop(): Promise<Map<string, number>> };
  idle(): Promise<void>;
  close(): Promise<void>;
}

export async function startRefreshWorld(options: RefreshWorldOptions): Promise<RefreshWorld> {
  const world = await startWorld('refresh');
  const kube = await startTestServer();
  const created = await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD);
  if (created.status !== 201) throw new Error(`CRD not created: ${JSON.stringify(created.body)}`);
  const env: Record<string, string> = {
    ...world.env,
    TRACKED_KINDS: JSON.stringify([WIDGET_KIND]),
    KUBECONFIG_PATH: kube.kubeconfig,
    ...(options.refreshMs === undefined || options.refreshMs === '' ? {} : { STATUS_MESSAGE_REFRESH_MS: options.refreshMs }),
    ...(options.writeOnMessageChange === true ? { STATUS_WRITE_ON_MESSAGE_CHANGE: 'true' } : {}),
  };
  const context = buildFunctionContext(world.env, silentLogger);
  if (!configureStatusHandoff(context, env)) throw new Error('the handoff did not configure');
  const convergence = streamDeliveryFor(world, (event: DynamoDBStreamEvent) => handleConvergence(event, context));
  const status = streamDeliveryFor(world, createStatusHandler({ env, logger: silentLogger }));
  const watch: OpenWatch = await openWatch(kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true');
  const seenAt: number[] = [];
  const observer = setInterval(() => {
    while (seenAt.length < watch.events.length) seenAt.push(Date.now());
  }, 5);

  const now = Date.now();
  const gateway = new FakeGateway(world, 'gw-a.boot1.edge', now);
  gateway.change(CDS);
  gateway.change(LDS);
  await gateway.save(now);
  const envoys = Array.from({ length: options.envoys }, (_, i) => new FakeEnvoy(world, gateway, `envoy-${String(i).padStart(3, '0')}`, now));
  for (const envoy of envoys) await envoy.ackAll(now);
  // The gateway's heartbeat: a LINEAGE record every few seconds, whatever the fleet does. It is the
  // clock convergence (and so the refresh sweep) runs on when no Envoy changes.
  let heartbeat: Promise<void> = Promise.resolve();
  const beating = setInterval(() => {
    heartbeat = heartbeat.then(() => gateway.save(Date.now())).catch(() => undefined);
  }, options.heartbeatMs ?? 5000);

  const conditionOf = async (name: string): Promise<Condition | undefined> => {
    const object = (await request(kube, 'GET', `/apis/example.com/v1/namespaces/default/widgets/${name}`)).body as WidgetObject;
    return object.status?.conditions?.find((c) => c['type'] === CONDITION);
  };

  return {
    world,
    kube,
    context,
    gateway,
    envoys,
    async createWidget(name) {
      const response = await request(kube, 'POST', '/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace: 'default' }, spec: { size: 1 } });
      if (response.status !== 201) throw new Error(`widget ${name} not created: ${JSON.stringify(response.body)}`);
    },
    async rebuild(names) {
      gateway.change(CDS);
      await gateway.save(Date.now());
      for (const name of names) await gateway.watermark(widget(name), 1, Date.now());
    },
    conditionOf,
    writes() {
      while (seenAt.length < watch.events.length) seenAt.push(Date.now());
      const last = new Map<string, string>();
      const writes: StatusWrite[] = [];
      watch.events.forEach((event, index) => {
        const object = event.object as unknown as WidgetObject;
        const name = object.metadata?.name ?? '';
        const conditions = JSON.stringify(object.status?.conditions ?? []);
        if (event.type === 'MODIFIED' && last.has(name) && last.get(name) !== conditions) {
          writes.push({ name, at: seenAt[index] ?? Date.now(), condition: object.status?.conditions?.find((c) => c['type'] === CONDITION) });
        }
        last.set(name, conditions);
      });
      return writes;
    },
    staleness(names, everyMs = 100) {
      // Per object: since when the message it holds has disagreed with the stored decision. A new
      // message (one of our writes) starts afresh: each message is judged on its own.
      const staleSince = new Map<string, number>();
      const heldMessage = new Map<string, unknown>();
      const worst = new Map<string, number>(names.map((name) => [name, 0]));
      let stopped = false;
      const sample = async (): Promise<void> => {
        for (const name of names) {
          const [held, read] = await Promise.all([conditionOf(name), world.store.getObjectGeneration(widget(name), 1)]);
          const at = Date.now();
          const decision = read.status === 'found' ? read.value.decision : undefined;
          const draft = decision === undefined ? undefined : conditionForDecision(widget(name), 1, decision, { type: CONDITION });
          const stale = held !== undefined && draft !== undefined && draft.status !== 'True' && held['status'] === draft.status && held['reason'] === draft.reason && held['message'] !== draft.message;
          if (heldMessage.get(name) !== held?.['message']) staleSince.delete(name);
          heldMessage.set(name, held?.['message']);
          const since = staleSince.get(name);
          if (stale && since === undefined) staleSince.set(name, at);
          if (since !== undefined) worst.set(name, Math.max(worst.get(name) ?? 0, at - since));
          if (!stale) staleSince.delete(name);
        }
      };
      const loop = (async () => {
        while (!stopped) {
          await sample();
          await new Promise((resolve) => setTimeout(resolve, everyMs));
        }
      })();
      return {
        async stop() {
          stopped = true;
          await loop;
          return worst;
        },
      };
    },
    async idle() {
      await convergence.idle();
      await status.idle();
    },
    async close() {
      clearInterval(beating);
      clearInterval(observer);
      await heartbeat;
      watch.close();
      await watch.ended;
      await status.stop();
      await convergence.stop();
      context.close();
      await kube.cleanup();
      await world.close();
    },
  };
}
