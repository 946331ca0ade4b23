// Shared test plumbing: an in-process server on a random port, a private HOME per kubectl
// user (kubectl caches discovery and OpenAPI under $HOME/.kube/cache), and raw HTTP helpers.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startKubeApiServer, type KubeApiServer, type KubeApiServerOptions } from '../../../infra/local/kube/server';

export const silentLogger = pino({ level: 'silent' });

export interface TestServer {
  server: KubeApiServer;
  dir: string;
  kubeconfig: string;
  cleanup(): Promise<void>;
}

export async function startTestServer(options: KubeApiServerOptions = {}): Promise<TestServer> {
  const server = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: silentLogger, ...options });
  const dir = mkdtempSync(join(tmpdir(), 'kube-test-'));
  const kubeconfig = server.kubeconfigPath(dir);
  return {
    server,
    dir,
    kubeconfig,
    cleanup: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real kubectl asynchronously (the server lives in this process: never block it). */
export function kubectl(test: TestServer, args: string[], input?: string, timeoutMs = 30_000): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(
      '/usr/bin/kubectl',
      ['--kubeconfig', test.kubeconfig, ...args],
      { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: join(test.dir, 'home') }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  });
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function request(test: TestServer, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<RawResponse> {
  const init: RequestInit = { method, headers: { 'Content-Type': contentType } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(`${test.server.url}${path}`, init);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wd'] },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string', enum: ['red', 'blue'] } } },
              status: {
                type: 'object',
                properties: {
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['type', 'status'],
                      properties: {
                        type: { type: 'string' },
                        status: { type: 'string' },
                        observedGeneration: { type: 'integer' },
                        reason: { type: 'string' },
                        message: { type: 'string' },
                        lastTransitionTime: { type: 'string' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

export function widget(name: string, spec: Record<string, unknown>, namespace = 'default'): Record<string, unknown> {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace }, spec };
}

export interface StatusBody {
  kind: string;
  code: number;
  reason: string;
  message: string;
}

export function asStatus(body: unknown): StatusBody {
  return body as StatusBody;
}

/** metadata of an object returned as JSON. */
export function meta(body: unknown): { name: string; generation?: number; resourceVersion: string; uid: string; [k: string]: unknown } {
  return (body as { metadata: { name: string; resourceVersion: string; uid: string } }).metadata;
}

export interface WatchEvent {
  type: string;
  object: { kind?: string; code?: number; reason?: string; metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> }; [k: string]: unknown };
}

export interface OpenWatch {
  events: WatchEvent[];
  status: number;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  waitForEvents(count: number, timeoutMs?: number): Promise<WatchEvent[]>;
  close(): void;
}

/** Opens a watch with plain HTTP and parses the newline-delimited JSON events. */
export function openWatch(test: TestServer, path: string): Promise<OpenWatch> {
  return new Promise((resolve, reject) => {
    const events: WatchEvent[] = [];
    const controller = new AbortController();
    fetch(`${test.server.url}${path}`, { signal: controller.signal })
      .then((response) => {
        const reader = response.body?.getReader();
        if (!reader) throw new Error('no body');
        let buffered = '';
        const decoder = new TextDecoder();
        const ended = (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              buffered += decoder.decode(value, { stream: true });
              let newline = buffered.indexOf('\n');
              while (newline >= 0) {
                const line = buffered.slice(0, newline);
                buffered = buffered.slice(newline + 1);
                if (line.trim() !== '') events.push(JSON.parse(line) as WatchEvent);
                newline = buffered.indexOf('\n');
              }
            }
          } catch {
            // aborted by close()
          }
        })();
        resolve({
          events,
          status: response.status,
          ended,
          close: () => controller.abort(),
          waitForEvents: (count, timeoutMs = 10_000) =>
            new Promise((done, fail) => {
              const started = Date.now();
              const poll = (): void => {
                if (events.length >= count) done(events.slice(0, count));
                else if (Date.now() - started > timeoutMs) fail(new Error(`expected ${count} watch events, got ${JSON.stringify(events)}`));
                else setTimeout(poll, 10);
              };
              poll();
            }),
        });
      })
      .catch(reject);
  });
}
