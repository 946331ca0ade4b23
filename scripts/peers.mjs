#!/usr/bin/env node
// Installs the real peers the tests run against, from their own registries, pinned, into
// .cache/peers (gitignored): a Python virtualenv with test/peers/requirements.txt (gRPC C-core's
// xDS client, python-kubernetes) and one binary per Go program under test/peers/go/ (each its own
// module, pinned by go.sum). Idempotent: the venv is rebuilt only when requirements.txt changes, and
// Go's build cache makes a rebuild of unchanged programs quick. Prints the peers directory.
//
//   node scripts/peers.mjs            install (or check) everything
//   node scripts/peers.mjs --python   only the Python peers
//   node scripts/peers.mjs --go       only the Go peers
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = process.env.XDS_PEERS_DIR ?? join(root, '.cache', 'peers');
const only = process.argv.slice(2);
const want = (kind) => only.length === 0 || only.includes(`--${kind}`);

function run(command, args, options = {}) {
  try {
    return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', ...options });
  } catch (error) {
    const stderr = error.stderr ? String(error.stderr).slice(-4000) : '';
    throw new Error(`${command} ${args.join(' ')} failed (exit ${error.status ?? '?'}):\n${stderr}`);
  }
}

function installPython() {
  const requirements = join(root, 'test', 'peers', 'requirements.txt');
  const digest = createHash('sha256').update(readFileSync(requirements)).digest('hex');
  const venv = join(peersDir, 'venv');
  const stamp = join(venv, '.requirements.sha256');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return;
  rmSync(venv, { recursive: true, force: true });
  const python = process.env.XDS_PEERS_PYTHON ?? 'python3';
  run(python, ['-m', 'venv', venv]);
  run(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--quiet', '--only-binary=:all:', '-r', requirements]);
  writeFileSync(stamp, digest);
}

function installGo() {
  const programs = join(root, 'test', 'peers', 'go');
  const bin = join(peersDir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const name of readdirSync(programs, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)) {
    const dir = join(programs, name);
    if (!existsSync(join(dir, 'go.mod'))) continue;
    run('go', ['build', '-mod=readonly', '-o', join(bin, name), '.'], { cwd: dir, env: { ...process.env, CGO_ENABLED: '0' } });
  }
}

mkdirSync(peersDir, { recursive: true });
if (want('python')) installPython();
if (want('go')) installGo();
console.log(peersDir);
