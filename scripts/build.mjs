// Bundles every Lambda handler (functions/<name>.ts, one file per handler) and the gateway
// (xds-gateway/main.ts) with esbuild into dist/. Each function gets its own self-contained
// CommonJS bundle so serverless can package it as a prebuilt artifact offline.
import { build } from 'esbuild';
import { existsSync, readdirSync, readFileSync, mkdirSync } from 'node:fs';
import { join, basename } from 'node:path';
import { parseDocument } from 'yaml';

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

// The functions are bundled for the Node that serverless.yml deploys them on (provider.runtime
// nodejsNN.x → esbuild target nodeNN), so the two cannot drift apart; the banner names the target so
// the packaging test (test/integration/deploy/serverless-package.test.ts) can check the zipped bundle.
function functionsTarget() {
  const runtime = parseDocument(readFileSync(join(root, 'serverless.yml'), 'utf8'), { logLevel: 'silent' }).getIn(['provider', 'runtime']);
  const match = typeof runtime === 'string' ? /^nodejs(\d+)\.x$/.exec(runtime) : null;
  if (match === null) throw new Error(`serverless.yml: provider.runtime must be nodejsNN.x, got ${JSON.stringify(runtime)}`);
  return { runtime, target: `node${match[1]}` };
}
const { runtime, target: functionTarget } = functionsTarget();

const jobs = functionEntries.map((file) =>
  build({
    ...common,
    target: functionTarget,
    banner: { js: `// xds-programmed function bundle: esbuild target ${functionTarget} for Lambda ${runtime}` },
    entryPoints: [join(root, 'functions', file)],
    outfile: join(outRoot, 'functions', basename(file, '.ts'), 'index.js'),
    // The Lambda Node.js 24 runtime ships AWS SDK v3 too, but bundling pins the version we test with
    // (and the bundle does not change when Lambda updates its copy).
  }),
);
if (existsSync(gatewayEntry)) {
  // The gateway loads the Envoy .proto files that @grpc/grpc-js-xds ships (deps/) at startup, so that
  // package stays external: the gateway image (Dockerfile) carries its package.json and deps/ under
  // /app/node_modules beside the bundle. Target node20 (package.json's engines): the image runs it
  // on Node 24, `node dist/xds-gateway/main.js` anywhere else on 20.19+.
  jobs.push(build({ ...common, target: 'node20', external: ['@grpc/grpc-js-xds'], entryPoints: [gatewayEntry], outfile: join(outRoot, 'xds-gateway', 'main.js') }));
}
await Promise.all(jobs);
console.log(`built ${functionEntries.length} function bundle(s)${existsSync(gatewayEntry) ? ' and the gateway' : ''} into dist/`);
