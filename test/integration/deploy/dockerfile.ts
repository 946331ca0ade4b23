// Reads the repository's Dockerfile and .dockerignore the way Docker does, for the subset of the
// syntax they use (the gateway image test and the manifests test check the image without a Docker
// engine). Anything outside that subset is an error here rather than a silently wrong reading.
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

export const ROOT = join(__dirname, '..', '..', '..');

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Instructions by stage: continuation lines joined, comment and blank lines dropped (also inside continuations, as Docker does). */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const start = index;
    let line = lines[index] ?? '';
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && index + 1 < lines.length) {
      index++;
      const next = lines[index] ?? '';
      if (/^\s*#/.test(next)) {
        line = `${line.replace(/\\\s*$/, '')}\\`;
        continue;
      }
      line = `${line.replace(/\\\s*$/, '')} ${next.trim()}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (match === null) throw new Error(`Dockerfile:${start + 1}: not an instruction: ${line}`);
    const keyword = (match[1] as string).toUpperCase();
    const args = (match[2] as string).trim();
    if (keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (from === null) throw new Error(`Dockerfile:${start + 1}: FROM ${args}`);
      stages.push({ from: from[1] as string, name: from[2], instructions: [] });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (stage === undefined) throw new Error(`Dockerfile:${start + 1}: ${keyword} before FROM`);
    stage.instructions.push({ keyword, args, line: start + 1 });
  }
  return stages;
}

/** The JSON (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD; the shell form is refused (it needs /bin/sh and mangles signals). */
export function execForm(args: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`${what} is not in exec (JSON array) form: ${args}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) throw new Error(`${what} is not an array of strings: ${args}`);
  return parsed as string[];
}

export interface Copy {
  from: string | undefined;
  sources: string[];
  dest: string;
}

export function parseCopy(args: string): Copy {
  const words = args.split(/\s+/);
  let from: string | undefined;
  while (words[0]?.startsWith('--') === true) {
    const flag = words.shift() as string;
    const fromFlag = /^--from=(.+)$/.exec(flag);
    if (fromFlag === null) throw new Error(`COPY flag ${flag} is not supported here`);
    from = fromFlag[1];
  }
  if (words.length < 2 || words[0]?.startsWith('[') === true) throw new Error(`COPY ${args}: expected <src>... <dest>`);
  return { from, sources: words.slice(0, -1), dest: words[words.length - 1] as string };
}

export interface RuntimeImage {
  stage: Stage;
  /** uid and gid of USER (numeric, as the Dockerfile must give them). */
  user: { uid: number; gid: number };
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  healthcheck: { options: Record<string, string>; command: string[] };
  copies: Copy[];
}

/** The last stage, as the image it builds runs: USER, WORKDIR, ENV, ENTRYPOINT, CMD, HEALTHCHECK, its COPYs. */
export function runtimeImage(stages: readonly Stage[]): RuntimeImage {
  const stage = stages[stages.length - 1];
  if (stage === undefined) throw new Error('Dockerfile has no stage');
  const last = (keyword: string): Instruction | undefined => [...stage.instructions].reverse().find((i) => i.keyword === keyword);
  const user = last('USER');
  const ids = user === undefined ? null : /^(\d+):(\d+)$/.exec(user.args);
  if (ids === null) throw new Error(`runtime stage USER must be numeric uid:gid, got ${user?.args ?? '(none)'}`);
  const workdir = last('WORKDIR')?.args;
  if (workdir === undefined || !workdir.startsWith('/')) throw new Error(`runtime stage WORKDIR must be absolute, got ${workdir ?? '(none)'}`);
  const env: Record<string, string> = {};
  for (const instruction of stage.instructions.filter((i) => i.keyword === 'ENV')) {
    for (const pair of instruction.args.split(/\s+/)) {
      const kv = /^([A-Za-z_][A-Za-z0-9_]*)=([^"'\s]*)$/.exec(pair);
      if (kv === null) throw new Error(`Dockerfile:${instruction.line}: ENV ${instruction.args}: only unquoted KEY=value pairs are read here`);
      env[kv[1] as string] = kv[2] as string;
    }
  }
  const entrypoint = last('ENTRYPOINT');
  const cmd = last('CMD');
  const healthcheck = last('HEALTHCHECK');
  if (entrypoint === undefined) throw new Error('runtime stage has no ENTRYPOINT');
  if (healthcheck === undefined) throw new Error('runtime stage has no HEALTHCHECK');
  const check = /^((?:--[a-z-]+=\S+\s+)*)CMD\s+(.+)$/.exec(healthcheck.args);
  if (check === null) throw new Error(`HEALTHCHECK ${healthcheck.args}: expected [--option=value ...] CMD [...]`);
  const options = Object.fromEntries(
    (check[1] as string)
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((option) => option.slice(2).split('=') as [string, string]),
  );
  return {
    stage,
    user: { uid: Number(ids[1]), gid: Number(ids[2]) },
    workdir,
    env,
    entrypoint: execForm(entrypoint.args, 'ENTRYPOINT'),
    cmd: cmd === undefined ? [] : execForm(cmd.args, 'CMD'),
    healthcheck: { options, command: execForm(check[2] as string, 'HEALTHCHECK CMD') },
    copies: stage.instructions.filter((i) => i.keyword === 'COPY').map((i) => parseCopy(i.args)),
  };
}

export function readDockerfile(): Stage[] {
  return parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
}

/** Docker's glob for one .dockerignore pattern: `**` any path, `*` and `?` within one path element. */
function patternRegex(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/';
      source += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/**
 * Whether .dockerignore leaves a context path out: the last pattern that matches the path or one of
 * its parent directories decides, `!` patterns let a path back in.
 */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const include = line.startsWith('!');
      const pattern = posix.normalize(include ? line.slice(1) : line).replace(/^\/+/, '').replace(/\/+$/, '');
      return { include, regex: patternRegex(pattern) };
    });
  return (path: string) => {
    const parts = path.split('/');
    const prefixes = parts.map((_, index) => parts.slice(0, index + 1).join('/'));
    let excluded = false;
    for (const rule of rules) if (prefixes.some((prefix) => rule.regex.test(prefix))) excluded = !rule.include;
    return excluded;
  };
}
