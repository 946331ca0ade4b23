// The CLI as a real process: loads a YAML routes file (skipping a bad document), serves xDS on a random
// port, exits cleanly on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { createDiscoveryClient, openAdsSotw } from '../../../common/xds/client';
import { ADS_SERVICE, unpackAny } from '../../../common/xds/protos';
import { LISTENER_TYPE_URL } from '../../../common/xds/type-urls';
import type { DiscoveryRequest, DiscoveryResponse } from '../../../common/xds/types';
import { StreamReader } from './stream-reader';

const ROUTES = `
kind: Endpoints
metadata: {name: app, namespace: default}
subsets: [{addresses: [{ip: 127.0.0.1}], ports: [{port: 8080}]}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: web, namespace: default}
spec:
  virtualhost: {fqdn: cli.example.com}
  routes: [{services: [{name: app, port: 8080}]}]
---
kind: HTTPProxy
metadata: {name: ""}
`;

describe('control-plane CLI', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let client: grpc.Client | undefined;
  let reader: StreamReader<DiscoveryRequest, DiscoveryResponse> | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cp-cli-'));
    writeFileSync(join(dir, 'routes.yaml'), ROUTES);
  });

  afterAll(() => {
    reader?.close();
    client?.close();
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the routes file and exits 0 on SIGTERM', async () => {
    const started = spawn(join(process.cwd(), 'node_modules/.bin/tsx'), ['infra/local/control-plane/main.ts', '--port', '0', '--routes-file', join(dir, 'routes.yaml'), '--version-scheme', 'counter'], {
      cwd: process.cwd(),
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    let output = '';
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line: ${output}`)), 30_000);
      const check = (): void => {
        const match = /"listening":"([^"]+)"/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      started.stdout?.on('data', check);
      started.on('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
    });
    // The bad document was reported and skipped.
    expect(output).toContain('invalid object; skipped');

    client = createDiscoveryClient(ADS_SERVICE, address);
    reader = new StreamReader(openAdsSotw(client));
    reader.call.write({ node: { id: 'cli-test' }, type_url: LISTENER_TYPE_URL });
    const response = await reader.next(20_000);
    expect(response.version_info).toBe('1');
    expect((response.resources ?? []).map((r) => unpackAny(r).name).sort()).toEqual(['cli.example.com', 'ingress_http']);

    const exitCode = new Promise<number | null>((resolve) => started.on('exit', (code) => resolve(code)));
    started.kill('SIGTERM');
    expect(await exitCode).toBe(0);
  });
});
