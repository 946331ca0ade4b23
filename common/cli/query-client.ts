// A small typed client of the query function (functions/query.ts). Responses are validated with zod
// (only the fields the CLI uses; the rest passes through), so a server of another version gives a
// clear error, not an undefined in a table. Auth: a bearer token (the local runtime), SigV4 when the
// URL is a Lambda function URL and no token is given (AWS_IAM auth), otherwise none.
import { z } from 'zod';
// untrusted-text directly, not the core's index: the CLI starts in the time kubectl does only if it
// loads what it uses (the index pulls in every schema).
import type { ObjectRef } from '../core/identity';
import { displaySafe } from '../core/untrusted-text';
import { functionUrlRegion } from './function-url';

/**
 * Text an Envoy chose (node id, cluster, NACK message) or that quotes it (a condition's message), as
 * printed on a terminal: control and format characters replaced (common/core untrusted-text.ts), so
 * no Envoy can send escape sequences to the reader's terminal or forge lines of the output.
 */
const shownText = z.string().transform(displaySafe);

export const conditionSchema = z
  .object({
    type: z.string(),
    status: z.enum(['True', 'False', 'Unknown']),
    reason: z.string(),
    message: shownText.default(''),
    observedGeneration: z.number().int().optional(),
    lastTransitionTime: z.string().optional(),
  })
  .passthrough();

const blockerSchema = z.discriminatedUnion('reason', [
  z.object({ nodeId: shownText, reason: z.literal('nacked'), nacks: z.array(z.object({ type: z.string(), message: shownText, seq: z.number().optional(), at: z.number().optional() }).passthrough()) }),
  // Envoys holding the object back only by rejecting other objects' resources (docs/CONVERGENCE.md, "NACK attribution").
  z.object({ nodeId: shownText, reason: z.literal('blocked'), nacks: z.array(z.object({ type: z.string(), message: shownText, objects: z.array(shownText).optional(), resources: z.array(shownText).optional() }).passthrough()) }),
  // `unrequested`: of `types`, those held because the Envoy has not asked for a name its config references.
  z.object({ nodeId: shownText, reason: z.literal('stuck'), types: z.array(z.string()), since: z.number(), unrequested: z.array(z.string()).optional() }),
  z.object({ nodeId: shownText, reason: z.literal('noWatermark'), lineages: z.array(z.string()) }),
  z.object({ nodeId: shownText, reason: z.literal('pending'), types: z.array(z.string()) }),
]);
export type BlockerView = z.infer<typeof blockerSchema>;

export const objectViewSchema = z
  .object({
    object: z.object({ group: z.string(), kind: z.string(), namespace: z.string(), name: z.string() }),
    generation: z.number().int(),
    condition: conditionSchema.nullable(),
    programmedAt: z.number().nullable(),
    notObservable: z.unknown().nullable().optional(),
    live: z.object({
      state: z.string(),
      programmed: z.number().int(),
      total: z.number().int(),
      blockers: z.array(blockerSchema),
      blockersNotListed: z.number().int(),
      fleetTruncated: z.boolean(),
    }),
  })
  .passthrough();
export type ObjectView = z.infer<typeof objectViewSchema>;

const nackSchema = z.object({ seq: z.number(), version: z.string(), message: shownText, at: z.number() }).passthrough();

export const typeReportSchema = z
  .object({
    type: z.string(),
    typeUrl: z.string(),
    status: z.string(),
    acked: z.number().optional(),
    current: z.number().optional(),
    nackMessage: shownText.optional(),
    // Sent against acknowledged, as istioctl proxy-status computes it (functions/query/views.ts);
    // optional so that an older query API still gives a table.
    sync: z.enum(['SYNCED', 'NOT_SENT', 'STALE', 'NACKED']).optional(),
    typeLineage: z.string().optional(),
    sent: z.object({ seq: z.number(), version: z.string(), at: z.number().optional() }).passthrough().nullable().optional(),
    ackedVersion: z.string().nullable().optional(),
    nack: nackSchema.nullable().optional(),
    // SYNCED on the word of the lineage's PROGRESS item (the fleet-size path's states are written on
    // class changes only, so `acked` and `sent` can be older than what the Envoy runs).
    fromProgress: z.literal(true).optional(),
  })
  .passthrough();

export const envoySummarySchema = z
  .object({
    nodeId: shownText,
    cluster: shownText,
    group: shownText,
    status: z.string(),
    live: z.boolean(),
    lineage: z.string(),
    gateway: z.object({ instanceId: z.string(), currentSeq: z.number(), heartbeatAt: z.number() }).passthrough().nullable(),
    programmedThrough: z.number().nullable(),
    /** The lineage's PROGRESS item on this Envoy (fleet-size path; functions/query/views.ts): null or absent when it says nothing. */
    progress: z.object({ lineage: z.string(), v: z.number(), asOf: z.number(), programmedThroughAtLeast: z.number(), listed: z.boolean() }).passthrough().nullable().optional(),
    connectedAt: z.number().optional(),
    lastSeenAt: z.number(),
    types: z.array(typeReportSchema),
  })
  .passthrough();
export type EnvoySummary = z.infer<typeof envoySummarySchema>;

const eventSchema = z.object({ outcome: z.string(), type: z.string(), lineage: z.string(), seq: z.number(), at: z.number(), message: shownText.optional() }).passthrough();

export const envoyDetailSchema = envoySummarySchema
  .extend({
    types: z.array(typeReportSchema.extend({ lastNack: nackSchema.extend({ cleared: z.boolean() }).nullable().optional() })),
    recentEvents: z.array(eventSchema),
  })
  .passthrough();
export type EnvoyDetail = z.infer<typeof envoyDetailSchema>;

const envoyPageSchema = z.object({ envoys: z.array(envoySummarySchema), corrupt: z.number().int(), nextCursor: z.string().nullable() });

const problemSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/** The query API answered with an error status (4xx/5xx), or could not be reached. */
export class QueryApiError extends Error {
  constructor(
    readonly status: number | undefined,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'QueryApiError';
  }
}

export interface QueryClientOptions {
  url: string;
  token?: string;
  /** Per-request timeout. */
  timeoutMs?: number;
}

/** `_` stands for the empty core group and the empty namespace (cluster-scoped kinds). */
function pathSegment(value: string): string {
  return value === '' ? '_' : encodeURIComponent(value);
}

export class QueryClient {
  private readonly base: URL;
  private readonly region: string | undefined;

  constructor(private readonly options: QueryClientOptions) {
    this.base = new URL(options.url);
    this.region = options.token === undefined ? functionUrlRegion(this.base) : undefined;
  }

  /** How requests are authenticated (for messages). */
  get auth(): 'bearer' | 'sigv4' | 'none' {
    return this.options.token !== undefined ? 'bearer' : this.region !== undefined ? 'sigv4' : 'none';
  }

  private async get<T>(path: string, query: Record<string, string | undefined>, schema: z.ZodType<T>): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.base.href.endsWith('/') ? this.base.href : `${this.base.href}/`);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, value);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token !== undefined) headers['authorization'] = `Bearer ${this.options.token}`;
    // The AWS credential chain is loaded only to sign (it is most of the CLI's code by weight).
    else if (this.region !== undefined) Object.assign(headers, await (await import('./sigv4')).signedHeaders(url, this.region));
    let response: Response;
    try {
      response = await fetch(url, { headers, signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000) });
    } catch (error) {
      throw new QueryApiError(undefined, 'Unreachable', `cannot reach the query API at ${this.base.origin}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new QueryApiError(response.status, 'NotJson', `the query API answered HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    if (!response.ok) {
      const problem = problemSchema.safeParse(body);
      // A function URL with IAM auth answers 403 {"Message":"Forbidden"} to unsigned or unauthorised callers.
      if (problem.success) throw new QueryApiError(response.status, problem.data.error.code, problem.data.error.message);
      throw new QueryApiError(response.status, `Http${response.status}`, `the query API answered HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new QueryApiError(response.status, 'UnexpectedResponse', `unexpected answer from ${url.pathname}: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    return parsed.data;
  }

  /** The object at `generation` (default: the latest one a gateway has seen). 404 → undefined. */
  async object(ref: ObjectRef, generation?: number): Promise<ObjectView | undefined> {
    try {
      return await this.get(
        `/objects/${pathSegment(ref.group)}/${encodeURIComponent(ref.kind)}/${pathSegment(ref.namespace)}/${encodeURIComponent(ref.name)}`,
        { generation: generation === undefined ? undefined : String(generation) },
        objectViewSchema,
      );
    } catch (error) {
      if (error instanceof QueryApiError && error.status === 404 && error.code === 'ObjectNotFound') return undefined;
      throw error;
    }
  }

  /** Every Envoy (all pages). */
  async envoys(options: { group?: string; pageSize?: number } = {}): Promise<{ envoys: EnvoySummary[]; corrupt: number }> {
    const envoys: EnvoySummary[] = [];
    let corrupt = 0;
    let cursor: string | undefined;
    do {
      const page = await this.get('/envoys', { limit: String(options.pageSize ?? 500), cursor, group: options.group }, envoyPageSchema);
      envoys.push(...page.envoys);
      corrupt += page.corrupt;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return { envoys, corrupt };
  }

  /** One Envoy with per-type sent/ACKed/NACKed versions and its recent events. 404 → undefined. */
  async envoy(nodeId: string, events?: number): Promise<EnvoyDetail | undefined> {
    try {
      return await this.get(`/envoys/${encodeURIComponent(nodeId)}`, { events: events === undefined ? undefined : String(events) }, envoyDetailSchema);
    } catch (error) {
      if (error instanceof QueryApiError && error.status === 404 && error.code === 'EnvoyNotFound') return undefined;
      throw error;
    }
  }

  async healthz(): Promise<boolean> {
    const body = await this.get('/healthz', {}, z.object({ ok: z.boolean() }));
    return body.ok;
  }
}
