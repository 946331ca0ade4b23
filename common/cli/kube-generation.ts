// What the CLI reads from Kubernetes (--kubeconfig / KUBECONFIG): an object's `metadata.generation`,
// so `wait` waits for the generation the user just posted and never returns on an older one that was
// already programmed (the observedGeneration rule: generation != observedGeneration means "catching
// up"); and, for `-l`/`--all`, the objects of a kind in a namespace (or all of them, `-A`).
// @kubernetes/client-node throws errors whose message spans four lines (code, "Unknown API Status
// Code!", body, headers); they become a KubeError with one line that says what Kubernetes answered.
import { ApiException, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { KindInfo } from './object-ref';

/** Kubernetes answered an error (status set) or could not be reached (status undefined). */
export class KubeError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

/** The kubeconfig could not be read: the caller's input, not the cluster's state. */
export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

export interface ListedObject {
  namespace: string;
  name: string;
  generation: number;
}

function api(kubeconfigPath: string): { api: CustomObjectsApi; server: string } {
  const config = new KubeConfig();
  try {
    config.loadFromFile(kubeconfigPath);
  } catch (error) {
    throw new KubeconfigError(`cannot read the kubeconfig ${kubeconfigPath}: ${oneLine(error instanceof Error ? error.message : String(error))}`);
  }
  return { api: config.makeApiClient(CustomObjectsApi), server: config.getCurrentCluster()?.server ?? '(no current cluster)' };
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim();

/** The `message` of a Kubernetes Status body (a JSON string or already parsed), if there is one. */
function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return body.trim() === '' ? undefined : oneLine(body).slice(0, 300);
    }
  }
  const message = (value as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? oneLine(message).slice(0, 300) : undefined;
}

/** A KubeError for what the client threw while `what` (e.g. "reading HTTPProxy default/web"). */
function kubeError(error: unknown, what: string, server: string): KubeError {
  if (error instanceof ApiException) {
    const code = (error as ApiException<unknown>).code;
    const message = statusMessage((error as ApiException<unknown>).body);
    return new KubeError(code, `Kubernetes answered HTTP ${code} ${what}${message === undefined ? '' : `: ${message}`}`);
  }
  return new KubeError(undefined, `cannot reach Kubernetes at ${server} ${what}: ${oneLine(error instanceof Error ? error.message : String(error))}`);
}

function generationOf(object: unknown, label: string): number {
  const generation = (object as { metadata?: { generation?: unknown } } | null)?.metadata?.generation;
  if (typeof generation !== 'number' || !Number.isInteger(generation)) throw new KubeError(200, `${label} has no metadata.generation`);
  return generation;
}

export async function currentGeneration(kubeconfigPath: string, kind: KindInfo, namespace: string, name: string): Promise<number> {
  const { api: client, server } = api(kubeconfigPath);
  const label = `${kind.kind} ${kind.namespaced ? `${namespace}/` : ''}${name}`;
  let object: unknown;
  try {
    object = kind.namespaced
      ? await client.getNamespacedCustomObject({ group: kind.group, version: kind.version, namespace, plural: kind.plural, name })
      : await client.getClusterCustomObject({ group: kind.group, version: kind.version, plural: kind.plural, name });
  } catch (error) {
    const failure = kubeError(error, `reading ${label}`, server);
    if (failure.status === 404) throw new KubeError(404, `${label} not found in Kubernetes`);
    throw failure;
  }
  return generationOf(object, label);
}

/**
 * Objects of `kind` matching `labelSelector` (undefined: all) in `namespace`, or in every namespace
 * when `namespace` is undefined; sorted by namespace, then name. Every page is read.
 */
export async function listObjects(kubeconfigPath: string, kind: KindInfo, namespace: string | undefined, labelSelector: string | undefined): Promise<ListedObject[]> {
  const { api: client, server } = api(kubeconfigPath);
  const where = namespace === undefined || !kind.namespaced ? '' : ` in namespace ${namespace}`;
  const objects: ListedObject[] = [];
  let continueToken: string | undefined;
  do {
    const page = { group: kind.group, version: kind.version, plural: kind.plural, limit: 500, ...(labelSelector === undefined ? {} : { labelSelector }), ...(continueToken === undefined ? {} : { _continue: continueToken }) };
    let list: unknown;
    try {
      list = namespace !== undefined && kind.namespaced ? await client.listNamespacedCustomObject({ ...page, namespace }) : await client.listClusterCustomObject(page);
    } catch (error) {
      const failure = kubeError(error, `listing ${kind.plural}.${kind.group}${where}`, server);
      if (failure.status === 404) throw new KubeError(404, `Kubernetes does not serve ${kind.plural}.${kind.group}/${kind.version} (is its CustomResourceDefinition installed?)`);
      throw failure;
    }
    const body = list as { items?: unknown; metadata?: { continue?: unknown } };
    for (const item of Array.isArray(body.items) ? (body.items as unknown[]) : []) {
      const metadata = (item as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
      if (typeof metadata?.name !== 'string') continue;
      const objectNamespace = typeof metadata.namespace === 'string' ? metadata.namespace : '';
      objects.push({ namespace: objectNamespace, name: metadata.name, generation: generationOf(item, `${kind.kind} ${objectNamespace}/${metadata.name}`) });
    }
    continueToken = typeof body.metadata?.continue === 'string' && body.metadata.continue !== '' ? body.metadata.continue : undefined;
  } while (continueToken !== undefined);
  const key = (object: ListedObject) => `${object.namespace}\u0000${object.name}`;
  return objects.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
