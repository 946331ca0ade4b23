// SigV4 signer setup shared by the CLI (signed function-URL requests) and the EKS token builder
// (presigned STS GetCallerIdentity): the signer needs a SHA-256 / HMAC-SHA-256 implementation, taken
// here from node:crypto so no extra hashing package is needed.
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider, Checksum, SourceData } from '@smithy/types';

function toBuffer(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** SHA-256 / HMAC-SHA-256 for the SigV4 signer, from node:crypto (no extra package needed). */
export class NodeSha256 implements Checksum {
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

/** A SigV4 signer for `service` in `region`, hashing with {@link NodeSha256}. */
export function createSigner(
  service: string,
  region: string,
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider,
): SignatureV4 {
  return new SignatureV4({ service, region, credentials, sha256: NodeSha256 });
}
