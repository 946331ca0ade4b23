// Whether a query API URL is a Lambda function URL (AWS_IAM auth: requests are signed, sigv4.ts),
// apart from the signing itself so that telling needs none of the AWS SDK.

/** `https://<id>.lambda-url.<region>.on.aws/`: the region is in the host name. */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;

/** The region of a Lambda function URL, or undefined when the URL is not one (e.g. the local runtime). */
export function functionUrlRegion(url: URL): string | undefined {
  return FUNCTION_URL_HOST.exec(url.hostname)?.[1];
}
