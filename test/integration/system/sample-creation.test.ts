// Creating the samples survives the API server dropping a connection under a request (the keep-alive
// race: the request is lost before the server reads it), and says which object failed when it never
// gets through. A real HTTP server stands in for the API server's create endpoint.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applySamples, CREATE_ATTEMPTS } from '../../../infra/local/system/samples';

/** A server that drops the connection of the first `drops` requests unanswered, then answers 201 (or 409 for a name seen before). */
async function flakyServer(drops: number): Promise<{ url: string; created: string[]; dropped: () => number; close: () => Promise<void> }> {
  const created: string[] = [];
  let dropped = 0;
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      if (dropped < drops) {
        dropped++;
        request.socket.destroy();
        return;
      }
      const name = (JSON.parse(body) as { metadata: { name: string } }).metadata.name;
      const seen = created.includes(name);
      if (!seen) created.push(name);
      response.writeHead(seen ? 409 : 201, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    created,
    dropped: () => dropped,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('applySamples', () => {
  it('sends a create again when the connection was dropped under it, and creates every sample once', async () => {
    const server = await flakyServer(3);
    try {
      const names = await applySamples(server.url, 4);
      expect(names).toEqual(['sample-0', 'sample-1', 'sample-2', 'sample-3']);
      expect(server.dropped()).toBe(3);
      expect([...server.created].sort()).toEqual(names);
    } finally {
      await server.close();
    }
  });

  it('gives up after CREATE_ATTEMPTS dropped connections, naming the request', async () => {
    const server = await flakyServer(Number.POSITIVE_INFINITY);
    try {
      await expect(applySamples(server.url, 1)).rejects.toThrow(`POST /apis/projectcontour.io/v1/namespaces/default/httpproxies failed after ${CREATE_ATTEMPTS} attempts`);
      expect(server.dropped()).toBe(CREATE_ATTEMPTS);
    } finally {
      await server.close();
    }
  });
});
