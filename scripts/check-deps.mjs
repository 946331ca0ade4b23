#!/usr/bin/env node
// `npm run check:deps`: dependency-cruiser over the repo's TypeScript with .dependency-cruiser.cjs
// (no import cycles). Calls dependency-cruiser's API rather than its `depcruise` CLI, which refuses
// to start on Node 20 (its own engines check) although this project supports Node 20.19+.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, format } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs'));
const folders = ['common', 'functions', 'xds-gateway', 'infra', 'bench', 'scripts', 'test'];
const options = { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true };
const result = await cruise(folders, options, {}, { tsConfig: extractTSConfig(config.options.tsConfig.fileName) });
const report = await format(result.output, { outputType: 'err' });
process.stdout.write(report.output);
process.exitCode = report.exitCode;
