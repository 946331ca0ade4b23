// Reads `metadata.generation` of an object from Kubernetes, so `wait` waits for the generation the
// user just posted and never returns on an older one that was already programmed (the
// observedGeneration rule: generation != observedGeneration means "catching up").
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { KindInfo } from './object-ref';

export async function currentGeneration(kubeconfigPath: string, kind: KindInfo, namespace: string, name: string): Promise<number> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const api = config.makeApiClient(CustomObjectsApi);
  const object: unknown = kind.namespaced
    ? await api.getNamespacedCustomObject({ group: kind.group, version: kind.version, namespace, plural: kind.plural, name })
    : await api.getClusterCustomObject({ group: kind.group, version: kind.version, plural: kind.plural, name });
  const generation = (object as { metadata?: { generation?: unknown } }).metadata?.generation;
  if (typeof generation !== 'number' || !Number.isInteger(generation)) throw new Error(`${kind.kind} ${namespace}/${name} has no metadata.generation`);
  return generation;
}
