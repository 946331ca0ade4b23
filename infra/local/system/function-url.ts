// A Lambda function URL on localhost: each HTTP request becomes the APIGatewayProxyEventV2 (payload
// format 2.0) a function URL delivers, and the handler's result becomes the HTTP response, with the
// function URL rules for results (a result without `statusCode` is a 200 JSON body).
// On AWS the URL uses AWS_IAM auth (SigV4); here every request must carry the bearer token printed at
// startup, so another local user or a web page cannot read the table through it.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Logger } from 'pino';

export type FunctionUrlHandler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2 | string | object>;

export interface FunctionUrlServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Function URLs take request bodies up to 6 MB. */
const MAX_BODY_BYTES = 6 * 1024 * 1024;

function tokenMatches(header: string | undefined, token: string): boolean {
  if (header === undefined) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (match?.[1] === undefined) return false;
  const given = Buffer.from(match[1]);
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Builds the event a function URL would deliver for this request (payload format version 2.0). */
export function toFunctionUrlEvent(request: { method: string; url: string; headers: IncomingMessage['headers']; body: Buffer; sourceIp: string; now: Date; requestId: string; domainName: string }): APIGatewayProxyEventV2 {
  const parsed = new URL(request.url, 'http://localhost');
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    // Function URLs lower-case header names and join repeated headers with commas; cookies get their own list.
    if (name === 'cookie') cookies.push(...(Array.isArray(value) ? value : [value]).flatMap((v) => v.split(/;\s*/)));
    else headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [key, value] of parsed.searchParams) query[key] = key in query ? `${query[key]},${value}` : value;
  const isText = request.body.length === 0 || /^(application\/(json|x-www-form-urlencoded)|text\/)/.test(headers['content-type'] ?? '');
  const epoch = request.now.getTime();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: parsed.pathname,
    rawQueryString: parsed.search.startsWith('?') ? parsed.search.slice(1) : parsed.search,
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: request.domainName,
      domainPrefix: request.domainName.split('.')[0] ?? 'local',
      http: { method: request.method, path: parsed.pathname, protocol: 'HTTP/1.1', sourceIp: request.sourceIp, userAgent: headers['user-agent'] ?? '' },
      requestId: request.requestId,
      routeKey: '$default',
      stage: '$default',
      time: request.now.toISOString(),
      timeEpoch: epoch,
    },
    ...(request.body.length > 0 ? { body: isText ? request.body.toString('utf8') : request.body.toString('base64') } : {}),
    isBase64Encoded: !isText,
  };
}

function isStructured(result: unknown): result is APIGatewayProxyStructuredResultV2 {
  return typeof result === 'object' && result !== null && 'statusCode' in result;
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer): void {
  res.writeHead(status, headers);
  res.end(body);
}

function sendProblem(res: ServerResponse, status: number, code: string, message: string, extra: Record<string, string> = {}): void {
  send(res, status, { 'content-type': 'application/json; charset=utf-8', ...extra }, JSON.stringify({ error: { code, message } }));
}

export async function startFunctionUrl(opts: { handler: FunctionUrlHandler; token: string; port: number; logger: Logger }): Promise<FunctionUrlServer> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', (error) => opts.logger.warn({ err: error }, 'function URL: request stream failed'));
    req.on('end', () => {
      void (async () => {
        const requestId = randomUUID();
        if (!tokenMatches(req.headers.authorization, opts.token)) {
          sendProblem(res, 401, 'Unauthorized', 'send the token printed by npm start as "Authorization: Bearer <token>"', { 'www-authenticate': 'Bearer' });
          return;
        }
        if (tooLarge) {
          sendProblem(res, 413, 'PayloadTooLarge', `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
          return;
        }
        const event = toFunctionUrlEvent({
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks),
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          now: new Date(),
          requestId,
          domainName: req.headers.host ?? 'localhost',
        });
        try {
          const result = await opts.handler(event);
          if (isStructured(result)) {
            const headers: Record<string, string> = { 'x-amzn-requestid': requestId };
            for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
            const body = result.body ?? '';
            const setCookies = result.cookies ?? [];
            if (setCookies.length > 0) res.setHeader('set-cookie', setCookies);
            send(res, result.statusCode ?? 200, headers, result.isBase64Encoded === true ? Buffer.from(body, 'base64') : body);
          } else {
            // Function URL rule: anything else is serialised as a 200 application/json body.
            send(res, 200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId }, typeof result === 'string' ? result : JSON.stringify(result));
          }
        } catch (error) {
          opts.logger.error({ err: error, requestId, path: event.rawPath }, 'function URL: handler failed');
          sendProblem(res, 502, 'FunctionError', `the function failed (request ${requestId})`, { 'x-amzn-requestid': requestId });
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
