// Where the real peers installed by scripts/peers.mjs live (gRPC C-core via Python, python-kubernetes,
// the Go programs under test/peers/go/). `npm test` installs them before jest runs; a missing peer is
// an error that says how to install it, never a skipped test.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(__dirname, '..', '..');
export const PEERS_DIR = process.env['XDS_PEERS_DIR'] ?? join(REPO_ROOT, '.cache', 'peers');
export const PEER_SOURCES = join(REPO_ROOT, 'test', 'peers');

function installed(path: string, what: string): string {
  if (!existsSync(path)) throw new Error(`${what} is not installed at ${path}: run \`node scripts/peers.mjs\` (npm test does)`);
  return path;
}

/** The virtualenv's python, with grpcio, grpcio-csds and kubernetes (test/peers/requirements.txt). */
export function peerPython(): string {
  return installed(join(PEERS_DIR, 'venv', 'bin', 'python'), 'the Python peers virtualenv');
}

/** A Go program built from test/peers/go/<name>. */
export function goPeer(name: string): string {
  return installed(join(PEERS_DIR, 'bin', name), `the Go peer ${name}`);
}

/** A script under test/peers/. */
export function peerScript(...path: string[]): string {
  return installed(join(PEER_SOURCES, ...path), 'the peer script');
}
