// EKS authentication without the aws CLI or aws-iam-authenticator binary: the bearer token EKS
// accepts is "k8s-aws-v1." + base64url (no padding) of a presigned STS GetCallerIdentity URL whose
// signature covers the `x-k8s-aws-id: <cluster name>` header. The API server replays the URL against
// STS to learn the caller's IAM identity and maps it to Kubernetes RBAC (aws-auth / access entries).
// STS accepts the presigned URL for 15 minutes regardless of X-Amz-Expires, which aws-iam-authenticator
// sets to 60 s; we do the same and refresh well before the 15 minutes run out.
import type { AwsCredentialIdentity } from '@smithy/types';
import { createSigner } from '../../common/aws/sigv4';

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** The header EKS requires in the signature: it binds the token to one cluster. */
export const CLUSTER_ID_HEADER = 'x-k8s-aws-id';
/** How long EKS honours a token (server side, fixed). */
export const EKS_TOKEN_LIFETIME_MS = 15 * 60_000;

export interface EksTokenRequest {
  clusterName: string;
  /** Region of the STS endpoint (the cluster's region; regional endpoints are what EKS expects). */
  region: string;
  credentials: AwsCredentialIdentity;
  /** Signing time; tests pass a fixed one. */
  now: Date;
}

export interface EksToken {
  token: string;
  /** When to stop using it (a margin before EKS's 15 minutes). */
  expiresAt: number;
}

function base64UrlNoPadding(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Builds the bearer token for `clusterName` from the given credentials and time. */
export async function createEksToken(request: EksTokenRequest): Promise<EksToken> {
  const hostname = `sts.${request.region}.amazonaws.com`;
  const signer = createSigner('sts', request.region, request.credentials);
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, [CLUSTER_ID_HEADER]: request.clusterName },
    },
    { expiresIn: 60, signingDate: request.now },
  );
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string').map((v) => `${encodeURIComponent(key)}=${encodeURIComponent(v)}`))
    .sort()
    .join('&');
  const url = `https://${hostname}/?${query}`;
  return { token: EKS_TOKEN_PREFIX + base64UrlNoPadding(url), expiresAt: request.now.getTime() + EKS_TOKEN_LIFETIME_MS - 5 * 60_000 };
}

/** Decodes a token back to its URL (for tests and for logging what was sent, never the signature). */
export function decodeEksToken(token: string): URL {
  if (!token.startsWith(EKS_TOKEN_PREFIX)) throw new Error(`not an EKS token (missing ${EKS_TOKEN_PREFIX})`);
  const encoded = token.slice(EKS_TOKEN_PREFIX.length).replace(/-/g, '+').replace(/_/g, '/');
  return new URL(Buffer.from(encoded, 'base64').toString('utf8'));
}
