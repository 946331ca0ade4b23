// startControlPlane wires the pipeline: RouteSource -> translate -> snapshot (versions) -> xDS server,
// then status (leader only). Rebuilds are serialized; each one sets the snapshot before writing any
// status, as Contour does (internal/contour/handler.go: the DAG rebuild updates the xDS cache, then the
// status updater runs), so "status says observedGeneration G" implies "snapshot contains G".
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import { packAny } from '../../../common/xds/protos';
import { RESOURCE_TYPE_URLS, TYPE_SHORT_NAMES, type ResourceTypeUrl } from '../../../common/xds/type-urls';
import { HTTPROUTE_GROUP, HTTPROUTE_KIND, type RouteStatusUpdate } from './gateway-api';
import type { LeaderElector } from './leader-election';
import { HTTPPROXY_GROUP, HTTPPROXY_KIND, type RouteInputs } from './model';
import { RebuildLog, type RebuildRecord, type TypeShortName } from './rebuild-log';
import type { RouteSource } from './route-source';
import { type Snapshot, type TypeSnapshot, InMemorySnapshotCache, sameContent, typeSnapshot } from './snapshot-cache';
import type { ProxyStatusUpdate, StatusWriter } from './status';
import { type Translation, translate } from './translate';
import { type VersionSchemeName, createVersionScheme } from './versions';
import { XdsEventLog } from './xds-events';
import { addDiscoveryServices } from './xds-server';

export interface ControlPlaneOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  host?: string;
  /** Identifies this replica in logs, `control_plane.identifier` and the rebuild log. */
  replicaId: string;
  source: RouteSource;
  statusWriter?: StatusWriter;
  /** Without one, this replica behaves as the leader (single replica). */
  leaderElector?: LeaderElector;
  versionScheme?: VersionSchemeName;
  /** Stamp provenance metadata on Listener/Cluster/RouteConfiguration/VirtualHost. */
  provenance?: boolean;
  /** 'api' (default) for gRPC xDS clients, 'socket' for Envoy (see TranslateOptions). */
  listenerStyle?: 'api' | 'socket';
  /** Contour's rebuild holdoff: wait this long after the last change… */
  holdoffMs?: number;
  /** …but never more than this since the previous rebuild. */
  holdoffMaxMs?: number;
  /** Extra delay inside every rebuild (simulates a large DAG). */
  extraRebuildDelayMs?: number;
  /** Delay before retrying failed status writes. */
  statusRetryMs?: number;
  /** How many xDS events `xdsEvents` keeps (oldest dropped); default 100,000. */
  xdsEventCapacity?: number;
  /** How many rebuild records `rebuildLog` keeps (oldest dropped); default 10,000. */
  rebuildLogCapacity?: number;
  logger?: Logger;
  newUuid?: () => string;
  now?: () => number;
}

export interface ControlPlane {
  address: string;
  port: number;
  replicaId: string;
  rebuildLog: RebuildLog;
  xdsEvents: XdsEventLog;
  /** The snapshot currently served (undefined before the first rebuild). */
  currentSnapshot(): Snapshot | undefined;
  /** Rebuild immediately (bypassing holdoff); resolves with the record (or undefined if it failed). */
  rebuildNow(): Promise<RebuildRecord | undefined>;
  /** Resolves when no rebuild is pending or running and no status write is outstanding. */
  whenIdle(): Promise<void>;
  close(): Promise<void>;
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = (options.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' })).child({ replicaId: options.replicaId });
  const now = options.now ?? Date.now;
  const holdoffMs = options.holdoffMs ?? 100;
  const holdoffMaxMs = options.holdoffMaxMs ?? 500;
  const extraRebuildDelayMs = options.extraRebuildDelayMs ?? 0;
  const statusRetryMs = options.statusRetryMs ?? 1000;
  const cache = new InMemorySnapshotCache();
  const rebuildLog = new RebuildLog(options.rebuildLogCapacity);
  const xdsEvents = new XdsEventLog(options.xdsEventCapacity);
  const versions = createVersionScheme(options.versionScheme ?? 'contour', options.newUuid ?? randomUUID);
  const isLeader = (): boolean => options.leaderElector?.isLeader() ?? true;

  let seq = 0;
  let lastInputs: RouteInputs | undefined;
  let lastRebuildAt = 0;
  let holdoffTimer: NodeJS.Timeout | undefined;
  let statusRetryTimer: NodeJS.Timeout | undefined;
  let pendingChange = false;
  /** A holdoff-triggered rebuild is queued and has not read its inputs yet, so it covers any new change. */
  let rebuildQueued = false;
  let running: Promise<unknown> = Promise.resolve();
  let busy = 0;
  let closed = false;
  let latestValidity: Translation['proxies'] = [];
  let latestRouteValidity: Translation['httpRoutes'] = [];
  /** What this replica last wrote per object, so unchanged conditions are not rewritten. */
  const written = new Map<string, ProxyStatusUpdate>();
  const writtenRoutes = new Map<string, RouteStatusUpdate>();
  const idleWaiters: Array<() => void> = [];

  const checkIdle = (): void => {
    if (busy === 0 && holdoffTimer === undefined && !pendingChange) {
      for (const resolve of idleWaiters.splice(0)) resolve();
    }
  };

  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    busy += 1;
    const result = running.then(work, work);
    running = result.finally(() => {
      busy -= 1;
      checkIdle();
    });
    return result;
  };

  const rebuild = async (): Promise<RebuildRecord | undefined> => {
    if (extraRebuildDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, extraRebuildDelayMs));
    if (closed) return undefined;
    // From here on the inputs are read: a change after this point needs a rebuild of its own, and a
    // holdoff still waiting for a change before it has nothing left to do.
    pendingChange = false;
    rebuildQueued = false;
    if (holdoffTimer !== undefined) clearTimeout(holdoffTimer);
    holdoffTimer = undefined;
    let record: RebuildRecord;
    try {
      record = buildAndSetSnapshot();
    } catch (error) {
      // A translation bug must not take the server down: keep serving the previous snapshot.
      log.error({ err: error }, 'rebuild failed; still serving the previous snapshot');
      return undefined;
    }
    await writeStatuses();
    return record;
  };

  const buildAndSetSnapshot = (): RebuildRecord => {
    const inputs = options.source.list();
    const translation = translate(inputs, { provenance: options.provenance ?? false, listenerStyle: options.listenerStyle ?? 'api' });
    const previous = cache.getSnapshot();
    const packed = {} as Record<ResourceTypeUrl, TypeSnapshot>;
    const changedTypes = new Set<ResourceTypeUrl>();
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      const resources = translation.resources[typeUrl].map((r) => ({ name: r.name, resource: packAny(typeUrl, r.message) }));
      packed[typeUrl] = typeSnapshot(typeUrl, '', resources);
      if (!sameContent(previous?.[typeUrl], packed[typeUrl])) changedTypes.add(typeUrl);
    }
    const routeInputsChanged =
      lastInputs === undefined ||
      !isDeepStrictEqual(lastInputs.proxies, inputs.proxies) ||
      !isDeepStrictEqual(lastInputs.httpRoutes ?? [], inputs.httpRoutes ?? []) ||
      !isDeepStrictEqual(lastInputs.secrets, inputs.secrets);
    const previousVersions = previous
      ? (Object.fromEntries(RESOURCE_TYPE_URLS.map((t) => [t, previous[t].version])) as Record<ResourceTypeUrl, string>)
      : undefined;
    const nextVersions = versions.next({ changedTypes, routeInputsChanged, previous: previousVersions });
    const snapshot = {} as Record<ResourceTypeUrl, TypeSnapshot>;
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      const version = nextVersions[typeUrl];
      const previousType = previous?.[typeUrl];
      snapshot[typeUrl] =
        previousType && previousType.version === version ? previousType : { ...packed[typeUrl], version };
    }
    cache.setSnapshot(snapshot);
    lastInputs = inputs;
    lastRebuildAt = now();
    latestValidity = translation.proxies;
    latestRouteValidity = translation.httpRoutes;
    seq += 1;
    const record: RebuildRecord = {
      replicaId: options.replicaId,
      seq,
      at: lastRebuildAt,
      versions: shortNamed((t) => nextVersions[t]),
      changedTypes: RESOURCE_TYPE_URLS.filter((t) => previous?.[t].version !== nextVersions[t]).map((t) => TYPE_SHORT_NAMES[t]),
      contained: shortNamed((t) => [...new Set(translation.resources[t].flatMap((r) => r.sources))].sort()),
      objects: [
        ...translation.proxies.map((p) => ({
          object: `${HTTPPROXY_GROUP}/${HTTPPROXY_KIND}/${p.namespace}/${p.name}`,
          generation: p.generation,
          valid: p.valid,
        })),
        ...translation.httpRoutes.map((r) => ({
          object: `${HTTPROUTE_GROUP}/${HTTPROUTE_KIND}/${r.namespace}/${r.name}`,
          generation: r.generation,
          valid: r.served,
        })),
      ],
    };
    rebuildLog.append(record);
    log.info({ seq, versions: record.versions, changedTypes: record.changedTypes }, 'snapshot set');
    return record;
  };

  const writeStatuses = async (): Promise<void> => {
    if (!options.statusWriter || !isLeader() || closed) return;
    let failed = false;
    for (const validity of latestValidity) {
      const update: ProxyStatusUpdate = {
        namespace: validity.namespace,
        name: validity.name,
        generation: validity.generation,
        valid: validity.valid,
        reason: validity.reason,
        message: validity.message,
      };
      const key = `${update.namespace}/${update.name}`;
      if (isDeepStrictEqual(written.get(key), update)) continue;
      try {
        await options.statusWriter.writeProxyStatus(update);
        written.set(key, update);
      } catch (error) {
        failed = true;
        log.error({ err: error, object: key, generation: update.generation }, 'status write failed; will retry');
      }
    }
    // HTTPRoutes after HTTPProxies, under the same rule: the snapshot holding this generation is
    // already set. A route without parentRefs has nowhere to report.
    const writeRouteStatus = options.statusWriter.writeRouteStatus?.bind(options.statusWriter);
    for (const { served: _served, ...update } of writeRouteStatus ? latestRouteValidity : []) {
      if (update.parentRefs.length === 0) continue;
      const key = `${update.namespace}/${update.name}`;
      if (isDeepStrictEqual(writtenRoutes.get(key), update)) continue;
      try {
        await writeRouteStatus?.(update);
        writtenRoutes.set(key, update);
      } catch (error) {
        failed = true;
        log.error({ err: error, object: `${HTTPROUTE_KIND} ${key}`, generation: update.generation }, 'route status write failed; will retry');
      }
    }
    if (failed && !closed && statusRetryTimer === undefined) {
      statusRetryTimer = setTimeout(() => {
        statusRetryTimer = undefined;
        void serialized(writeStatuses);
      }, statusRetryMs);
    }
  };

  const scheduleRebuild = (): void => {
    if (closed) return;
    pendingChange = true;
    if (holdoffTimer !== undefined) clearTimeout(holdoffTimer);
    // Contour's holdoff: coalesce bursts by waiting holdoffMs after the latest change, unless the last
    // rebuild is already holdoffMaxMs old, in which case rebuild now.
    const sinceLast = now() - lastRebuildAt;
    const delay = sinceLast >= holdoffMaxMs ? 0 : holdoffMs;
    holdoffTimer = setTimeout(() => {
      holdoffTimer = undefined;
      // A rebuild already queued behind the running one reads the inputs when it starts, so it covers
      // this change too. Without this, a burst of changes arriving while a slow rebuild ran (past
      // holdoffMaxMs, so each with delay 0) queued one rebuild per change: creating 300 objects gave
      // 79 rebuilds of which 4 found anything new.
      if (rebuildQueued) return;
      rebuildQueued = true;
      void serialized(rebuild);
    }, delay);
  };

  await options.source.start();
  const unwatch = options.source.watch(scheduleRebuild);
  const onLeadership = (leader: boolean): void => {
    log.info({ leader }, 'leadership changed');
    if (leader) {
      written.clear();
      writtenRoutes.clear();
      void serialized(writeStatuses);
    }
  };
  options.leaderElector?.onLeadershipChange(onLeadership);
  await serialized(rebuild);

  const server = new grpc.Server();
  const closeStreams = addDiscoveryServices(server, {
    cache,
    controlPlaneId: options.replicaId,
    onEvent: xdsEvents.record,
    log,
  });
  const host = options.host ?? '127.0.0.1';
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    );
  });
  log.info({ host, port: boundPort }, 'xDS control plane listening');

  return {
    address: `${host}:${boundPort}`,
    port: boundPort,
    replicaId: options.replicaId,
    rebuildLog,
    xdsEvents,
    currentSnapshot: () => cache.getSnapshot(),
    rebuildNow: () => {
      if (holdoffTimer !== undefined) clearTimeout(holdoffTimer);
      holdoffTimer = undefined;
      return serialized(rebuild);
    },
    whenIdle: () =>
      new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        checkIdle();
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      unwatch();
      if (holdoffTimer !== undefined) clearTimeout(holdoffTimer);
      if (statusRetryTimer !== undefined) clearTimeout(statusRetryTimer);
      holdoffTimer = undefined;
      pendingChange = false;
      await running.catch(() => undefined);
      closeStreams();
      // Streams were just ended with UNAVAILABLE; nothing is worth waiting for.
      server.forceShutdown();
      checkIdle();
    },
  };
}

function shortNamed<T>(value: (typeUrl: ResourceTypeUrl) => T): Record<TypeShortName, T> {
  const result = {} as Record<TypeShortName, T>;
  for (const typeUrl of RESOURCE_TYPE_URLS) result[TYPE_SHORT_NAMES[typeUrl]] = value(typeUrl);
  return result;
}
