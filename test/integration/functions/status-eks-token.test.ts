// The EKS bearer token: shape, determinism, and a SigV4 signature recomputed independently here from
// the AWS specification (canonical request → string to sign → HMAC chain), so a change in the
// signer's use cannot go unnoticed. Fixed credentials and time; no network.
import { createHash, createHmac } from 'node:crypto';

import { CLUSTER_ID_HEADER, createEksToken, decodeEksToken, EKS_TOKEN_PREFIX } from '../../../functions/kube/eks-token';
import { createKubeAccess, kubeAccessConfigFromEnv } from '../../../functions/kube/access';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const now = new Date('2026-01-01T00:00:00Z');

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** SigV4 query-string signature of GET https://<host>/?<query without signature> with the signed headers. */
function expectedSignature(url: URL, clusterName: string, secret: string): string {
  const params = [...url.searchParams.entries()].filter(([key]) => key !== 'X-Amz-Signature');
  const canonicalQuery = params.map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`).sort().join('&');
  const canonicalRequest = ['GET', '/', canonicalQuery, `host:${url.host}`, `${CLUSTER_ID_HEADER}:${clusterName}`, '', 'host;x-k8s-aws-id', createHash('sha256').update('').digest('hex')].join('\n');
  const date = url.searchParams.get('X-Amz-Date') ?? '';
  const scope = `${date.slice(0, 8)}/us-east-1/sts/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, scope, createHash('sha256').update(canonicalRequest).digest('hex')].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date.slice(0, 8)), 'us-east-1'), 'sts'), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('EKS token', () => {
  it('is k8s-aws-v1. + unpadded base64url of a presigned STS GetCallerIdentity URL bound to the cluster', async () => {
    const { token, expiresAt } = await createEksToken({ clusterName: 'prod-1', region: 'us-east-1', credentials, now });
    expect(token.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
    expect(token.slice(EKS_TOKEN_PREFIX.length)).toMatch(/^[A-Za-z0-9_-]+$/);
    const url = decodeEksToken(token);
    expect(url.origin).toBe('https://sts.us-east-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      Action: 'GetCallerIdentity',
      Version: '2011-06-15',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIDEXAMPLE/20260101/us-east-1/sts/aws4_request',
      'X-Amz-Date': '20260101T000000Z',
      'X-Amz-Expires': '60',
      'X-Amz-SignedHeaders': 'host;x-k8s-aws-id',
    });
    expect(url.searchParams.get('X-Amz-Signature')).toBe(expectedSignature(url, 'prod-1', credentials.secretAccessKey));
    // Renewed before EKS's fixed 15 minutes run out.
    expect(expiresAt).toBeGreaterThan(now.getTime());
    expect(expiresAt).toBeLessThan(now.getTime() + 15 * 60_000);
  });

  it('is deterministic for fixed inputs and differs per cluster and per time', async () => {
    const a = await createEksToken({ clusterName: 'prod-1', region: 'us-east-1', credentials, now });
    const b = await createEksToken({ clusterName: 'prod-1', region: 'us-east-1', credentials, now });
    const otherCluster = await createEksToken({ clusterName: 'prod-2', region: 'us-east-1', credentials, now });
    const later = await createEksToken({ clusterName: 'prod-1', region: 'us-east-1', credentials, now: new Date(now.getTime() + 1000) });
    expect(a.token).toBe(b.token);
    expect(otherCluster.token).not.toBe(a.token);
    expect(later.token).not.toBe(a.token);
  });

  it('carries the session token of temporary (Lambda role) credentials', async () => {
    const { token } = await createEksToken({ clusterName: 'prod-1', region: 'eu-west-1', credentials: { ...credentials, sessionToken: 'session/token+1' }, now });
    const url = decodeEksToken(token);
    expect(url.host).toBe('sts.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('session/token+1');
  });

  it('is refreshed by the access helper only when it expires', async () => {
    let clock = now.getTime();
    let credentialReads = 0;
    const access = createKubeAccess(
      { source: 'eks', clusterName: 'prod-1', endpoint: 'https://ABC.gr7.us-east-1.eks.amazonaws.com', caData: Buffer.from('not a real CA').toString('base64'), region: 'us-east-1' },
      { credentials: async () => { credentialReads++; return credentials; }, now: () => clock },
    );
    const first = await access.clients();
    expect(await access.clients()).toBe(first);
    clock += 9 * 60_000;
    expect(await access.clients()).toBe(first);
    clock += 2 * 60_000;
    expect(await access.clients()).not.toBe(first);
    expect(credentialReads).toBe(2);
  });

  it('configuration names exactly one way to reach Kubernetes', () => {
    expect(() => kubeAccessConfigFromEnv({})).toThrow(/exactly one of/);
    expect(() => kubeAccessConfigFromEnv({ KUBECONFIG_PATH: '/x', EKS_CLUSTER_NAME: 'c' })).toThrow(/exactly one of/);
    expect(() => kubeAccessConfigFromEnv({ EKS_CLUSTER_NAME: 'c' })).toThrow(/EKS_CLUSTER_ENDPOINT/);
    expect(kubeAccessConfigFromEnv({ EKS_CLUSTER_NAME: 'c', EKS_CLUSTER_ENDPOINT: 'https://e.example', EKS_CLUSTER_CA: 'Q0E=', AWS_REGION: 'us-east-1' })).toMatchObject({ source: 'eks', clusterName: 'c' });
    expect(kubeAccessConfigFromEnv({ KUBECONFIG_YAML: 'apiVersion: v1' })).toEqual({ source: 'kubeconfig', yaml: 'apiVersion: v1' });
  });
});
