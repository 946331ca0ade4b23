// A kubeconfig for kubectl and @kubernetes/client-node pointing at the local server.
// client-node refuses a plain-http cluster entry unless `insecure-skip-tls-verify: true` is set.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const KUBECONFIG_CONTEXT = 'xds-programmed-local';

export function kubeconfigYaml(url: string, namespace = 'default'): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: KUBECONFIG_CONTEXT, cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    // The local server does no authentication; a token is still set so clients do not prompt.
    users: [{ name: KUBECONFIG_CONTEXT, user: { token: 'local-unauthenticated' } }],
    contexts: [{ name: KUBECONFIG_CONTEXT, context: { cluster: KUBECONFIG_CONTEXT, user: KUBECONFIG_CONTEXT, namespace } }],
    'current-context': KUBECONFIG_CONTEXT,
    preferences: {},
  });
}

/** Writes `<dir>/kubeconfig` and returns its path. */
export function writeKubeconfig(dir: string, url: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, kubeconfigYaml(url), { mode: 0o600 });
  return path;
}
