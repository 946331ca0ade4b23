// The DynamoDB JSON 1.0 wire protocol as the front speaks it to dynalite: one POST per operation,
// `X-Amz-Target: DynamoDB_20120810.<Op>`, a JSON body, errors as `{__type, message}`.
import http from 'node:http';
import { z } from 'zod';
import type { AttributeValue } from 'aws-lambda';

export type AttributeMap = Record<string, AttributeValue>;

export const TARGET_PREFIX = 'DynamoDB_20120810.';

// An attribute map as it travels on the wire. Values are checked to be objects with one type tag;
// dynalite validates them fully, the front only needs to copy them around.
const attributeValueShape = z.record(z.string(), z.unknown()).refine((v) => Object.keys(v).length === 1, {
  message: 'an AttributeValue has exactly one type tag',
});
export const attributeMapSchema = z
  .record(z.string(), attributeValueShape)
  .transform((m) => m as unknown as AttributeMap);

export interface WireResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Operations the front calls internally that change nothing, so sending one again is safe. */
const READ_OPERATIONS = new Set(['GetItem', 'BatchGetItem', 'DescribeTable', 'ListTables', 'Scan', 'Query']);

/** The error of a request written on a socket the server had just closed (ECONNRESET, EPIPE). */
export function isStaleSocketError(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? (error as { code: unknown }).code : undefined;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/** Raw HTTP call to a DynamoDB-compatible endpoint (dynalite), keeping the connection alive. */
export class WireClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Forwards a request as received (headers and body untouched, so the reply is dynalite's own). */
  forward(method: string, headers: http.IncomingHttpHeaders, body: Buffer): Promise<WireResponse> {
    const forwarded: http.OutgoingHttpHeaders = { ...headers };
    forwarded['content-length'] = String(body.length);
    delete forwarded['transfer-encoding'];
    delete forwarded['connection'];
    return this.send(forwarded, body, method);
  }

  /**
   * An internal call made by the front itself (image reads, key schema look-ups). dynalite checks that a
   * SigV4 Authorization header is present and well-formed but does not verify the signature.
   */
  async call(operation: string, input: unknown): Promise<unknown> {
    const body = Buffer.from(JSON.stringify(input));
    const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    const response = await this.sendRetryingReads(
      operation,
      {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': String(body.length),
        'x-amz-target': TARGET_PREFIX + operation,
        'x-amz-date': amzDate,
        authorization: `AWS4-HMAC-SHA256 Credential=local/${amzDate.slice(0, 8)}/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0`,
      },
      body,
    );
    const text = response.body.toString('utf8');
    if (response.status !== 200) {
      throw new Error(`internal ${operation} failed with ${response.status}: ${text}`);
    }
    return JSON.parse(text) as unknown;
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * A kept-alive socket can be closed by the server just as a request is written on it (Node's
   * keep-alive race: "socket hang up", ECONNRESET). A read lost that way would cost the front a stream
   * record (its image read after a write), so reads are sent again, a few times; a write is not (it may
   * have been applied), its error goes to the caller.
   */
  private async sendRetryingReads(operation: string, headers: http.OutgoingHttpHeaders, body: Buffer): Promise<WireResponse> {
    const attempts = READ_OPERATIONS.has(operation) ? 3 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.send(headers, body);
      } catch (error) {
        if (attempt >= attempts || !isStaleSocketError(error)) throw error;
      }
    }
  }

  private send(headers: http.OutgoingHttpHeaders, body: Buffer, method = 'POST'): Promise<WireResponse> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: this.host, port: this.port, method, path: '/', headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

// CRC32 (IEEE) of the response body: DynamoDB sends it in `x-amz-crc32` and some SDKs check it.
const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (crcTable[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
