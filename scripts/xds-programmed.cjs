#!/usr/bin/env node
// `bin` shim for the xds-programmed CLI. Runs the prebuilt bundle (dist/cli/xds-programmed.cjs, from
// scripts/build-cli.mjs, which `npm ci` runs through `prepare`) in this process: node starts it about
// as fast as kubectl starts. Without a bundle, or when a source it was built from has changed since,
// it runs common/cli/bin.ts through tsx instead (no build step while developing), passing arguments,
// stdio, signals and the exit code through. XDS_PROGRAMMED_TSX=1 forces the tsx path.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const bundle = path.join(root, 'dist', 'cli', 'xds-programmed.cjs');

/** The bundle, if it exists and no repository source listed beside it is newer than it. */
function freshBundle() {
  if (process.env.XDS_PROGRAMMED_TSX === '1') return undefined;
  try {
    const builtAt = fs.statSync(bundle).mtimeMs;
    const { sources } = JSON.parse(fs.readFileSync(path.join(root, 'dist', 'cli', 'xds-programmed.inputs.json'), 'utf8'));
    for (const source of sources) if (fs.statSync(path.join(root, source)).mtimeMs > builtAt) return undefined;
    return bundle;
  } catch {
    // No bundle, no list, or a listed source is gone: the sources are what to run.
    return undefined;
  }
}

const built = freshBundle();
if (built !== undefined) {
  require(built);
} else {
  const { spawn } = require('node:child_process');
  const { pathToFileURL } = require('node:url');
  // Resolve tsx from this package, not from the caller's directory (the CLI may run anywhere).
  const tsx = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  const child = spawn(process.execPath, ['--import', tsx, path.join(root, 'common', 'cli', 'bin.ts'), ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: process.cwd(),
    env: { ...process.env, NODE_NO_WARNINGS: process.env.NODE_NO_WARNINGS ?? '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
