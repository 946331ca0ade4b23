// How a function reaches the Kubernetes API. Two sources, chosen by configuration:
//  - a kubeconfig (YAML in KUBECONFIG_YAML, or a file at KUBECONFIG_PATH) for any cluster, and the
//    local API server in tests;
//  - EKS (EKS_CLUSTER_NAME + EKS_CLUSTER_ENDPOINT + EKS_CLUSTER_CA): a bearer token made in-process
//    from the function's IAM credentials (eks-token.ts), refreshed before EKS stops honouring it.
// Clients are built once per warm Lambda container and rebuilt only when the token is renewed.
import { ApiextensionsV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { AwsCredentialIdentity } from '@smithy/types';

import { functionsConfig, FunctionsConfigError, KUBE_ACCESS_SETTINGS, type FunctionsConfig } from '../lib/config';
import { createEksToken, type EksToken } from './eks-token';

export type KubeAccessConfig =
  | { source: 'kubeconfig'; yaml: string }
  | { source: 'kubeconfigFile'; path: string }
  | { source: 'eks'; clusterName: string; endpoint: string; caData: string; region: string };

/**
 * Which of the three ways to reach Kubernetes the configuration names (exactly one; empty strings
 * count as unset). Each variable's own rule is in functions/lib/config.ts; this is the rule across them.
 */
export function kubeAccessConfigFromEnv(source: Record<string, string | undefined> | FunctionsConfig): KubeAccessConfig {
  const env = functionsConfig(source).slice(KUBE_ACCESS_SETTINGS);
  const problems: Array<{ variable: string; message: string }> = [];
  const sources = [env.KUBECONFIG_YAML, env.KUBECONFIG_PATH, env.EKS_CLUSTER_NAME].filter((v) => v !== undefined).length;
  if (sources !== 1) problems.push({ variable: 'KUBECONFIG_YAML | KUBECONFIG_PATH | EKS_CLUSTER_NAME', message: 'set exactly one of KUBECONFIG_YAML, KUBECONFIG_PATH or EKS_CLUSTER_NAME' });
  if (env.EKS_CLUSTER_NAME !== undefined && (env.EKS_CLUSTER_ENDPOINT === undefined || env.EKS_CLUSTER_CA === undefined || env.AWS_REGION === undefined)) {
    problems.push({ variable: 'EKS_CLUSTER_NAME', message: 'EKS_CLUSTER_NAME needs EKS_CLUSTER_ENDPOINT, EKS_CLUSTER_CA and AWS_REGION' });
  }
  if (problems.length > 0) throw new FunctionsConfigError(problems);
  if (env.KUBECONFIG_YAML !== undefined) return { source: 'kubeconfig', yaml: env.KUBECONFIG_YAML };
  if (env.KUBECONFIG_PATH !== undefined) return { source: 'kubeconfigFile', path: env.KUBECONFIG_PATH };
  return {
    source: 'eks',
    clusterName: env.EKS_CLUSTER_NAME as string,
    endpoint: env.EKS_CLUSTER_ENDPOINT as string,
    caData: env.EKS_CLUSTER_CA as string,
    region: env.AWS_REGION as string,
  };
}

export interface KubeClients {
  customObjects: CustomObjectsApi;
  apiextensions: ApiextensionsV1Api;
}

export interface KubeAccess {
  /** Clients with valid credentials (a cached pair while the credentials last). */
  clients(): Promise<KubeClients>;
}

function clientsOf(config: KubeConfig): KubeClients {
  return { customObjects: config.makeApiClient(CustomObjectsApi), apiextensions: config.makeApiClient(ApiextensionsV1Api) };
}

/** A kubeconfig with one cluster and one token user, for EKS. */
export function eksKubeConfig(config: { clusterName: string; endpoint: string; caData: string }, token: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: config.clusterName, server: config.endpoint, caData: config.caData, skipTLSVerify: false }],
    users: [{ name: 'lambda', token }],
    contexts: [{ name: config.clusterName, cluster: config.clusterName, user: 'lambda' }],
    currentContext: config.clusterName,
  });
  return kubeConfig;
}

export interface KubeAccessSeams {
  credentials?: () => Promise<AwsCredentialIdentity>;
  now?: () => number;
}

export function createKubeAccess(config: KubeAccessConfig, seams: KubeAccessSeams = {}): KubeAccess {
  if (config.source !== 'eks') {
    const kubeConfig = new KubeConfig();
    const from = config.source === 'kubeconfig' ? 'KUBECONFIG_YAML' : `KUBECONFIG_PATH ${config.path}`;
    try {
      if (config.source === 'kubeconfig') kubeConfig.loadFromString(config.yaml);
      else kubeConfig.loadFromFile(config.path);
    } catch (error) {
      throw new Error(`cannot load the kubeconfig from ${from}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (kubeConfig.getCurrentCluster() === null) {
      throw new Error(`the kubeconfig from ${from} has no current context with a cluster (current-context: ${JSON.stringify(kubeConfig.getCurrentContext())})`);
    }
    const clients = clientsOf(kubeConfig);
    return { clients: async () => clients };
  }
  const credentials = seams.credentials ?? defaultProvider();
  const now = seams.now ?? Date.now;
  let cached: { token: EksToken; clients: KubeClients } | undefined;
  return {
    async clients() {
      if (cached !== undefined && now() < cached.token.expiresAt) return cached.clients;
      const token = await createEksToken({ clusterName: config.clusterName, region: config.region, credentials: await credentials(), now: new Date(now()) });
      cached = { token, clients: clientsOf(eksKubeConfig(config, token.token)) };
      return cached.clients;
    },
  };
}
