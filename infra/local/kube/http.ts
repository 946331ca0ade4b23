// Request body reading and JSON/Status responses.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { ApiError, errors } from './errors';
import type { Json, JsonObject } from './json';

/** `pretty` indents as kube-apiserver's pretty JSON serializer does (two spaces). */
export function sendJson(res: ServerResponse, code: number, body: Json, warnings: string[] = [], pretty = false): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = pretty ? JSON.stringify(body, null, 2) : JSON.stringify(body);
  const headers: Record<string, string | string[]> = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-cache, private',
  };
  // RFC 7234 warn-code 299 ("Miscellaneous persistent warning"), as the apiserver sends them.
  if (warnings.length > 0) headers['Warning'] = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, headers);
  res.end(text);
}

export function sendError(res: ServerResponse, error: ApiError): void {
  sendJson(res, error.code, error.toStatus());
}

/** Reads the body up to `limitBytes`; a larger body is a 413 (the rest is drained, not buffered). */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (Number.isFinite(declared) && declared > limitBytes) {
      req.resume();
      reject(errors.tooLarge(limitBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => (tooLarge ? reject(errors.tooLarge(limitBytes)) : resolve(Buffer.concat(chunks))));
    req.on('error', (error) => reject(errors.badRequest(`error reading the request body: ${error.message}`)));
  });
}

export function mediaTypeOf(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

export function parseJsonBody(body: Buffer): Json {
  try {
    return JSON.parse(body.toString('utf8')) as Json;
  } catch (error) {
    throw errors.badRequest(`the request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function requireJsonObject(value: Json, what: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw errors.badRequest(`${what} must be a JSON object`);
  return value;
}

/** One YAML document (the apiserver accepts application/yaml for create and update). */
export function parseYamlBody(body: Buffer): Json {
  try {
    // JSON-compatible schema: no YAML 1.1 surprises (yes/no booleans), like sigs.k8s.io/yaml.
    return parseYaml(body.toString('utf8'), { schema: 'core', maxAliasCount: 100 }) as Json;
  } catch (error) {
    throw errors.badRequest(`the request body is not valid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
}
