// The gateway image (Dockerfile) without a Docker engine. The build stage is replayed on the build
// context .dockerignore leaves (git's files minus the ignored ones): its COPYs into a stand-in for
// WORKDIR, `npm ci` replaced by the tree `npm ci` of the same lockfile already installed (as in
// serverless-package.test.ts), its other RUNs run as written. The runtime stage's COPYs then lay
// out a root filesystem holding only what they copy, and the ENTRYPOINT runs there as the image
// would run it: the same argv, chrooted into that root, mounted read-only (as
// readOnlyRootFilesystem does; the host's /usr and /etc, also read-only, stand in for the base
// image), in WORKDIR, as USER. It serves a simulated Envoy from a local control plane into
// dynalite; the HEALTHCHECK command, run the same way, passes while it runs and fails once it has
// stopped. Needs root (a mount namespace and chroot), as CI runs.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative } from 'node:path';

import type { VersionLog } from '../../../common/core';
import { openTable, type DynamoEventStore } from '../../../common/store';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import { ALL_TYPES, adsSpec, envoyAnswers, eventually, newFleet, startDynamoAndControlPlane, testLogger } from '../gateway/helpers';
import { ROOT, dockerignore, parseCopy, readDockerfile, runtimeImage, type RuntimeImage, type Stage } from './dockerfile';

const TABLE = 'gw-image';
/** Docker's PATH for an image that sets none (the node images do not change it). */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Context paths (relative, POSIX) as `docker build .` sends them: git's files (tracked and new, not git-ignored) minus .dockerignore's. */
function buildContext(): string[] {
  const ignored = dockerignore(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
  return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
    .toString('utf8')
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isFile() && !ignored(file));
}

/** Where an absolute path inside a stage lands on this machine, given where the stage's root is. */
const onHost = (stageRoot: string, path: string): string => join(stageRoot, path);

/** COPY <src>... <dest> from the context: a directory's files into dest, a file to dest (or into it if dest ends in /). */
function copyFromContext(context: readonly string[], sources: readonly string[], dest: string, stageRoot: string): void {
  for (const source of sources) {
    const clean = posix.normalize(source).replace(/\/+$/, '').replace(/^\.\//, '');
    const files = clean === '.' ? [...context] : context.filter((file) => file === clean || file.startsWith(`${clean}/`));
    if (files.length === 0) throw new Error(`COPY ${source}: not in the build context (.dockerignore?)`);
    for (const file of files) {
      const target = file === clean ? (dest.endsWith('/') ? posix.join(dest, posix.basename(file)) : dest) : posix.join(dest, file.slice(clean.length + 1));
      mkdirSync(dirname(onHost(stageRoot, target)), { recursive: true });
      cpSync(join(ROOT, file), onHost(stageRoot, target));
    }
  }
}

/** Replays the build stage in `stageRoot` (its filesystem root); returns its WORKDIR. */
function replayBuildStage(stage: Stage, stageRoot: string, home: string): string {
  const context = buildContext();
  let workdir = '/';
  for (const instruction of stage.instructions) {
    if (instruction.keyword === 'WORKDIR') {
      workdir = posix.resolve(workdir, instruction.args);
      mkdirSync(onHost(stageRoot, workdir), { recursive: true });
    } else if (instruction.keyword === 'COPY') {
      const copy = parseCopy(instruction.args);
      if (copy.from !== undefined) throw new Error(`build stage COPY --from is not replayed here: ${instruction.args}`);
      copyFromContext(context, copy.sources, posix.resolve(workdir, copy.dest) + (copy.dest.endsWith('/') ? '/' : ''), stageRoot);
    } else if (instruction.keyword === 'RUN') {
      if (/^npm ci(\s|$)/.test(instruction.args)) {
        // The tree `npm ci` of this package-lock.json installs (.ci/run's first step), instead of a
        // second install from the registry.
        symlinkSync(join(ROOT, 'node_modules'), onHost(stageRoot, posix.join(workdir, 'node_modules')), 'dir');
        continue;
      }
      execFileSync('/bin/sh', ['-c', instruction.args], { cwd: onHost(stageRoot, workdir), env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home }, stdio: 'pipe' });
    } else if (!['ENV', 'ARG', 'LABEL'].includes(instruction.keyword)) {
      throw new Error(`build stage ${instruction.keyword} is not replayed here`);
    }
  }
  return workdir;
}

/** The runtime stage's COPY --from=<build> into `rootfs`: only those files; its RUNs may only remove base-image files. */
function layOutRuntime(image: RuntimeImage, buildName: string, buildRoot: string, rootfs: string): void {
  for (const instruction of image.stage.instructions) {
    if (instruction.keyword === 'RUN' && !/^rm -rf /.test(instruction.args)) throw new Error(`runtime stage RUN is not replayed here: ${instruction.args}`);
    if (instruction.keyword === 'WORKDIR') mkdirSync(onHost(rootfs, instruction.args), { recursive: true });
  }
  for (const copy of image.copies) {
    if (copy.from !== buildName) throw new Error(`runtime stage COPY must come from the build stage (--from=${buildName}): ${copy.sources.join(' ')}`);
    for (const source of copy.sources) {
      const from = onHost(buildRoot, source);
      if (!existsSync(from)) throw new Error(`COPY --from=${buildName} ${source}: the build stage did not produce it`);
      const isDir = statSync(from).isDirectory();
      const target = isDir || !copy.dest.endsWith('/') ? copy.dest : posix.join(copy.dest, posix.basename(source));
      mkdirSync(dirname(onHost(rootfs, target)), { recursive: true });
      cpSync(from, onHost(rootfs, target), { recursive: true, dereference: true });
    }
  }
}

/** Every file under `dir`, relative. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? filesUnder(dir, path) : [path];
  });
}

// In a private mount namespace: the root bound onto itself, /usr and /etc (the base image's node and
// system files) and /proc, /dev bound in, every bind but /proc and /dev read-only; then chroot to it,
// change to WORKDIR and drop to USER (unshare --root/--wd/--setuid/--setgid) and exec the argv.
const SANDBOX = `set -e
R=$1; U=$2; G=$3; W=$4; shift 4
mount --bind "$R" "$R"
for d in usr etc; do mount --rbind "/$d" "$R/$d"; mount -o remount,bind,ro "$R/$d"; done
mount --rbind /proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -o remount,bind,ro "$R"
exec unshare --root="$R" --wd="$W" --setuid="$U" --setgid="$G" -- "$@"
`;

function inImage(image: RuntimeImage, rootfs: string, argv: readonly string[], env: Record<string, string>): ChildProcess {
  return spawn('unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', SANDBOX, 'sandbox', rootfs, String(image.user.uid), String(image.user.gid), image.workdir, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // As Docker starts a container: the image's ENV over a PATH, HOME=/ (USER has no passwd entry).
    env: { PATH: IMAGE_PATH, HOME: '/', HOSTNAME: 'xds-gateway-image-test', ...image.env, ...env },
  });
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the gateway image (Dockerfile), built and run without a Docker engine', () => {
  const stages = readDockerfile();
  const image = runtimeImage(stages);
  const build = stages.find((stage) => stage.name !== undefined && image.copies.some((copy) => copy.from === stage.name));
  let dir: string;
  let rootfs: string;

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root: it runs the image in a mount namespace with a chroot (unshare --mount, --root)');
    if (build === undefined) throw new Error('the runtime stage copies from no named build stage');
    dir = mkdtempSync(join(tmpdir(), 'gateway-image-'));
    mkdirSync(join(dir, 'home'));
    const buildRoot = join(dir, 'build');
    replayBuildStage(build, buildRoot, join(dir, 'home'));
    rootfs = join(dir, 'rootfs');
    layOutRuntime(image, build.name as string, buildRoot, rootfs);
    // Mount points for the sandbox, and the base image's merged-/usr links.
    for (const mount of ['usr', 'etc', 'proc', 'dev', 'tmp']) mkdirSync(join(rootfs, mount), { recursive: true });
    for (const link of ['bin', 'lib', 'lib64', 'sbin']) symlinkSync(`usr/${link}`, join(rootfs, link));
    // The image's files as COPY leaves them: root's, readable by USER, writable by nobody else.
    execFileSync('chmod', ['-R', 'u=rwX,go=rX', rootfs]);
    chmodSync(join(rootfs, 'tmp'), 0o1777);
  }, 180_000);
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('the runtime stage: the build stage\'s pinned Node 24 image, a numeric non-root USER, exec-form ENTRYPOINT and a node HEALTHCHECK', () => {
    const runtime = stages[stages.length - 1] as Stage;
    expect(runtime.from).toMatch(/^node:24\.\d+\.\d+-[a-z]+-slim$/);
    expect(build?.from).toBe(runtime.from);
    expect(image.user.uid).toBeGreaterThan(0);
    expect(image.user.gid).toBeGreaterThan(0);
    expect(image.entrypoint[0]).toBe('node');
    expect(image.cmd).toEqual([]);
    expect(image.healthcheck.command[0]).toBe('node');
    expect(image.healthcheck.command.join(' ')).not.toMatch(/\b(curl|wget)\b/);
    expect(image.healthcheck.command.join(' ')).toContain('/healthz');
  });

  it('the image holds the bundle and @grpc/grpc-js-xds\'s package.json and .proto files, nothing else', () => {
    const files = filesUnder(rootfs).filter((file) => !/^(usr|etc|proc|dev|tmp|bin|lib|lib64|sbin)(\/|$)/.test(file));
    const script = image.entrypoint.find((arg) => arg.endsWith('.js'));
    expect(script).toBeDefined();
    expect(files).toContain(relative('/', script as string));
    const xds = 'app/node_modules/@grpc/grpc-js-xds/';
    expect(files.filter((file) => !file.startsWith(xds)).sort()).toEqual(['app/xds-gateway/main.js', 'app/xds-gateway/main.js.map']);
    expect(files.filter((file) => file.startsWith(xds) && !file.startsWith(`${xds}deps/`))).toEqual([`${xds}package.json`]);
    expect(files.filter((file) => file.startsWith(`${xds}deps/`) && !file.endsWith('.proto'))).toEqual([]);
  });

  describe('run as the image runs it, against a local control plane and dynalite', () => {
    let dynamo: LocalDynamo;
    let source: InMemoryRouteSource;
    let controlPlane: ControlPlane;
    let store: DynamoEventStore;
    let versionLog: VersionLog;
    let destroyStore: () => void;
    let fleet: Fleet | undefined;
    let gateway: ChildProcess | undefined;
    let env: Record<string, string>;

    beforeAll(async () => {
      ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
      const table = openTable({ tableName: TABLE, client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } }, logger: testLogger });
      store = table.store;
      versionLog = table.versionLog;
      destroyStore = () => table.close();
      // Configuration by environment, as gateway.yaml gives it; local addresses and plaintext
      // instead of the cluster's Services and Secrets. Ops on all interfaces, as in the pod.
      env = {
        INSTANCE_ID: 'xds-gateway-image-0',
        XDS_LISTEN_HOST: '127.0.0.1',
        XDS_LISTEN_PORT: '0',
        OPS_HOST: '0.0.0.0',
        OPS_PORT: String(await freePort()),
        INSECURE_PLAINTEXT: 'true',
        UPSTREAM_TARGET: `127.0.0.1:${controlPlane.port}`,
        UPSTREAM_INSECURE_PLAINTEXT: 'true',
        TABLE_NAME: TABLE,
        DYNAMODB_ENDPOINT: dynamo.endpoint,
        CREATE_TABLE: 'true',
        AWS_REGION: 'us-east-1',
        FLUSH_INTERVAL_MS: '20',
        SHUTDOWN_GRACE_MS: '0',
        LOG_LEVEL: 'info',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      };
    }, 60_000);
    afterAll(async () => {
      fleet?.close();
      if (gateway !== undefined && gateway.exitCode === null && gateway.signalCode === null) gateway.kill('SIGKILL');
      destroyStore?.();
      await controlPlane?.close();
      await source?.close();
      await dynamo?.close();
    });

    const healthcheck = async (): Promise<number | null> => (await exitOf(inImage(image, rootfs, image.healthcheck.command, env))).code;

    it('ENTRYPOINT serves an Envoy on a read-only root as USER; HEALTHCHECK passes, then fails once it stopped', async () => {
      gateway = inImage(image, rootfs, [...image.entrypoint, ...image.cmd], env);
      const exited = exitOf(gateway);
      const ports = await new Promise<{ xdsPort: number; opsPort: number }>((resolve, reject) => {
        let stdout = '';
        gateway?.stdout?.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const line = stdout.split('\n').find((l) => l.startsWith('{'));
          if (line !== undefined && stdout.includes('\n')) resolve(JSON.parse(line) as { xdsPort: number; opsPort: number });
        });
        void exited.then((result) => reject(new Error(`the gateway exited ${String(result.code)} before serving:\n${result.stderr.slice(-3000)}`)));
      });
      expect(ports.opsPort).toBe(Number(env['OPS_PORT']));

      fleet = newFleet(ports.xdsPort);
      fleet.addMany(1, adsSpec({ node: () => ({ id: 'image-envoy', cluster: 'edge' }) }), 0);
      fleet.connectAll();
      // With the image's defaults (the fleet-size path) the Envoy's state is written on its connect and
      // its ACKs go to the lineage's version log: an ACK of every type, wherever the table keeps it.
      await eventually(async () => {
        const acked = new Set((await envoyAnswers(store, versionLog, 'image-envoy', ALL_TYPES)).filter((answer) => answer.outcome === 'ACK').map((answer) => answer.typeUrl));
        return ALL_TYPES.every((type) => acked.has(type));
      }, 'the Envoy served through the image\'s gateway, its ACKs recorded in dynalite');
      await eventually(async () => (await fetch(`http://127.0.0.1:${ports.opsPort}/readyz`)).status === 200, 'the gateway ready');

      expect(await healthcheck()).toBe(0);

      fleet.close();
      fleet = undefined;
      gateway.kill('SIGTERM');
      const result = await exited;
      expect(result.code).toBe(0);
      // Nothing tried to write to the read-only root (a swallowed write would still be logged).
      expect(result.stderr).not.toMatch(/EROFS|EACCES|read-only file system/i);
      expect(await healthcheck()).not.toBe(0);
    }, 120_000);
  });
});
