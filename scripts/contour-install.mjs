#!/usr/bin/env node
// Installs the real, unmodified Contour (`contour serve`) that test/integration/contour runs
// against the local API server, from the Go module proxy, pinned, into .cache/peers/bin
// (gitignored, beside the peers of scripts/peers.mjs). Nothing of Contour is kept in this
// repository: its CRDs, and the Gateway API CRDs at the version Contour's go.mod pins, are read
// from the Go module cache, and this script records where in .cache/peers/contour.json.
// Idempotent: a binary already built from this module version is kept (`go version -m` says
// which version it was built from). Prints the binary's path and the manifest's.
//
//   node scripts/contour-install.mjs        (npm run contour:install)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CONTOUR_MODULE = 'github.com/projectcontour/contour';
const CONTOUR_VERSION = 'v1.33.6';
const GATEWAY_API_MODULE = 'sigs.k8s.io/gateway-api';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = process.env.XDS_PEERS_DIR ?? join(root, '.cache', 'peers');
const bin = join(peersDir, 'bin');
const binary = join(bin, 'contour');
const manifestPath = join(peersDir, 'contour.json');

function run(command, args, options = {}) {
  try {
    return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', ...options });
  } catch (error) {
    const stderr = error.stderr ? String(error.stderr).slice(-4000) : String(error.message);
    const hint = /requires go >= ?1\.(2[7-9]|[3-9])/.test(stderr)
      ? '\nThis module needs a newer Go than the machine has: the one allowed way is `export GOTOOLCHAIN=go1.27.3` (see /work/.library/env/packages/go-partial.tsv), in every shell, .ci/run and the README.'
      : '';
    throw new Error(`${command} ${args.join(' ')} failed (exit ${error.status ?? '?'}):\n${stderr}${hint}`);
  }
}

/** The module version a Go binary was built from, read from its embedded build info. */
function builtVersion(path) {
  if (!existsSync(path)) return undefined;
  try {
    const info = run('go', ['version', '-m', path]);
    const line = info.split('\n').find((l) => l.trim().startsWith('mod\t') || l.trim().startsWith('mod '));
    const [, module, version] = line ? line.trim().split(/\s+/) : [];
    return module === CONTOUR_MODULE ? version : undefined;
  } catch {
    return undefined;
  }
}

/** `go mod download -json module@version`: the module's directory in GOMODCACHE and its go.mod. */
function download(module, version) {
  const info = JSON.parse(run('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: peersDir }));
  if (info.Error) throw new Error(`go mod download ${module}@${version}: ${info.Error}`);
  return { dir: info.Dir, goMod: info.GoMod };
}

/** The version of `module` that a go.mod requires (a `require` line, in a block or alone). */
function requiredVersion(goMod, module) {
  const escaped = module.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, 'm').exec(readFileSync(goMod, 'utf8'));
  if (!match) throw new Error(`${goMod} does not require ${module}`);
  return match[1];
}

/** The CRD files of a Gateway API channel directory (`<group>_<plural>.yaml`; not its kustomization). */
function crdFiles(dir) {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml') && f.includes('_')).sort().map((f) => join(dir, f)) : [];
}

mkdirSync(bin, { recursive: true });
if (builtVersion(binary) !== CONTOUR_VERSION) {
  // Run outside any module (go install module@version ignores it anyway) with GOBIN pointing
  // into the cache, so nothing lands in ~/go/bin.
  run('go', ['install', `${CONTOUR_MODULE}/cmd/contour@${CONTOUR_VERSION}`], { cwd: peersDir, env: { ...process.env, GOBIN: bin } });
  const version = builtVersion(binary);
  if (version !== CONTOUR_VERSION) throw new Error(`${binary} reports module version ${version ?? 'none'}, expected ${CONTOUR_VERSION}`);
}

const contour = download(CONTOUR_MODULE, CONTOUR_VERSION);
const gatewayApiVersion = requiredVersion(contour.goMod, GATEWAY_API_MODULE);
const gatewayApi = download(GATEWAY_API_MODULE, gatewayApiVersion);
const manifest = {
  contourVersion: CONTOUR_VERSION,
  binary,
  contourModuleDir: contour.dir,
  contourCrds: join(contour.dir, 'examples', 'contour', '01-crds.yaml'),
  contourRbac: join(contour.dir, 'examples', 'contour', '02-role-contour.yaml'),
  gatewayApiVersion,
  gatewayApiModuleDir: gatewayApi.dir,
  gatewayApiCrds: {
    standard: crdFiles(join(gatewayApi.dir, 'config', 'crd', 'standard')),
    experimental: crdFiles(join(gatewayApi.dir, 'config', 'crd', 'experimental')),
  },
};
for (const path of [manifest.contourCrds, manifest.contourRbac]) if (!existsSync(path)) throw new Error(`expected ${path} in the module cache`);
if (manifest.gatewayApiCrds.standard.length === 0) throw new Error(`no Gateway API CRDs under ${gatewayApi.dir}/config/crd/standard`);
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);

console.log(`contour ${CONTOUR_VERSION}: ${binary}`);
console.log(`Contour CRDs: ${manifest.contourCrds}`);
console.log(`Gateway API ${gatewayApiVersion} CRDs: ${join(gatewayApi.dir, 'config', 'crd')}/{standard,experimental}`);
console.log(`manifest: ${manifestPath}`);
