// Log hygiene (docs/GATEWAY.md "Logs"): the gateway logs node ids, type URLs, seqs, object refs and
// error texts, never resources or key material. These pino redact paths are a safety net for
// anything that slips into a log call anyway: TLS bytes (our option names and grpc's), AWS
// credentials, HTTP auth headers, and whole environments.
import type { LoggerOptions } from 'pino';

export const REDACTED = '[redacted]';

export const GATEWAY_REDACT_PATHS: readonly string[] = [
  ...['privateKey', 'private_key', 'certChain', 'cert_chain', 'rootCerts', 'key', 'cert', 'passphrase', 'secretAccessKey', 'sessionToken', 'credentials', 'authorization', 'env'].flatMap(
    (field) => [field, `*.${field}`, `*.*.${field}`],
  ),
  'headers.authorization',
  '*.headers.authorization',
  'headers.cookie',
  '*.headers.cookie',
];

export const GATEWAY_REDACT: NonNullable<LoggerOptions['redact']> = { paths: [...GATEWAY_REDACT_PATHS], censor: REDACTED };
