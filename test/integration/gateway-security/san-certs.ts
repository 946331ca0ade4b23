// Client certificates with chosen subject alternative names, signed by a TestPki's CA (certs.ts),
// for the node-id-to-certificate binding. Made with the openssl CLI, as certs.ts does.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Pem, TestPki } from './certs';

/**
 * A client certificate whose subjectAltName section lists `sans` as openssl config lines
 * (`DNS.1 = envoy-a`, `URI.1 = spiffe://…`). A section, not the one-line form, so a value may hold a
 * comma (one SAN whose text looks like two).
 */
export function clientCertWithSans(pki: TestPki, name: string, sans: readonly string[]): Pem {
  const run = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: pki.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  };
  const ext = ['extendedKeyUsage = clientAuth', 'subjectAltName = @alt_names', '[alt_names]', ...sans, ''].join('\n');
  writeFileSync(path.join(pki.dir, `${name}.ext`), ext);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  run(['x509', '-req', '-in', `${name}.csr`, '-CA', pki.ca.certPath, '-CAkey', pki.ca.keyPath, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`]);
  const certPath = path.join(pki.dir, `${name}.crt`);
  const keyPath = path.join(pki.dir, `${name}.key`);
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), certPath, keyPath };
}
