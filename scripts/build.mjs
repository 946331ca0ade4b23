// Bundles every Lambda handler (functions/<name>.ts, one file per handler) and the gateway
// (xds-gateway/main.ts) with esbuild into dist/. Each function gets its own self-contained
// CommonJS bundle so serverless can package it as a prebuilt artifact offline.
import { build } from 'esbuild';
import { existsSync, readdirSync, mkdirSync } from 'node:fs';
import { join, basename } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const outRoot = join(root, 'dist');
mkdirSync(outRoot, { recursive: true });

const functionEntries = existsSync(join(root, 'functions'))
  ? readdirSync(join(root, 'functions')).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  : [];
const gatewayEntry = join(root, 'xds-gateway', 'main.ts');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
};

const jobs = functionEntries.map((file) =>
  build({
    ...common,
    entryPoints: [join(root, 'functions', file)],
    outfile: join(outRoot, 'functions', basename(file, '.ts'), 'index.js'),
    // The Lambda Node.js 20 runtime ships AWS SDK v3, but bundling pins the version we test with.
  }),
);
if (existsSync(gatewayEntry)) {
  // The gateway loads the Envoy .proto files that @grpc/grpc-js-xds ships (deps/) at startup, so that
  // package stays external: the gateway image carries node_modules/@grpc/grpc-js-xds beside the bundle.
  jobs.push(build({ ...common, external: ['@grpc/grpc-js-xds'], entryPoints: [gatewayEntry], outfile: join(outRoot, 'xds-gateway', 'main.js') }));
}
await Promise.all(jobs);
console.log(`built ${functionEntries.length} function bundle(s)${existsSync(gatewayEntry) ? ' and the gateway' : ''} into dist/`);
