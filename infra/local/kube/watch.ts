// WATCH: a chunked HTTP/1.1 response of newline-separated JSON events, as the apiserver sends
// them ({"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":...}). Where it starts is decided
// from the query by handlers.ts (with query.ts):
// - initialState: synthetic ADDED events for the current state, then changes; with
//   `initialEventsEndBookmark` (the WatchList protocol) a BOOKMARK annotated
//   `k8s.io/initial-events-end: "true"` between the two;
// - since N: every change after N (replayed from the history window), then live;
//   N older than the window: an ERROR event carrying a 410 Expired Status (client-go relists);
// - now: only changes from now on;
// - allowWatchBookmarks: periodic BOOKMARKs carrying the current resourceVersion;
// - timeoutSeconds: the server ends the watch after that long.
import type { ServerResponse } from 'node:http';
import { errors } from './errors';
import { isJsonObject, type JsonObject } from './json';
import { CUSTOM_RESOURCE_DEFINITIONS, resourceKey } from './resources';
import { matchesFields, matchesLabels, type FieldRequirement, type LabelRequirement } from './selectors';
import { namespaceOf, type ObjectStore, type StoredEvent } from './store';

export interface WatchRequest {
  resourceKey: string;
  namespace: string | undefined;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  start: WatchStart;
  initialEventsEndBookmark: boolean;
  allowBookmarks: boolean;
  timeoutSeconds: number;
  bookmarkIntervalMs: number;
  /** Unsent bytes a slow watcher may accumulate before its watch is ended. */
  maxBufferedBytes: number;
  /** Renders a stored object in the version the client asked for. */
  render: (object: JsonObject) => JsonObject;
  /** The kind/apiVersion stamped on BOOKMARK objects. */
  kind: string;
  apiVersion: string;
  /**
   * How far this resource's watch stream is behind the store right now (a fault the tests inject:
   * kube-apiserver has one watch cache per resource, so watches of different resources can be
   * behind by different amounts, and a client sees their events in no common order). Read per event.
   */
  lagMs: () => number;
}

export type WatchStart = { kind: 'initialState' } | { kind: 'since'; resourceVersion: number } | { kind: 'now' };

export interface ActiveWatch {
  close(): void;
}

export function startWatch(res: ServerResponse, store: ObjectStore, request: WatchRequest, onEnd: () => void): ActiveWatch {
  const matches = (object: JsonObject): boolean =>
    (request.namespace === undefined || namespaceOf(object) === request.namespace) &&
    matchesLabels(object, request.labels) &&
    matchesFields(object, request.fields);

  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
  // kubectl and client-go wait for the response headers before they consider the watch open.
  res.flushHeaders();

  let closed = false;
  const write = (type: string, object: JsonObject): void => {
    if (closed) return;
    res.write(`${JSON.stringify({ type, object })}\n`);
    // A watcher that does not read must not grow our memory without bound: like the
    // apiserver's cacher with a full buffer, end its watch; it resumes from its last
    // resourceVersion (or relists on 410).
    if (res.writableLength > request.maxBufferedBytes) finish();
  };
  const bookmark = (annotations?: Record<string, string>): void => {
    const metadata: JsonObject = { resourceVersion: String(store.currentResourceVersion()) };
    if (annotations) metadata['annotations'] = annotations;
    write('BOOKMARK', { kind: request.kind, apiVersion: request.apiVersion, metadata });
  };
  // The watch cache's rule: an event is judged against the selection before and after it, so
  // a change that moves an object out of (into) the selection is a DELETED (ADDED).
  const deliver = (event: StoredEvent): void => {
    if (event.type === 'DELETED' && event.resourceKey === CRD_KEY && crdServes(event.object, request.resourceKey)) {
      // The resource itself is gone: end the watch, as the apiserver does.
      finish();
      return;
    }
    if (event.resourceKey !== request.resourceKey) return;
    const wasMatching = event.previous !== undefined && matches(event.previous);
    const nowMatches = event.type !== 'DELETED' && matches(event.object);
    if (wasMatching && nowMatches) write('MODIFIED', request.render(event.object));
    else if (nowMatches) write('ADDED', request.render(event.object));
    else if (wasMatching) write('DELETED', request.render(event.object));
  };

  let unsubscribe: () => void = () => undefined;
  const timers: { timeout?: NodeJS.Timeout; bookmark?: NodeJS.Timeout; lag?: NodeJS.Timeout } = {};
  const finish = (): void => {
    if (closed) return;
    closed = true;
    unsubscribe();
    clearTimeout(timers.timeout);
    clearTimeout(timers.bookmark);
    clearTimeout(timers.lag);
    res.end();
    onEnd();
  };
  res.on('close', finish);

  // Lagged delivery keeps the stream's order: an event is never due before the one ahead of it.
  const lagged: Array<{ due: number; event: StoredEvent }> = [];
  const drainLagged = (): void => {
    timers.lag = undefined;
    const now = Date.now();
    while (lagged.length > 0 && lagged[0]!.due <= now) deliver(lagged.shift()!.event);
    if (lagged.length > 0 && !closed) timers.lag = setTimeout(drainLagged, lagged[0]!.due - now);
  };
  const deliverLive = (event: StoredEvent): void => {
    const lag = request.lagMs();
    if (lag <= 0 && lagged.length === 0) return deliver(event);
    const due = Math.max(Date.now() + lag, lagged.at(-1)?.due ?? 0);
    lagged.push({ due, event });
    if (timers.lag === undefined) timers.lag = setTimeout(drainLagged, Math.max(0, lagged[0]!.due - Date.now()));
  };

  const start = request.start;
  if (start.kind === 'since') {
    const history = store.eventsSince(start.resourceVersion);
    if (history === 'expired') {
      const gone = errors.gone(`too old resource version: ${start.resourceVersion} (${store.oldestResumableResourceVersion()})`);
      write('ERROR', gone.toStatus());
      finish();
      return { close: finish };
    }
    for (const event of history) deliver(event);
  } else if (start.kind === 'initialState') {
    for (const { object } of store.list(request.resourceKey, request.namespace)) {
      if (matches(object)) write('ADDED', request.render(object));
    }
    if (request.initialEventsEndBookmark) bookmark({ 'k8s.io/initial-events-end': 'true' });
  }
  if (closed) return { close: finish }; // the replay itself ended the watch
  // Same tick as the replay above: no write can slip between the replay and the subscription.
  unsubscribe = store.subscribe(deliverLive);

  timers.timeout = setTimeout(finish, request.timeoutSeconds * 1000);
  if (request.allowBookmarks) {
    const tick = (): void => {
      // A bookmark must not announce a resourceVersion past events still held back by a lag.
      if (lagged.length === 0) bookmark();
      timers.bookmark = setTimeout(tick, request.bookmarkIntervalMs);
    };
    timers.bookmark = setTimeout(tick, request.bookmarkIntervalMs);
  }
  return { close: finish };
}

const CRD_KEY = resourceKey(CUSTOM_RESOURCE_DEFINITIONS.group, CUSTOM_RESOURCE_DEFINITIONS.plural);

function crdServes(crd: JsonObject, key: string): boolean {
  const spec = crd['spec'];
  if (!isJsonObject(spec) || !isJsonObject(spec['names'])) return false;
  const plural = spec['names']['plural'];
  const group = spec['group'];
  return typeof plural === 'string' && typeof group === 'string' && resourceKey(group, plural) === key;
}
