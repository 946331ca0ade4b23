// The HTTP front every DynamoDB client uses as its endpoint. It forwards each request to dynalite
// unchanged and, for each successful write, records the item's old and new image into the table's
// change log (the local DynamoDB stream). Because every writer, in any process, goes through the
// front, every change is captured exactly once.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { FaultSeam, INTERNAL_ERROR_REPLY, THROTTLE_REPLY, type DynamoErrorReply } from './faults';
import { extractKey, keyId, KeySchemaCache, readImages, type ItemRef, type KeySchema } from './images';
import { KeyLocks } from './key-lock';
import { crc32, TARGET_PREFIX, WireClient, type AttributeMap, type WireResponse } from './wire';
import { planSingleWrite, takeReturnedImage, type SingleWritePlan } from './single-write-images';
import { isCapturedWrite, splitBatchWrite, tableNamesOf, writeTargets, type CapturedWrite } from './write-requests';
import type { TableChangeLog } from './change-log';

// dynalite's own request size limit.
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

export interface FrontOptions {
  host: string;
  port: number;
  dynalite: { host: string; port: number };
  /** The change log of a table (created on first use). */
  changeLogFor: (tableName: string) => TableChangeLog;
  faults: FaultSeam;
  logger: Logger;
}

export interface FrontStats {
  requests: number;
  capturedWrites: number;
  records: number;
  /** Writes applied whose after-image could not be read: their stream records are missing. */
  lostRecords: number;
  /** `records` by the item's `kind` attribute (common/store/items.ts ITEM_KIND; 'unknown' without one). */
  recordsByKind: Record<string, number>;
}

export interface Front {
  endpoint: string;
  port: number;
  stats: FrontStats;
  /** Used by the TTL sweeper: a delete through the same key locks as client writes. */
  deleteExpired(tableName: string, key: AttributeMap, body: unknown): Promise<boolean>;
  close(): Promise<void>;
}

export async function startFront(opts: FrontOptions): Promise<Front> {
  const wire = new WireClient(opts.dynalite.host, opts.dynalite.port);
  const schemas = new KeySchemaCache(wire);
  const locks = new KeyLocks();
  const stats: FrontStats = { requests: 0, capturedWrites: 0, records: 0, lostRecords: 0, recordsByKind: {} };
  const log = opts.logger;

  /** Logs and counts a write applied without one of its images: its stream records are lost. */
  function imagesLost(err: unknown, operation: CapturedWrite, refs: ItemRef[]): void {
    stats.lostRecords += refs.length;
    log.error({ err, operation, items: refs.map((r) => r.id) }, 'write applied but an image around it could not be read; its stream records are lost');
  }

  function appendChange(ref: ItemRef & { schema: KeySchema }, oldImage: AttributeMap | undefined, newImage: AttributeMap | undefined, byTtl: boolean): void {
    const record = opts.changeLogFor(ref.tableName).append({ keys: ref.key, oldImage, newImage, byTtl }, ref.schema.partitionKey);
    if (!record) return;
    stats.records++;
    const kind = (newImage ?? oldImage)?.['kind']?.S ?? 'unknown';
    stats.recordsByKind[kind] = (stats.recordsByKind[kind] ?? 0) + 1;
  }

  /**
   * A single-item write whose reply carries an image (./single-write-images.ts): one dynalite request
   * for a put or a delete, two for an update, instead of three. Called holding the item's lock.
   */
  async function captureSingleWrite(
    operation: CapturedWrite,
    plan: SingleWritePlan,
    ref: ItemRef & { schema: KeySchema },
    send: (body?: Buffer) => Promise<WireResponse>,
  ): Promise<WireResponse> {
    const before = plan.returns === 'ALL_NEW' ? await readImages(wire, schemas, [ref]).catch((err: unknown) => err as Error) : undefined;
    const response = await send(plan.body);
    if (response.status !== 200) return response;
    stats.capturedWrites++;
    const returned = takeReturnedImage(plan, response);
    if (returned === undefined || before instanceof Error) {
      imagesLost(before instanceof Error ? before : new Error('the write\'s reply did not carry its image'), operation, [ref]);
      return returned?.reply ?? response;
    }
    if (plan.returns === 'ALL_NEW') {
      appendChange(ref, before?.get(ref.id), returned.image, false);
      return returned.reply;
    }
    let newImage = plan.knownNewImage?.image;
    if (plan.knownNewImage === undefined) {
      const after = await readImages(wire, schemas, [ref]).catch((err: unknown) => err as Error);
      if (after instanceof Error) {
        imagesLost(after, operation, [ref]);
        return returned.reply;
      }
      newImage = after.get(ref.id);
    }
    appendChange(ref, returned.image, newImage, false);
    return returned.reply;
  }

  /** Forwards a write while holding its items' locks and appends the change records. */
  async function captureWrite(
    operation: CapturedWrite,
    parsedBody: unknown,
    send: (body?: Buffer) => Promise<WireResponse>,
    byTtl = false,
  ): Promise<WireResponse> {
    const targets = writeTargets(operation, parsedBody);
    if (!targets) return send();
    const items = new Map<string, ItemRef & { schema: KeySchema }>();
    for (const target of targets) {
      const schema = await schemas.get(target.tableName);
      const key = schema && extractKey(schema, target.keySource);
      // Unknown table or a key attribute missing: dynalite rejects the request, nothing to capture.
      if (!schema || !key) return send();
      const id = keyId(target.tableName, key);
      items.set(id, { tableName: target.tableName, key, id, schema });
    }
    const refs = [...items.values()];
    const release = await locks.acquireAll(items.keys());
    try {
      // TTL deletions (byTtl) send their own request and read no reply: they keep reading images.
      const plan = refs.length === 1 && !byTtl ? planSingleWrite(operation, parsedBody) : undefined;
      if (plan !== undefined) return await captureSingleWrite(operation, plan, refs[0] as ItemRef & { schema: KeySchema }, send);
      // A key of the wrong type makes this read fail as it will make the write fail: forward anyway,
      // so the client gets dynalite's own ValidationException rather than an error of ours.
      const before = await readImages(wire, schemas, refs).catch((err: unknown) => err as Error);
      const response = await send();
      if (response.status !== 200) return response;
      stats.capturedWrites++;
      let after: Map<string, AttributeMap | undefined> | Error = before;
      if (!(before instanceof Error)) after = await readImages(wire, schemas, refs).catch((err: unknown) => err as Error);
      if (before instanceof Error || after instanceof Error) {
        imagesLost(before instanceof Error ? before : after, operation, refs);
        return response;
      }
      for (const ref of refs) appendChange(ref, before.get(ref.id), after.get(ref.id), byTtl);
      return response;
    } finally {
      release();
    }
  }

  // Every open client connection, so that turning `unreachable` on can reset them all: a kept-alive
  // socket left open would keep answering, which is not what an unreachable endpoint does.
  const sockets = new Set<Socket>();
  /** Resets a connection as an unreachable endpoint does (RST: the client sees ECONNRESET). */
  function reset(socket: Socket): void {
    if (socket.destroyed) return;
    opts.faults.counts.resetConnections++;
    socket.resetAndDestroy();
  }
  const stopResetting = opts.faults.onUnreachableChange((unreachable) => {
    if (!unreachable) return;
    log.warn({ openConnections: sockets.size }, 'DynamoDB front unreachable: resetting every connection');
    for (const socket of [...sockets]) reset(socket);
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    stats.requests++;
    // A request already on its way when the outage began: reset, never answered.
    if (opts.faults.unreachable) return reset(req.socket);
    const body = await readBody(req);
    if (body === undefined) {
      res.writeHead(413).end();
      return;
    }
    const target = req.headers['x-amz-target'];
    const operation = typeof target === 'string' && target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : '';
    let parsedBody: unknown;
    try {
      parsedBody = body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      parsedBody = undefined; // dynalite answers SerializationException itself
    }
    const tableNames = tableNamesOf(parsedBody);
    const isWrite = isCapturedWrite(operation);

    if (opts.faults.latencyMs > 0) await sleep(opts.faults.latencyMs);
    const decision = req.method === 'POST' && operation ? opts.faults.decide({ operation, tableNames }, isWrite) : 'none';
    if (decision === 'unreachable') return reset(req.socket);
    if (decision === 'throttle') return sendError(res, THROTTLE_REPLY);
    if (decision === 'error') return sendError(res, INTERNAL_ERROR_REPLY);

    if (decision === 'unprocessed') {
      const split = splitBatchWrite(parsedBody, () => opts.faults.leaveItemOut());
      if (split && split.processedCount === 0) return sendError(res, THROTTLE_REPLY);
      if (split) {
        const processedBody = Buffer.from(JSON.stringify(split.processed));
        const response = await captureWrite('BatchWriteItem', split.processed, () => wire.forward('POST', req.headers, processedBody));
        return sendReply(res, response, split.unprocessed);
      }
    }

    const send = (forwarded: Buffer = body): Promise<WireResponse> => wire.forward(req.method ?? 'POST', req.headers, forwarded);
    const response = isWrite ? await captureWrite(operation, parsedBody, send) : await send();

    if (operation === 'CreateTable' || operation === 'DeleteTable') {
      for (const name of tableNames) schemas.invalidate(name);
    }
    if (decision === 'errorAfterWrite' && response.status === 200) return sendError(res, INTERNAL_ERROR_REPLY);
    sendReply(res, response, undefined);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err, target: req.headers['x-amz-target'] }, 'front failed to handle a request');
      if (!res.headersSent) sendError(res, INTERNAL_ERROR_REPLY);
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  server.on('connection', (socket: Socket) => {
    if (opts.faults.unreachable) {
      reset(socket);
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    endpoint: `http://${opts.host}:${port}`,
    port,
    stats,
    async deleteExpired(tableName, key, body) {
      const response = await captureWrite('DeleteItem', { TableName: tableName, Key: key }, async () => {
        try {
          await wire.call('DeleteItem', body);
          return { status: 200, headers: {}, body: Buffer.alloc(0) };
        } catch {
          // Conditional check failed: the item was refreshed or removed meanwhile.
          return { status: 400, headers: {}, body: Buffer.alloc(0) };
        }
      }, true);
      return response.status === 200;
    },
    async close() {
      stopResetting();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      wire.close();
    },
  };
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** Relays dynalite's reply; with `unprocessed`, a BatchWriteItem reply gets those UnprocessedItems. */
function sendReply(res: http.ServerResponse, response: WireResponse, unprocessed: Record<string, unknown[]> | undefined): void {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  let body = response.body;
  if (unprocessed && response.status === 200) {
    const output = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    body = Buffer.from(JSON.stringify({ ...output, UnprocessedItems: unprocessed }));
    headers['content-length'] = String(body.length);
    headers['x-amz-crc32'] = String(crc32(body));
  }
  res.writeHead(response.status, headers).end(body);
}

function sendError(res: http.ServerResponse, reply: DynamoErrorReply): void {
  const body = Buffer.from(JSON.stringify(reply.body));
  res
    .writeHead(reply.status, {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(body.length),
      'x-amz-crc32': String(crc32(body)),
      'x-amzn-requestid': `local-${Date.now().toString(36)}`,
    })
    .end(body);
}

function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
