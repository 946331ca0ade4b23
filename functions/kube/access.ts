// How a function reaches the Kubernetes API. Two sources, chosen by configuration:
//  - a kubeconfig (YAML in KUBECONFIG_YAML, or a file at KUBECONFIG_PATH) for any cluster, and the
//    local API server in tests;
//  - EKS (EKS_CLUSTER_NAME + EKS_CLUSTER_ENDPOINT + EKS_CLUSTER_CA): a bearer token made in-process
//    from the function's IAM credentials (eks-token.ts), refreshed before EKS stops honouring it.
// Clients are built once per warm Lambda container and rebuilt only when the token is renewed.
import { ApiextensionsV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { AwsCredentialIdentity } from '@smithy/types';
import { z } from 'zod';

import { createEksToken, type EksToken } from './eks-token';

export const kubeAccessEnvSchema = z
  .object({
    KUBECONFIG_YAML: z.string().min(1).optional(),
    KUBECONFIG_PATH: z.string().min(1).optional(),
    EKS_CLUSTER_NAME: z.string().regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'EKS cluster names are 1-100 of [A-Za-z0-9-_]').optional(),
    EKS_CLUSTER_ENDPOINT: z.url().optional(),
    /** Base64 PEM of the cluster CA, as `aws eks describe-cluster` prints certificateAuthority.data. */
    EKS_CLUSTER_CA: z.string().min(1).optional(),
    AWS_REGION: z.string().min(1).optional(),
  })
  .superRefine((env, ctx) => {
    const sources = [env.KUBECONFIG_YAML, env.KUBECONFIG_PATH, env.EKS_CLUSTER_NAME].filter((v) => v !== undefined).length;
    if (sources !== 1) {
      ctx.addIssue({ code: 'custom', message: 'set exactly one of KUBECONFIG_YAML, KUBECONFIG_PATH or EKS_CLUSTER_NAME' });
    }
    if (env.EKS_CLUSTER_NAME !== undefined && (env.EKS_CLUSTER_ENDPOINT === undefined || env.EKS_CLUSTER_CA === undefined || env.AWS_REGION === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'EKS_CLUSTER_NAME needs EKS_CLUSTER_ENDPOINT, EKS_CLUSTER_CA and AWS_REGION' });
    }
  });

export type KubeAccessConfig =
  | { source: 'kubeconfig'; yaml: string }
  | { source: 'kubeconfigFile'; path: string }
  | { source: 'eks'; clusterName: string; endpoint: string; caData: string; region: string };

export function kubeAccessConfigFromEnv(env: Record<string, string | undefined>): KubeAccessConfig {
  const parsed = kubeAccessEnvSchema.parse(env);
  if (parsed.KUBECONFIG_YAML !== undefined) return { source: 'kubeconfig', yaml: parsed.KUBECONFIG_YAML };
  if (parsed.KUBECONFIG_PATH !== undefined) return { source: 'kubeconfigFile', path: parsed.KUBECONFIG_PATH };
  return {
    source: 'eks',
    clusterName: parsed.EKS_CLUSTER_NAME as string,
    endpoint: parsed.EKS_CLUSTER_ENDPOINT as string,
    caData: parsed.EKS_CLUSTER_CA as string,
    region: parsed.AWS_REGION as string,
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
