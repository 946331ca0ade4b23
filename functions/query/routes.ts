// Routing and input validation of the query function. Paths (GET only):
//   /healthz
//   /envoys?limit=&cursor=&group=
//   /envoys/{nodeId}?events=                      (nodeId URL-encoded; events: 0-100 recent events, default 20)
//   /objects/{group}/{kind}/{namespace}/{name}?generation=
// `_` stands for the empty core group and for the empty namespace of cluster-scoped kinds.
import { z } from 'zod';

import { firstUnsafeCharacter, MAX_NODE_ID_LENGTH, validateObjectRef, type ObjectRef } from '../../common/core';
import { HttpError } from './http';
import { MAX_RECENT_EVENTS, RECENT_EVENTS } from './views';

export type Route =
  | { name: 'healthz' }
  | { name: 'envoys'; limit: number; cursor?: string; group?: string }
  | { name: 'envoy'; nodeId: string; events: number }
  | { name: 'object'; ref: ObjectRef; generation?: number };

const fleetQuerySchema = z
  .object({
    limit: z.coerce.number().int('limit must be an integer').min(1, 'limit must be at least 1').max(1000, 'limit must be at most 1000').default(100),
    cursor: z.string().min(1).max(4096).optional(),
    group: z.string().min(1).max(1024).optional(),
  })
  .strict();

const envoyQuerySchema = z
  .object({
    events: z
      .string()
      .regex(/^(0|[1-9][0-9]{0,5})$/, 'events must be a whole number')
      .transform(Number)
      .refine((n) => n <= MAX_RECENT_EVENTS, `events must be at most ${MAX_RECENT_EVENTS}`)
      .optional(),
  })
  .strict();

const objectQuerySchema = z
  .object({ generation: z.string().regex(/^[1-9][0-9]{0,15}$/, 'generation must be a positive integer').transform(Number).optional() })
  .strict();

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'BadPath', `path segment ${JSON.stringify(raw.slice(0, 100))} is not valid percent-encoding`);
  }
}

function parseQuery<T>(schema: z.ZodType<T>, query: Record<string, string | undefined>): T {
  const parsed = schema.safeParse(query);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message = issue?.code === 'unrecognized_keys' ? `unknown query parameter(s): ${issue.keys.join(', ')}` : `${issue?.path.join('.') ?? 'query'}: ${issue?.message ?? 'invalid'}`;
    throw new HttpError(400, 'BadQuery', message);
  }
  return parsed.data;
}

/** The route for a GET of `path` with `query`; HttpError 404 when no route matches, 400 on bad input. */
export function route(path: string, query: Record<string, string | undefined>): Route {
  const parts = path.replace(/\/+$/, '').split('/').slice(1);
  const [head, ...rest] = parts;
  if (head === 'healthz' && rest.length === 0) return { name: 'healthz' };
  if (head === 'envoys' && rest.length === 0) {
    const parsed = parseQuery(fleetQuerySchema, query);
    return { name: 'envoys', limit: parsed.limit, ...(parsed.cursor === undefined ? {} : { cursor: parsed.cursor }), ...(parsed.group === undefined ? {} : { group: parsed.group }) };
  }
  if (head === 'envoys' && rest.length === 1) {
    const nodeId = segment(rest[0] as string);
    if (nodeId.length === 0 || nodeId.length > MAX_NODE_ID_LENGTH) throw new HttpError(400, 'BadNodeId', `node id must be 1-${MAX_NODE_ID_LENGTH} characters`);
    // The gateway refuses such node ids at its edge (common/core node-limits.ts), so none is stored:
    // say which character is wrong rather than answer "no such Envoy".
    const unsafe = firstUnsafeCharacter(nodeId);
    if (unsafe !== undefined) throw new HttpError(400, 'BadNodeId', `node id has the control or format character ${unsafe.codePoint} at index ${unsafe.index}; node ids never contain one`);
    const parsed = parseQuery(envoyQuerySchema, query);
    return { name: 'envoy', nodeId, events: parsed.events ?? RECENT_EVENTS };
  }
  if (head === 'objects') {
    if (rest.length !== 4) throw new HttpError(400, 'BadObjectPath', 'object paths are /objects/{group}/{kind}/{namespace}/{name}; use _ for the core group or no namespace');
    const [group, kind, namespace, name] = rest.map(segment).map((part) => (part === '_' ? '' : part)) as [string, string, string, string];
    const ref = { group, kind, namespace, name };
    const invalid = validateObjectRef(ref);
    // The core's message quotes the offending part whole; caller input is echoed bounded.
    if (invalid !== undefined) throw new HttpError(400, 'BadObjectRef', invalid.length > 300 ? `${invalid.slice(0, 300)}…` : invalid);
    const parsed = parseQuery(objectQuerySchema, query);
    return { name: 'object', ref, ...(parsed.generation === undefined ? {} : { generation: parsed.generation }) };
  }
  throw new HttpError(404, 'NoSuchRoute', `no route for ${JSON.stringify(path.slice(0, 200))}; try /envoys, /envoys/{nodeId}, /objects/{group}/{kind}/{namespace}/{name} or /healthz`);
}
