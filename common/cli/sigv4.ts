// SigV4 signing of query-function requests when the function URL uses AWS_IAM auth (deployed): the
// caller needs `lambda:InvokeFunctionUrl`, and the request is signed for service `lambda` in the
// URL's region (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html). Credentials come from
// the standard AWS provider chain (environment, profile, SSO, web identity, instance metadata).
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Checksum, SourceData } from '@smithy/types';

/** `https://<id>.lambda-url.<region>.on.aws/`: the region is in the host name. */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;

/** The region of a Lambda function URL, or undefined when the URL is not one (e.g. the local runtime). */
export function functionUrlRegion(url: URL): string | undefined {
  return FUNCTION_URL_HOST.exec(url.hostname)?.[1];
}

function toBuffer(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** SHA-256 / HMAC-SHA-256 for the signer from node:crypto (no extra package). */
class NodeSha256 implements Checksum {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(this.secret));
  }
  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

/** Headers to add to a GET of `url` so that an AWS_IAM function URL accepts it. */
export async function signedHeaders(url: URL, region: string): Promise<Record<string, string>> {
  const signer = new SignatureV4({ service: 'lambda', region, credentials: defaultProvider(), sha256: NodeSha256 });
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = value;
  const signed = await signer.sign({
    method: 'GET',
    protocol: url.protocol,
    hostname: url.hostname,
    path: url.pathname,
    query,
    headers: { host: url.host },
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) if (name !== 'host') headers[name] = String(value);
  return headers;
}
