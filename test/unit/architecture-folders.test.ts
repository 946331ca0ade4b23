// docs/ARCHITECTURE.md's folder table ("Pipeline and folders": folder, what lives there, may import)
// checked against the tree: every path it names exists, every source file of the repo falls under one
// of its rows, and every import of a file keeps to what its row's "may import" cell allows. Imports
// are read with the TypeScript compiler's pre-processor (type-only imports count, as in
// scripts/check-deps.mjs); the most specific row a file falls under is the one that rules it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '..', '..');
const SOURCE_EXTENSIONS = ['.ts', '.mjs', '.cjs', '.js'];
/** Folders that hold no source of ours: dependencies, build output, caches. */
const NOT_SOURCE = new Set(['node_modules', 'dist', 'coverage']);

/** What one phrase of a "may import" cell allows: repo paths (as in the first cell) and package names (a trailing `/`: a scope). */
interface Allowance {
  paths: string[];
  packages: string[];
}

const AWS_SIGNING = ['@aws-sdk/credential-provider-node', '@smithy/signature-v4', '@smithy/types'];

/**
 * The phrases the cells are written in, besides a path in backticks (a folder, a file or `folder/*.ts`,
 * which grants that path). A cell's grant is phrases separated by `,`, up to a `;`; what follows the
 * `;` and what stands in parentheses are remarks. A phrase not known fails the test, so the table
 * stays checkable. `zod` grants nothing to check: every folder may import it, and the table names it
 * where it is the point.
 */
const PHRASES: Record<string, Allowance | 'anything'> = {
  anything: 'anything',
  '—': { paths: [], packages: [] },
  'only itself': { paths: [], packages: [] },
  core: { paths: ['common/core/'], packages: [] },
  'common adapters': { paths: ['common/'], packages: [] },
  'AWS SDK': { paths: [], packages: ['@aws-sdk/', '@smithy/'] },
  'AWS credentials and signing': { paths: [], packages: AWS_SIGNING },
  gRPC: { paths: [], packages: ['@grpc/'] },
  'Kubernetes client': { paths: [], packages: ['@kubernetes/'] },
  zod: { paths: [], packages: [] },
};

/** Packages only the rows that name them may import (the rest — zod, pino, commander, … — are free). */
const RESTRICTED_PACKAGES = ['@aws-sdk/', '@smithy/', '@grpc/', '@kubernetes/'];

/** The DynamoDB SDK: the one table boundary (docs/ARCHITECTURE.md, "Store adapter"). */
const TABLE_SDK = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@aws-sdk/util-dynamodb'];
const TABLE_SDK_IMPORTERS = ['common/store/', 'infra/local/dynamo/', 'test/'];

interface FolderRow {
  /** The paths of the first cell: folders end in `/`, `*.ts` is a glob of one folder's files. */
  paths: string[];
  /** Undefined: anything. */
  allowed: Allowance | undefined;
  /** The raw cell, for messages. */
  mayImport: string;
}

/** The rows of the first table after the "Pipeline and folders" heading. */
function readFolderTable(markdown: string): FolderRow[] {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Pipeline and folders'));
  if (section === undefined) throw new Error('docs/ARCHITECTURE.md has no "Pipeline and folders" section');
  const lines = section.split('\n').filter((line) => line.startsWith('|'));
  const [header, rule, ...rows] = lines;
  if (header === undefined || rule === undefined || !/^\|\s*folder\s*\|.*\|\s*may import\s*\|$/.test(header)) {
    throw new Error(`the folder table's header is not "| folder | what lives there | may import |": ${header ?? '(none)'}`);
  }
  return rows.map((line) => {
    const cells = line.split('|').slice(1, -1).map((cell) => cell.trim());
    if (cells.length !== 3) throw new Error(`a folder table row without three cells: ${line}`);
    const [folders = '', , mayImport = ''] = cells;
    const paths = [...folders.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
    if (paths.length === 0) throw new Error(`a folder table row naming no path: ${line}`);
    return { paths, allowed: allowanceOf(mayImport), mayImport };
  });
}

function allowanceOf(cell: string): Allowance | undefined {
  const phrases = (cell.split(';')[0] ?? '')
    .replace(/\([^)]*\)/g, '')
    .split(',')
    .map((phrase) => phrase.trim())
    .filter((phrase) => phrase !== '');
  const allowed: Allowance = { paths: [], packages: [] };
  for (const phrase of phrases) {
    const path = /^`([^`]+)`$/.exec(phrase)?.[1];
    if (path !== undefined) {
      allowed.paths.push(path);
      continue;
    }
    const meaning = PHRASES[phrase];
    if (meaning === undefined) throw new Error(`"may import" phrase not understood: "${phrase}" (in "${cell}"); known: ${Object.keys(PHRASES).join(', ')}`);
    if (meaning === 'anything') return undefined;
    allowed.paths.push(...meaning.paths);
    allowed.packages.push(...meaning.packages);
  }
  return allowed;
}

/** Does `file` (repo-relative, `/`-separated) fall under `path`? */
function under(file: string, path: string): boolean {
  if (path.endsWith('/*.ts')) {
    const folder = path.slice(0, -'*.ts'.length);
    return file.startsWith(folder) && !file.slice(folder.length).includes('/') && file.endsWith('.ts');
  }
  return path.endsWith('/') ? file.startsWith(path) : file === path;
}

/** How specific a path is: a file beats a glob beats its folder; deeper beats shallower. */
function specificity(path: string): number {
  return path.length + (path.endsWith('/') ? 0 : 1000);
}

/** The row that rules `file`: the one with the most specific path it falls under. */
function rowOf(rows: readonly FolderRow[], file: string): { row: FolderRow; path: string } | undefined {
  let best: { row: FolderRow; path: string } | undefined;
  for (const row of rows) {
    for (const path of row.paths) {
      if (under(file, path) && (best === undefined || specificity(path) > specificity(best.path))) best = { row, path };
    }
  }
  return best;
}

function toRepoPath(absolute: string): string {
  return relative(ROOT, absolute).split(sep).join('/');
}

function sourceFiles(folder = ROOT): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || NOT_SOURCE.has(entry.name)) continue;
    const path = join(folder, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(path));
    else if (folder !== ROOT && SOURCE_EXTENSIONS.some((extension) => entry.name.endsWith(extension))) found.push(toRepoPath(path));
  }
  return found;
}

/** A relative import's file: TypeScript's resolution of extensionless and folder (index) imports. */
function resolveRelative(fromFile: string, specifier: string): string | undefined {
  const base = resolve(ROOT, dirname(fromFile), specifier);
  const candidates = [base, ...SOURCE_EXTENSIONS.map((extension) => base + extension), ...SOURCE_EXTENSIONS.map((extension) => join(base, `index${extension}`))];
  const found = candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
  return found === undefined ? undefined : toRepoPath(found);
}

function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

const NODE_BUILTINS = new Set(builtinModules);

/** Every way `file` breaks its row's "may import" cell (or the table boundary), one message each. */
function importViolations(rows: readonly FolderRow[], file: string, text: string): string[] {
  const ruled = rowOf(rows, file);
  if (ruled === undefined) return [`${file}: under no row of the folder table`];
  const violations: string[] = [];
  const { allowed } = ruled.row;
  for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
    if (specifier.startsWith('.')) {
      const target = resolveRelative(file, specifier);
      if (target === undefined) {
        violations.push(`${file}: import '${specifier}' resolves to no file`);
        continue;
      }
      if (allowed === undefined || under(target, ruled.path) || ruled.row.paths.some((path) => under(target, path))) continue;
      if (!allowed.paths.some((path) => under(target, path))) {
        violations.push(`${file} (row ${ruled.path}: "${ruled.row.mayImport}") imports ${target}`);
      }
      continue;
    }
    if (specifier.startsWith('node:') || NODE_BUILTINS.has(packageOf(specifier))) continue;
    const name = packageOf(specifier);
    if (TABLE_SDK.includes(name) && !TABLE_SDK_IMPORTERS.some((path) => file.startsWith(path))) {
      violations.push(`${file} imports the DynamoDB SDK (${name}) outside ${TABLE_SDK_IMPORTERS.join(', ')}`);
    }
    if (allowed === undefined || !RESTRICTED_PACKAGES.some((prefix) => name.startsWith(prefix))) continue;
    if (!allowed.packages.some((prefix) => name === prefix || (prefix.endsWith('/') && name.startsWith(prefix)))) {
      violations.push(`${file} (row ${ruled.path}: "${ruled.row.mayImport}") imports ${name}`);
    }
  }
  return violations;
}

describe('docs/ARCHITECTURE.md, "Pipeline and folders": the folder table against the tree', () => {
  const rows = readFolderTable(readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8'));
  const files = sourceFiles();

  it('reads the table', () => {
    expect(rows.length).toBeGreaterThan(5);
    expect(files.length).toBeGreaterThan(100);
  });

  it('names only folders and files that exist', () => {
    const missing = rows.flatMap((row) => row.paths).filter((path) => {
      if (path.endsWith('/*.ts')) return !files.some((file) => under(file, path));
      const absolute = join(ROOT, path);
      return path.endsWith('/') ? !(existsSync(absolute) && statSync(absolute).isDirectory()) : !existsSync(absolute);
    });
    expect(missing).toEqual([]);
  });

  it('lists every top-level source folder, and every source file falls under a row', () => {
    const topLevel = [...new Set(files.map((file) => file.split('/')[0] ?? file))];
    const unlisted = topLevel.filter((folder) => !rows.some((row) => row.paths.some((path) => path.startsWith(`${folder}/`))));
    expect(unlisted).toEqual([]);
    expect(files.filter((file) => rowOf(rows, file) === undefined)).toEqual([]);
  });

  it('holds to every row\'s "may import" and to the one table boundary', () => {
    const violations = files.flatMap((file) => importViolations(rows, file, readFileSync(join(ROOT, file), 'utf8')));
    expect(violations).toEqual([]);
  });
});
