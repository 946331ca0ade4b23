// SigV4 signing of query-function requests when the function URL uses AWS_IAM auth (deployed): the
// caller needs `lambda:InvokeFunctionUrl`, and the request is signed for service `lambda` in the
// URL's region (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html). Credentials come from
// the standard AWS provider chain (environment, profile, SSO, web identity, instance metadata).
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { createSigner } from '../aws/sigv4';

/** Headers to add to a GET of `url` so that an AWS_IAM function URL accepts it. */
export async function signedHeaders(url: URL, region: string): Promise<Record<string, string>> {
  const signer = createSigner('lambda', region, defaultProvider());
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
