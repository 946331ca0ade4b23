// Zips each esbuild bundle dist/functions/<name>/ (index.js, index.js.map) into
// .build/functions/<name>.zip, the artifacts serverless.yml points at.
//   npm run build && npx tsx infra/serverless/zip-functions.ts [--dist dist/functions] [--out .build/functions]
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { zipEntries } from './zip';

export function zipFunctionBundles(distDir: string, outDir: string): string[] {
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const name of readdirSync(distDir).sort()) {
    const dir = join(distDir, name);
    if (!statSync(dir).isDirectory()) continue;
    const files = readdirSync(dir).filter((file) => statSync(join(dir, file)).isFile());
    if (!files.includes('index.js')) throw new Error(`${dir} has no index.js: run npm run build first`);
    const zip = zipEntries(files.map((file) => ({ name: file, data: readFileSync(join(dir, file)) })));
    const target = join(outDir, `${name}.zip`);
    writeFileSync(target, zip);
    written.push(target);
  }
  return written;
}

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(name);
  return index >= 0 && process.argv[index + 1] !== undefined ? (process.argv[index + 1] as string) : fallback;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]).endsWith('zip-functions.ts')) {
  const written = zipFunctionBundles(option('--dist', 'dist/functions'), option('--out', '.build/functions'));
  console.log(`zipped ${written.length} function bundle(s): ${written.join(', ')}`);
}
