// Bundles the xds-programmed CLI (common/cli/bin.ts) with esbuild into CommonJS for node 20 under
// dist/cli/, so the bin shim starts it with plain node instead of compiling TypeScript through tsx on
// every run (bench/cli-startup.ts measures both). Run by `npm run build:cli` and by `prepare`, so
// `npm ci` on a fresh clone leaves the bundle in place.
// The entry, dist/cli/xds-programmed.cjs, holds commander and the CLI's own code. What only some
// commands need is bundled apart and required when a command needs it (main.ts loads them with
// import()): node compiles a whole file before it runs a line, and one 2 MB file (zod, Kubernetes'
// client, the AWS credential chain) costs about 60 ms more than `--help` should take. Each lazy module
// is bundled once, and every other file requires it (never a copy of its own: instanceof of its
// errors must hold across files).
// Lazy files are CommonJS loaded with import(): node finds their named exports in esbuild's export
// pattern, so each is built from ES exports (yaml's from a one-line re-export).
// Beside them, xds-programmed.inputs.json lists the repository sources the bundles were built from:
// the shim runs the bundle only while none of them is newer, so an edited source is never shadowed by
// an old bundle (it falls back to tsx until the next build).
import { build } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const cli = join(root, 'common', 'cli');
const outDir = join(root, 'dist', 'cli');

/** Lazily loaded modules: what main.ts (or another of them) imports → the file it is bundled into. */
const LAZY = new Map([
  [join(cli, 'query-client.ts'), 'query-client.cjs'],
  [join(cli, 'kube-generation.ts'), 'kube.cjs'],
  [join(cli, 'wait.ts'), 'wait.cjs'],
  [join(cli, 'sigv4.ts'), 'sigv4.cjs'],
  ['yaml', 'yaml.cjs'],
]);

/** Imports of a lazy module become a require of its file, except inside the bundle of that module. */
function lazyModules(ownEntry) {
  return {
    name: 'lazy-modules',
    setup(builder) {
      builder.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        const key = args.path.startsWith('.') ? join(args.resolveDir, `${args.path}.ts`) : args.path;
        const file = LAZY.get(key);
        if (file === undefined || key === ownEntry) return undefined;
        return { path: `./${file}`, external: true };
      });
    },
  };
}

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Minified: less for node to parse before the first line is printed. Names kept for readable errors.
  minify: true,
  keepNames: true,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
};

// Written in place (not removed first): a CLI started meanwhile finds every file it may require.
mkdirSync(outDir, { recursive: true });
const jobs = [
  { entry: join(cli, 'bin.ts'), key: join(cli, 'bin.ts'), file: 'xds-programmed.cjs' },
  ...[...LAZY].map(([key, file]) => ({ entry: key === 'yaml' ? 'yaml' : key, key, file })),
];
const results = await Promise.all(
  jobs.map(({ entry, key, file }) =>
    build({
      ...common,
      ...(entry === 'yaml' ? { stdin: { contents: "export { stringify } from 'yaml';", resolveDir: root, loader: 'js' } } : { entryPoints: [entry] }),
      outfile: join(outDir, file),
      plugins: [lazyModules(key)],
      ...(file === 'xds-programmed.cjs' ? { banner: { js: '#!/usr/bin/env node' } } : {}),
    }),
  ),
);

const sources = [...new Set(results.flatMap((result) => Object.keys(result.metafile.inputs)))]
  .filter((input) => !input.includes('node_modules/') && input !== '<stdin>')
  .map((input) => relative(root, join(root, input)))
  .sort();
writeFileSync(join(outDir, 'xds-programmed.inputs.json'), `${JSON.stringify({ sources }, null, 2)}\n`);
const sizes = results.map((result, i) => {
  const [, output] = Object.entries(result.metafile.outputs).find(([path]) => path.endsWith('.cjs')) ?? [];
  return `${jobs[i]?.file} ${Math.round((output?.bytes ?? 0) / 1024)} KiB`;
});
console.log(`built the CLI into ${relative(root, outDir)}/ (${sizes.join(', ')}; ${sources.length} repository sources)`);
