// A fleet described as plain, JSON-serialisable data, so the same fleet can be built in this process
// or in a child process (./fleet-process.ts): functions such as `FleetEnvoySpec.node` cannot cross
// a process boundary, so node ids and metadata come from a template instead.
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseBehaviour, simBehaviourConfigSchema } from './behaviour';
import { Fleet } from './fleet';
import { RouteWatch, routeWatchSchema, type FleetRoutable } from './route-watch';
import type { AcceptedContent, SimEnvoy, SimNode } from './simEnvoy';

const nodeTemplateSchema = z
  .object({
    /** Envoy number i gets node id `<idPrefix><i>`. */
    idPrefix: z.string().min(1),
    cluster: z.string().min(1),
    userAgentName: z.string().min(1).optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    /** Metadata that alternates by index: `key` = `values[i % values.length]` (e.g. zones a/b). */
    alternating: z.object({ key: z.string().min(1), values: z.array(z.string()).min(1) }).optional(),
  })
  .strict();

const envoyGroupSchema = z
  .object({
    /** What the group is for (the system's roles: nacking, slow, normal). */
    role: z.string().min(1),
    count: z.number().int().min(0),
    /** Index of the group's first Envoy (node ids are `<idPrefix><firstIndex + k>`). */
    firstIndex: z.number().int().min(0),
    transport: z.enum(['ads', 'per-type']),
    protocol: z.enum(['sotw', 'delta']),
    subscriptions: z.array(z.object({ typeUrl: z.string().min(1), resourceNames: z.array(z.string()).optional() }).strict()).min(1),
    nodeOnEveryRequest: z.boolean().optional(),
    reconnectOnError: z.boolean().optional(),
    reconnectDelayMs: z.number().int().min(0).optional(),
    /**
     * 'envoy' (default when `subscriptions` are exactly CDS, EDS, LDS, RDS with no names), 'grpc' (LDS
     * names = targets) or 'wildcard' (every type as given): docs/ENVOY-FLEET.md, "Subscription models".
     */
    subscriptionModel: z.enum(['envoy', 'grpc', 'wildcard']).optional(),
    /** 'envoy' model: Envoy's initial_fetch_timeout (default 15 s). */
    initialFetchTimeoutMs: z.number().int().min(0).optional(),
    /** simBehaviourConfigSchema input (regexes as strings); absent = the default behaviour. */
    behaviour: simBehaviourConfigSchema.optional(),
    node: nodeTemplateSchema,
    /** The server this group connects to (default: the spec's `target`), e.g. one of several gateways. */
    target: z.string().min(1).optional(),
  })
  .strict();

export const fleetSpecSchema = z
  .object({
    target: z.string().min(1),
    channels: z.number().int().min(1).optional(),
    maxStreamsPerChannel: z.number().int().min(1).optional(),
    groups: z.array(envoyGroupSchema),
    /** Hosts whose route to a cluster every Envoy's accepted content is watched for (FleetQueries.routable). */
    routeWatches: z.array(routeWatchSchema).optional(),
  })
  .strict();

export type FleetSpec = z.input<typeof fleetSpecSchema>;
export type FleetEnvoyGroup = z.input<typeof envoyGroupSchema>;
export type NodeTemplate = z.input<typeof nodeTemplateSchema>;

export function nodeFromTemplate(template: NodeTemplate, index: number): SimNode {
  const metadata: Record<string, string> = { ...(template.metadata ?? {}) };
  if (template.alternating) {
    const { key, values } = template.alternating;
    metadata[key] = values[index % values.length] ?? '';
  }
  return {
    id: `${template.idPrefix}${index}`,
    cluster: template.cluster,
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(template.userAgentName === undefined ? {} : { userAgentName: template.userAgentName }),
  };
}

export interface BuiltFleet {
  fleet: Fleet;
  /** Per group, in spec order. */
  groups: Array<{ role: string; envoys: SimEnvoy[] }>;
  envoys: SimEnvoy[];
  /** Set when the spec has `routeWatches`. */
  routes?: RouteWatch;
}

/** Builds (does not connect) the fleet a spec describes. Throws on an invalid spec. */
export function buildFleet(input: FleetSpec, logger: Logger): BuiltFleet {
  const spec = fleetSpecSchema.parse(input);
  const fleet = new Fleet({
    target: spec.target,
    ...(spec.channels === undefined ? {} : { channels: spec.channels }),
    ...(spec.maxStreamsPerChannel === undefined ? {} : { maxStreamsPerChannel: spec.maxStreamsPerChannel }),
    logger,
  });
  const routes = spec.routeWatches === undefined ? undefined : new RouteWatch(fleet.truth, spec.routeWatches);
  const groups = spec.groups.map((group) => ({
    role: group.role,
    envoys: fleet.addMany(
      group.count,
      {
        transport: group.transport,
        protocol: group.protocol,
        subscriptions: group.subscriptions,
        ...(group.nodeOnEveryRequest === undefined ? {} : { nodeOnEveryRequest: group.nodeOnEveryRequest }),
        ...(group.reconnectOnError === undefined ? {} : { reconnectOnError: group.reconnectOnError }),
        ...(group.reconnectDelayMs === undefined ? {} : { reconnectDelayMs: group.reconnectDelayMs }),
        ...(group.subscriptionModel === undefined ? {} : { subscriptionModel: group.subscriptionModel }),
        ...(group.initialFetchTimeoutMs === undefined ? {} : { initialFetchTimeoutMs: group.initialFetchTimeoutMs }),
        ...(group.behaviour === undefined ? {} : { behaviour: parseBehaviour(group.behaviour) }),
        node: (index) => nodeFromTemplate(group.node, index),
        ...(group.target === undefined ? {} : { target: group.target }),
        ...(routes === undefined ? {} : { onAccepted: (nodeId: string, accepted: AcceptedContent) => routes.onAccepted(nodeId, accepted) }),
      },
      group.firstIndex,
    ),
  }));
  return { fleet, groups, envoys: groups.flatMap((group) => group.envoys), ...(routes === undefined ? {} : { routes }) };
}

/** FleetQueries.routable over a built fleet (`nodeIds`: only these Envoys; default all). Throws without route watches. */
export function routableOf(built: BuiltFleet, keys: readonly string[], nodeIds?: readonly string[]): FleetRoutable {
  if (built.routes === undefined) throw new Error('routable needs route watches: give the fleet spec routeWatches');
  return built.routes.routable(nodeIds ?? built.envoys.map((envoy) => envoy.id), keys);
}
