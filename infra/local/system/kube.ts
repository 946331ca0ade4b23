// The local Kubernetes API server with the HTTPProxy CRD installed, and a kubeconfig on disk for
// kubectl and every in-process client. Readiness: the CRD's resource is served (discovery lists it).
// For an unmodified Contour (`--control-plane contour`) it also serves the built-in kinds Contour
// reads and writes (Services, EndpointSlices, Secrets, Events…) and takes Contour's own CRDs, whose
// HTTPProxy schema replaces the project's (docs/CONTOUR.md).
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { HTTPPROXY_CRD } from '../control-plane/httpproxy-crd';
import { HTTPROUTE_CRD } from '../control-plane/httproute-crd';
import { writeKubeconfig } from '../kube/kubeconfig';
import { startKubeApiServer, type KubeApiServer } from '../kube/server';
import type { Component } from './component';

/** Where the API server is, for HTTP, kubectl and in-process clients, wherever it runs. */
export interface KubeEndpointsComponent extends Component {
  url: string;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
}

export interface KubeComponent extends KubeEndpointsComponent {
  server: KubeApiServer;
}

async function installCrd(url: string, crd: object): Promise<void> {
  const response = await fetch(`${url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(crd),
  });
  const name = (crd as { metadata?: { name?: string } }).metadata?.name ?? 'a';
  // 409: already there (a state file from an earlier run); anything else is a real failure.
  if (response.status !== 201 && response.status !== 409) throw new Error(`installing the ${name} CRD failed: HTTP ${response.status} ${await response.text()}`);
}

async function waitServed(url: string, path: string, plural: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${url}${path}`);
    if (response.ok) {
      const body = (await response.json()) as { resources?: Array<{ name?: string }> };
      if (body.resources?.some((resource) => resource.name === plural)) return;
    }
    if (Date.now() > deadline) throw new Error(`${plural} not served by the local API server after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface KubeComponentOptions {
  port: number;
  stateDir: string;
  logger: Logger;
  /** Serve the built-in kinds an unmodified ingress controller needs (KubeApiServerOptions). */
  ingressControllerKinds?: boolean;
  /** CRDs to install; default the project's HTTPProxy CRD. One of them must define `httpproxies`. */
  crds?: readonly object[];
}

export async function startKubeComponent(opts: KubeComponentOptions): Promise<KubeComponent> {
  const server = await startKubeApiServer({
    port: opts.port,
    host: '127.0.0.1',
    logger: opts.logger.child({ component: 'kube' }),
    ...(opts.ingressControllerKinds === true ? { ingressControllerKinds: true } : {}),
  });
  try {
    // The reference control plane serves HTTPProxy and HTTPRoute; it looks for their CRDs at start.
    for (const crd of opts.crds ?? [HTTPPROXY_CRD, HTTPROUTE_CRD]) await installCrd(server.url, crd);
    await waitServed(server.url, '/apis/projectcontour.io/v1', 'httpproxies', 10_000);
  } catch (error) {
    await server.close();
    throw error;
  }
  const kubeconfigPath = writeKubeconfig(opts.stateDir, server.url);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  return { name: 'kubernetes', server, url: server.url, kubeconfigPath, kubeConfig, close: () => server.close() };
}
