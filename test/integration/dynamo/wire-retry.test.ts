// The front's internal calls to dynalite (infra/local/dynamo/wire.ts): a read whose kept-alive socket is
// closed under it (Node's keep-alive race, seen in an e2e run as "socket hang up" on the image read after
// a write, which cost the front 4 stream records) is sent again; a write is not, its error reaches the
// caller. A real HTTP server that resets the first N requests' sockets stands in for that race.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WireClient } from '../../../infra/local/dynamo/wire';

interface ResettingServer {
  port: number;
  /** Requests seen, by X-Amz-Target operation. */
  seen: string[];
  resetNext(count: number): void;
  close(): Promise<void>;
}

async function startResettingServer(): Promise<ResettingServer> {
  const seen: string[] = [];
  let resets = 0;
  const server = http.createServer((req, res) => {
    seen.push(String(req.headers['x-amz-target'] ?? '').replace('DynamoDB_20120810.', ''));
    req.resume();
    req.on('end', () => {
      if (resets > 0) {
        resets--;
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ Item: { pk: { S: 'a' } } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    resetNext: (count) => {
      resets = count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('WireClient: reads survive a reset socket, writes do not repeat', () => {
  let server: ResettingServer;
  let wire: WireClient;

  beforeAll(async () => {
    server = await startResettingServer();
    wire = new WireClient('127.0.0.1', server.port);
  });

  afterAll(async () => {
    wire.close();
    await server.close();
  });

  it('sends a read again after a reset and returns its answer', async () => {
    server.seen.length = 0;
    server.resetNext(2);
    await expect(wire.call('GetItem', { TableName: 't', Key: { pk: { S: 'a' } } })).resolves.toEqual({ Item: { pk: { S: 'a' } } });
    expect(server.seen).toEqual(['GetItem', 'GetItem', 'GetItem']);
  });

  it('gives up on a read after three resets, with the socket error', async () => {
    server.seen.length = 0;
    server.resetNext(3);
    await expect(wire.call('BatchGetItem', { RequestItems: {} })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(server.seen).toHaveLength(3);
  });

  it('sends a write once: it may have been applied', async () => {
    server.seen.length = 0;
    server.resetNext(1);
    await expect(wire.call('DeleteItem', { TableName: 't', Key: { pk: { S: 'a' } } })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(server.seen).toEqual(['DeleteItem']);
  });
});
