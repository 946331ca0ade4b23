// Throwaway PKI for TLS tests, made at test time with the openssl CLI (Node cannot create X.509
// certificates by itself). No openssl is a hard failure with a clear message, never a skip: CI runs
// the same image as development.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface Pem {
  cert: Buffer;
  key: Buffer;
  certPath: string;
  keyPath: string;
}

export interface TestPki {
  dir: string;
  ca: Pem;
  /** localhost / 127.0.0.1, signed by ca. */
  server: Pem;
  /** A client certificate signed by ca. */
  client: Pem;
  /** A CA nobody trusts, and a client certificate signed by it. */
  rogueCa: Pem;
  rogueClient: Pem;
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error('the TLS tests need the openssl CLI on PATH to create throwaway certificates (apt-get install openssl)');
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`openssl ${args.join(' ')} failed: ${stderr}`);
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function pem(dir: string, name: string): Pem {
  const certPath = path.join(dir, `${name}.crt`);
  const keyPath = path.join(dir, `${name}.key`);
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), certPath, keyPath };
}

function makeCa(dir: string, name: string): Pem {
  openssl(['req', '-x509', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`], dir);
  return pem(dir, name);
}

function makeLeaf(dir: string, name: string, ca: string, extensions: string): Pem {
  openssl(['req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`], dir);
  return pem(dir, name);
}

export function createTestPki(): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), 'xds-gw-pki-'));
  const ca = makeCa(dir, 'test-ca');
  const server = makeLeaf(dir, 'server', 'test-ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  const client = makeLeaf(dir, 'envoy-client', 'test-ca', 'extendedKeyUsage=clientAuth\n');
  const rogueCa = makeCa(dir, 'rogue-ca');
  const rogueClient = makeLeaf(dir, 'rogue-client', 'rogue-ca', 'extendedKeyUsage=clientAuth\n');
  return { dir, ca, server, client, rogueCa, rogueClient, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A server certificate from the test CA naming only `dnsNames` (not the address a test dials). */
export function issueServerCert(pki: TestPki, name: string, dnsNames: string[]): Pem {
  return makeLeaf(pki.dir, name, 'test-ca', `subjectAltName=${dnsNames.map((dns) => `DNS:${dns}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
}
