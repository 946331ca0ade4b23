// An audit log for the local Kubernetes API server: a pass-through HTTP proxy that records every
// request as Kubernetes authorization sees it — (verb, API group, resource[/subresource], name) —
// so a test can compare what our code really asks for with what our RBAC grants. The verb mapping
// is the API server's (k8s.io/apiserver RequestInfo): GET on a collection is `list`, with
// `watch=true` it is `watch`, GET on a named object `get`, PATCH `patch`, PUT `update`, POST
// `create`, DELETE `delete` (or `deletecollection` on a collection).
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { KubeConfig } from '@kubernetes/client-node';

export interface AuditRecord {
  verb: string;
  group: string;
  /** `plural` or `plural/subresource`. */
  resource: string;
  namespace?: string;
  name?: string;
}

export interface NonResourceRecord {
  verb: string;
  path: string;
}

/** The authorization attributes of one request (non-resource URLs like /api, /version: `path`). */
export function requestAttributes(method: string, target: string): AuditRecord | NonResourceRecord {
  const url = new URL(target, 'http://audit.local');
  const parts = url.pathname.split('/').filter((part) => part.length > 0);
  let rest: string[];
  let group: string;
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1] as string;
    rest = parts.slice(3);
  } else {
    return { verb: method.toLowerCase(), path: url.pathname };
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, subresource] = rest as [string, string | undefined, string | undefined];
  const watch = url.searchParams.get('watch');
  const isWatch = watch === 'true' || watch === '1';
  const verb = (() => {
    switch (method) {
      case 'GET':
      case 'HEAD':
        return isWatch ? 'watch' : name === undefined ? 'list' : 'get';
      case 'POST':
        return 'create';
      case 'PUT':
        return 'update';
      case 'PATCH':
        return 'patch';
      case 'DELETE':
        return name === undefined ? 'deletecollection' : 'delete';
      default:
        return method.toLowerCase();
    }
  })();
  return {
    verb,
    group,
    resource: subresource === undefined ? plural : `${plural}/${subresource}`,
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
  };
}

export interface AuditProxy {
  url: string;
  records: AuditRecord[];
  nonResource: NonResourceRecord[];
  /** A kubeconfig (client-node) whose cluster is this proxy. */
  kubeConfig(): KubeConfig;
  close(): Promise<void>;
}

/** Starts the recording proxy on 127.0.0.1 (random port) in front of `upstream` (http://host:port). */
export async function startAuditProxy(upstream: string): Promise<AuditProxy> {
  const target = new URL(upstream);
  const records: AuditRecord[] = [];
  const nonResource: NonResourceRecord[] = [];
  const server: Server = createServer((req, res) => {
    const attributes = requestAttributes(req.method ?? 'GET', req.url ?? '/');
    if ('path' in attributes) nonResource.push(attributes);
    else records.push(attributes);
    const forward = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (upstreamResponse) => {
        res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        res.flushHeaders();
        upstreamResponse.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    records,
    nonResource,
    kubeConfig() {
      const config = new KubeConfig();
      config.loadFromOptions({
        clusters: [{ name: 'audit', server: url, skipTLSVerify: true }],
        users: [{ name: 'audit', token: 'audit' }],
        contexts: [{ name: 'audit', cluster: 'audit', user: 'audit' }],
        currentContext: 'audit',
      });
      return config;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
