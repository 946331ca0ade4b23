// Sample HTTPProxy objects applied at start: sample-<i> routes `sample-<i>.local` to service app-<i>,
// each service its own cluster (so one object's cluster can be singled out, e.g. for NACK demos).
import { describeError } from '../../../common/describe-error';
import { forEachConcurrently, forEachIndexConcurrently } from '../../../common/worker-pool';
import { isStaleSocketError } from '../dynamo/wire';

export const SAMPLE_NAMESPACE = 'default';
export const SAMPLE_SERVICE_PORT = 8080;
export const HTTPPROXY_API_PATH = '/apis/projectcontour.io/v1';

export function sampleName(index: number): string {
  return `sample-${index}`;
}

export function sampleFqdn(index: number): string {
  return `${sampleName(index)}.local`;
}

export function sampleService(index: number): string {
  return `app-${index}`;
}

/**
 * A second service per sample, with Endpoints too, so a demo (or test) can move a route to it: the
 * change shows up as a new cluster name, which an Envoy's ground truth can be checked for.
 */
export function sampleCanaryService(index: number): string {
  return `app-${index}-canary`;
}

/**
 * Prefix of the cluster built for sample `index`: the reference control plane names it
 * `ns/service/port`, Contour `ns/service/port/<hash>`; both start with this.
 */
export function sampleClusterPrefix(index: number): string {
  return `${SAMPLE_NAMESPACE}/${sampleService(index)}/`;
}

export function sampleProxy(index: number): Record<string, unknown> {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name: sampleName(index), namespace: SAMPLE_NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'xds-programmed-sample' } },
    spec: {
      virtualhost: { fqdn: sampleFqdn(index) },
      routes: [{ conditions: [{ prefix: '/' }], services: [{ name: sampleService(index), port: SAMPLE_SERVICE_PORT }] }],
    },
  };
}

/** Creations in flight at once: thousands of samples start in seconds without flooding the API server. */
export const SAMPLE_CREATE_CONCURRENCY = 8;

/** Creates the samples (an existing one is left as it is), a few at a time; names in index order. */
export async function applySamples(kubeUrl: string, count: number): Promise<string[]> {
  await forEachIndexConcurrently(count, SAMPLE_CREATE_CONCURRENCY, (index) => createSample(kubeUrl, index));
  return Array.from({ length: count }, (_, index) => sampleName(index));
}

function createSample(kubeUrl: string, index: number): Promise<void> {
  return createObject(kubeUrl, `${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies`, sampleProxy(index));
}

/** Where the sample services' endpoints point (the local echo backend). */
export interface SampleBackend {
  ip: string;
  port: number;
}

/** Service port names: an EndpointSlice port joins the Service port of the same name. */
const SAMPLE_PORT_NAME = 'http';

/**
 * For an unmodified Contour (`--control-plane contour`), which reads Services and EndpointSlices
 * from the API server where the reference control plane takes endpoints from memory: per sample,
 * the Services `app-<i>` and `app-<i>-canary` (port 8080, what the samples route to) and one
 * EndpointSlice each with the echo backend. An existing object is left as it is.
 */
export async function applySampleBackends(kubeUrl: string, count: number, backend: SampleBackend): Promise<void> {
  const services = Array.from({ length: count }, (_, index) => [sampleService(index), sampleCanaryService(index)]).flat();
  await forEachConcurrently(services, SAMPLE_CREATE_CONCURRENCY, async (name) => {
    await createObject(kubeUrl, `/api/v1/namespaces/${SAMPLE_NAMESPACE}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: SAMPLE_NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'xds-programmed-sample' } },
      spec: { selector: { app: name }, ports: [{ name: SAMPLE_PORT_NAME, port: SAMPLE_SERVICE_PORT, targetPort: backend.port }] },
    });
    await createObject(kubeUrl, `/apis/discovery.k8s.io/v1/namespaces/${SAMPLE_NAMESPACE}/endpointslices`, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-1`, namespace: SAMPLE_NAMESPACE, labels: { 'kubernetes.io/service-name': name, 'app.kubernetes.io/part-of': 'xds-programmed-sample' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [backend.ip], conditions: { ready: true } }],
      ports: [{ name: SAMPLE_PORT_NAME, port: backend.port }],
    });
  });
}

/**
 * Tries of one create whose connection failed. A POST sent on a kept-alive connection the API server
 * has just closed fails with ECONNRESET (or undici's "other side closed") before the server reads it;
 * creating 10,000 samples on a busy machine met that twice in one run. Sending it again is safe: an
 * object already there answers 409, which counts as created.
 */
export const CREATE_ATTEMPTS = 5;

/** POSTs `object`; created or already there is success, any other answer an error naming the path. */
async function createObject(kubeUrl: string, path: string, object: Record<string, unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let response: Response;
    try {
      response = await fetch(`${kubeUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(object) });
    } catch (error) {
      if (attempt >= CREATE_ATTEMPTS || !isConnectionLost(error)) throw new Error(`POST ${path} failed after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${describeError(error)}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      continue;
    }
    if (response.status !== 201 && response.status !== 409) throw new Error(`POST ${path} failed: HTTP ${response.status} ${await response.text()}`);
    return;
  }
}

/**
 * Whether fetch failed because the connection went away under the request (not a refused or unknown
 * host): its cause is the stale-socket error the local DynamoDB wire client retries too, or undici's
 * own name for it.
 */
function isConnectionLost(error: unknown): boolean {
  // Duck-typed: undici's errors need not be this realm's Error (jest runs tests in a VM context).
  const cause = typeof error === 'object' && error !== null && 'cause' in error ? (error as { cause: unknown }).cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? (cause as { code: unknown }).code : undefined;
  return isStaleSocketError(cause) || code === 'UND_ERR_SOCKET';
}
