#!/usr/bin/env node
// `bin` shim for the xds-programmed CLI: runs common/cli/main.ts through tsx (no build step), passing
// arguments, stdio, signals and the exit code through.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const root = path.join(__dirname, '..');
const main = path.join(root, 'common', 'cli', 'main.ts');
// Resolve tsx from this package, not from the caller's directory (the CLI may run anywhere).
const tsx = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const child = spawn(process.execPath, ['--import', tsx, main, ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: process.cwd(),
  env: { ...process.env, NODE_NO_WARNINGS: process.env.NODE_NO_WARNINGS ?? '1' },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
