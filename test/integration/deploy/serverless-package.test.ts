// README.md's deploy steps, run as written: the commands of its "Deploying" → "Functions and table"
// block that need no AWS account (install, `npm run package`: build, zip, `serverless package`
// offline) run verbatim in a clean copy of the repository. Then checks on what they produced: the
// artifacts serverless points at (each zip holds index.js bundled for the Lambda runtime, and the
// handler resolves), and the CloudFormation template (runtime, resources, reserved concurrency on
// every function, function URL auth, stream mappings, IAM limited to the table, its index and its
// stream).
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { tableDefinition } from '../../../common/store';
import { readZipEntries } from '../../../infra/serverless/zip';
import { CONVERGENCE_BATCH_SIZE, STATUS_BATCH_SIZE } from '../../../infra/local/system/functions';

const ROOT = join(__dirname, '..', '..', '..');
// Every handler is bundled for real, so a handler that does not bundle fails this test.
const FUNCTIONS = ['convergence', 'expire', 'resync', 'status', 'query'];
// The Lambda runtime serverless.yml deploys on, and the esbuild target scripts/build.mjs derives
// from it (docs/FUNCTIONS.md, "Runtime and framework").
const RUNTIME = 'nodejs24.x';
const TARGET = 'node24';

function run(command: string, args: string[], opts: { cwd?: string; env: Record<string, string>; inherit?: boolean }, timeoutMs = 150_000): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = opts.inherit === false ? opts.env : { ...process.env, ...opts.env };
  return new Promise((resolve) => {
    execFile(command, args, { cwd: opts.cwd ?? ROOT, env, timeout: timeoutMs, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** The commands of README.md's "Functions and table" code block: continuation lines joined, comments and blank lines dropped. */
function readmeDeployCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((part) => part.startsWith('Deploying\n'));
  if (section === undefined) throw new Error('README.md has no "## Deploying" section');
  const bullet = section.split(/^- /m).find((part) => part.startsWith('**Functions and table**'));
  if (bullet === undefined) throw new Error('README.md\'s "Deploying" has no "Functions and table" bullet');
  const block = /```sh\n([\s\S]*?)\n\s*```/.exec(bullet)?.[1];
  if (block === undefined) throw new Error('README.md\'s "Functions and table" bullet has no ```sh block');
  const commands: string[] = [];
  let pending = '';
  for (const line of block.split('\n').map((l) => l.trim())) {
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) pending += `${line.slice(0, -1).trimEnd()} `;
    else {
      commands.push(pending + line);
      pending = '';
    }
  }
  return commands;
}

/** A copy of the repository as git would check it out (tracked and new, not ignored, files): no dist/, .build/ or .serverless/ left over. */
function cleanCopy(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT }).toString('utf8').split('\0');
  for (const file of files) {
    const from = join(ROOT, file);
    if (file === '' || !existsSync(from) || !statSync(from).isFile()) continue; // deleted in the work tree, or a submodule
    mkdirSync(dirname(join(to, file)), { recursive: true });
    copyFileSync(from, join(to, file));
  }
}

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: unknown };
interface Statement {
  Effect: string;
  Action: string[];
  Resource: unknown;
}

describe('README deploy steps: npm run package (offline)', () => {
  let dir: string;
  let copy: string;
  let stage: string;
  let region: string;
  let service: string;
  let resources: Record<string, Resource>;
  let artifacts: Record<string, string>;

  beforeAll(async () => {
    const offline = readmeDeployCommands().filter((command) => command.startsWith('npm '));
    // Install, then package; everything after them in the block needs an AWS account.
    expect(offline).toEqual(['npm ci', expect.stringMatching(/^npm run package -- --stage [a-z][a-z0-9-]* --region [a-z]+-[a-z]+-\d$/)]);
    const packageCommand = offline[1] as string;
    stage = /--stage (\S+)/.exec(packageCommand)?.[1] as string;
    region = /--region (\S+)/.exec(packageCommand)?.[1] as string;
    service = `xds-programmed-${stage}`;

    dir = mkdtempSync(join(tmpdir(), 'sls-package-'));
    copy = join(dir, 'repo');
    cleanCopy(copy);
    // `npm ci`: this suite runs after `npm ci` of the same package-lock.json (.ci/run's first step),
    // so the copy gets that tree instead of a second install (minutes and the registry, not offline).
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
    mkdirSync(join(dir, 'home'));
    const packaged = await run('/bin/sh', ['-c', packageCommand], {
      cwd: copy,
      inherit: false,
      // Only PATH (node, npm) and a fresh HOME; no AWS credentials or profile: packaging must not need AWS.
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: join(dir, 'home') },
    });
    if (packaged.code !== 0) throw new Error(`${packageCommand} failed in a clean copy:\n${packaged.stdout}\n${packaged.stderr}`);
    resources = (JSON.parse(readFileSync(join(copy, '.serverless', 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, Resource> }).Resources;
    const state = JSON.parse(readFileSync(join(copy, '.serverless', 'serverless-state.json'), 'utf8')) as { service: { functions: Record<string, { package?: { artifact?: string } }> } };
    artifacts = Object.fromEntries(Object.entries(state.service.functions).map(([name, fn]) => [name, join(copy, fn.package?.artifact ?? `(no artifact for ${name})`)]));
    // Each artifact unpacked as Lambda unpacks it (into unzipped/<function>/), for the tests below.
    for (const [name, artifact] of Object.entries(artifacts)) {
      if (!existsSync(artifact)) continue;
      mkdirSync(join(dir, 'unzipped', name), { recursive: true });
      for (const entry of readZipEntries(readFileSync(artifact))) writeFileSync(join(dir, 'unzipped', name, entry.name), entry.data);
    }
  }, 240_000);
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);

  it(`declares the five functions on ${RUNTIME}, each with its own role and the table name`, () => {
    const functions = ofType('AWS::Lambda::Function');
    expect(functions.map(([, f]) => f.Properties['FunctionName']).sort()).toEqual(['convergence', 'expire', 'query', 'resync', 'status'].map((n) => `${service}-${n}`));
    for (const [name, fn] of functions) {
      expect(fn.Properties['Runtime']).toBe(RUNTIME);
      expect(fn.Properties['Handler']).toBe('index.handler');
      const role = name.replace('LambdaFunction', 'Role');
      expect(fn.Properties['Role']).toEqual({ 'Fn::GetAtt': [role, 'Arn'] });
      const variables = (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
      expect(variables['TABLE_NAME']).toBe(service);
      if (/^(Convergence|Expire|Resync)/.test(name)) expect(variables).toMatchObject({ ENVOY_TTL_MS: '300000', ACK_TIMEOUT_MS: '30000', AGGREGATE_SHARDS: '16' });
    }
  });

  it('every function has reserved concurrency (its cost ceiling), at the defaults docs/SECURITY.md gives', () => {
    const reserved = Object.fromEntries(ofType('AWS::Lambda::Function').map(([, fn]) => [String(fn.Properties['FunctionName']).replace(`${service}-`, ''), fn.Properties['ReservedConcurrentExecutions']]));
    expect(reserved).toEqual({ convergence: 10, status: 10, expire: 1, resync: 1, query: 10 });
    // The documented table must say the same (a default changed in one place only fails here).
    const security = readFileSync(join(ROOT, 'docs', 'SECURITY.md'), 'utf8');
    for (const [name, value] of Object.entries(reserved)) expect(security).toMatch(new RegExp(`\\| \`${name}\` \\| \`${name}Concurrency\` \\| ${String(value)} \\|`));
  });

  it('the table: pk/sk, the Envoy state index of common/store, stream NEW_AND_OLD_IMAGES, TTL on ttl, PITR, on demand', () => {
    const table = resources['EventTable'] as Resource & { DeletionPolicy?: string };
    expect(table.Type).toBe('AWS::DynamoDB::Table');
    const expected = tableDefinition(service);
    expect(table.Properties).toMatchObject({
      TableName: service,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: expected.KeySchema,
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(new Set(table.Properties['AttributeDefinitions'] as unknown[])).toEqual(new Set(expected.AttributeDefinitions));
    expect(table.Properties['GlobalSecondaryIndexes']).toEqual(expected.GlobalSecondaryIndexes);
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('the query function URL requires IAM auth', () => {
    const urls = ofType('AWS::Lambda::Url');
    expect(urls).toHaveLength(1);
    expect(urls[0]?.[1].Properties).toMatchObject({ AuthType: 'AWS_IAM', TargetFunctionArn: { 'Fn::GetAtt': ['QueryLambdaFunction', 'Arn'] } });
    // No public invoke permission (that is what authorizer: none would add).
    expect(ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties['FunctionUrlAuthType'] === 'NONE')).toHaveLength(0);
  });

  it('stream mappings: batch size, window, bisect, retries, partial failures, failure queue, filters', () => {
    const mappings = Object.fromEntries(ofType('AWS::Lambda::EventSourceMapping').map(([name, r]) => [name, r.Properties]));
    expect(Object.keys(mappings).sort()).toEqual(['ConvergenceEventSourceMappingDynamodbEventTable', 'StatusEventSourceMappingDynamodbEventTable']);
    for (const mapping of Object.values(mappings)) {
      expect(mapping).toMatchObject({
        EventSourceArn: { 'Fn::GetAtt': ['EventTable', 'StreamArn'] },
        MaximumBatchingWindowInSeconds: 0, // the AWS default: ~4 polls/s per shard (serverless.yml, docs/bench/README.md)
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['StreamFailureQueue', 'Arn'] } } },
      });
    }
    const convergence = mappings['ConvergenceEventSourceMappingDynamodbEventTable'] as { BatchSize: number; FilterCriteria: { Filters: { Pattern: string }[] } };
    // The local system's mappings use the same sizes (infra/local/system/functions.ts).
    expect(convergence.BatchSize).toBe(CONVERGENCE_BATCH_SIZE);
    // State changes, object generations and PROGRESS items only: not the event log, not convergence's own items.
    expect(convergence.FilterCriteria.Filters.map((f) => JSON.parse(f.Pattern) as unknown)).toEqual([
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'ENVOY#' }] }, sk: { S: ['STATE'] } } } },
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'LINEAGE#' }] }, sk: { S: ['STATE'] } } } },
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'OBJECT#' }] } } } },
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'AGG#' }] }, sk: { S: ['PROGRESS'] } } } },
    ]);
    const status = mappings['StatusEventSourceMappingDynamodbEventTable'] as { BatchSize: number; FilterCriteria: { Filters: { Pattern: string }[] } };
    expect(status.BatchSize).toBe(STATUS_BATCH_SIZE);
    expect(status.FilterCriteria.Filters.map((f) => JSON.parse(f.Pattern) as unknown)).toEqual([
      { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { pk: { S: [{ prefix: 'OBJECT#' }] } } } },
    ]);
  });

  it('schedules: expire every minute, resync every 15 minutes', () => {
    const rules = ofType('AWS::Events::Rule').map(([name, r]) => [name, r.Properties['ScheduleExpression']]);
    expect(Object.fromEntries(rules)).toEqual({ ExpireEventsRuleSchedule1: 'rate(1 minute)', ResyncEventsRuleSchedule1: 'rate(15 minutes)' });
  });

  it('IAM: DynamoDB actions only on the table, its indexes and its stream; query is read-only; logs only to its own group', () => {
    const roles = ofType('AWS::IAM::Role');
    expect(roles.map(([name]) => name).sort()).toEqual(['ConvergenceRole', 'ExpireRole', 'QueryRole', 'ResyncRole', 'StatusRole']);
    const tableArn = { 'Fn::GetAtt': ['EventTable', 'Arn'] };
    const indexArn = { 'Fn::Join': ['/', [tableArn, 'index', 'envoy-states']] };
    const streamArn = { 'Fn::GetAtt': ['EventTable', 'StreamArn'] };
    const actionsByRole: Record<string, string[]> = {};
    for (const [name, role] of roles) {
      expect(role.Properties['AssumeRolePolicyDocument']).toMatchObject({ Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] });
      expect(role.Properties['ManagedPolicyArns']).toBeUndefined();
      const statements = (role.Properties['Policies'] as { PolicyDocument: { Statement: Statement[] } }[]).flatMap((p) => p.PolicyDocument.Statement);
      actionsByRole[name] = statements.flatMap((s) => s.Action);
      for (const statement of statements) {
        expect(statement.Effect).toBe('Allow');
        const targets = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
        expect(statement.Action.every((a) => !a.includes('*'))).toBe(true);
        for (const action of statement.Action) {
          if (action.startsWith('dynamodb:')) {
            const streamAction = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'].includes(action);
            // Scans of the sparse Envoy state index; only resync's condition pass scans the table
            // (object generations, bounded per run); stream reads only of the stream.
            const scanTargets = name === 'ResyncRole' ? [indexArn, tableArn] : [indexArn];
            const allowed = streamAction ? [streamArn] : action === 'dynamodb:Scan' ? scanTargets : [tableArn];
            for (const target of targets) expect(allowed.map((a) => JSON.stringify(a))).toContain(JSON.stringify(target));
          } else if (action.startsWith('logs:')) {
            const joined = JSON.stringify(targets);
            const fn = name.replace('Role', '').toLowerCase();
            expect(joined).toContain(`:log-group:/aws/lambda/${service}-${fn}:*`);
          } else {
            expect(action).toBe('sqs:SendMessage');
            expect(targets).toEqual([{ 'Fn::GetAtt': ['StreamFailureQueue', 'Arn'] }]);
          }
        }
      }
    }
    const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];
    // DeleteItem only where resolved pending-index entries are deleted (convergence, expire, resync).
    for (const [role, actions] of Object.entries(actionsByRole)) {
      expect(`${role}: ${actions.includes('dynamodb:DeleteItem')}`).toBe(`${role}: ${['ConvergenceRole', 'ExpireRole', 'ResyncRole'].includes(role)}`);
    }
    expect((actionsByRole['QueryRole'] ?? []).filter((a) => writes.includes(a))).toEqual([]);
    expect(actionsByRole['StatusRole']).toEqual(expect.arrayContaining(['dynamodb:UpdateItem', 'dynamodb:GetRecords']));
    expect(actionsByRole['StatusRole']).not.toContain('dynamodb:Scan');
  });

  it('IAM: each role has exactly the DynamoDB actions docs/SECURITY.md lists for it (each with its reason there)', () => {
    const security = readFileSync(join(ROOT, 'docs', 'SECURITY.md'), 'utf8');
    const documented = (role: string): string[] => {
      const row = security.split('\n').find((line) => line.startsWith(`| \`${role}\` |`));
      if (row === undefined) throw new Error(`docs/SECURITY.md has no IAM row for ${role}`);
      return [...new Set([...(row.split('|')[2] ?? '').matchAll(/`([A-Z][A-Za-z]+)`/g)].map((m) => `dynamodb:${m[1] ?? ''}`))].sort();
    };
    for (const [name, role] of ofType('AWS::IAM::Role')) {
      const statements = (role.Properties['Policies'] as { PolicyDocument: { Statement: Statement[] } }[]).flatMap((p) => p.PolicyDocument.Statement);
      const dynamo = [...new Set(statements.flatMap((s) => s.Action).filter((a) => a.startsWith('dynamodb:')))].sort();
      expect(`${name}: ${dynamo.join(', ')}`).toBe(`${name}: ${documented(name).join(', ')}`);
    }
  });

  it(`every function's artifact exists and holds index.js bundled for ${TARGET}, whose handler resolves`, async () => {
    expect(Object.keys(artifacts).sort()).toEqual([...FUNCTIONS].sort());
    const unzipped = join(dir, 'unzipped');
    const handlers: Record<string, string> = {};
    for (const [name, artifact] of Object.entries(artifacts)) {
      // The default artifact directory of serverless.yml, filled by the zip step of `npm run package`.
      expect(artifact).toBe(join(copy, '.build', 'functions', `${name}.zip`));
      expect(existsSync(artifact)).toBe(true);
      const entries = readZipEntries(readFileSync(artifact));
      expect(entries.map((e) => e.name).sort()).toEqual(['index.js', 'index.js.map']);
      const index = entries.find((e) => e.name === 'index.js')?.data.toString('utf8') ?? '';
      // scripts/build.mjs names the esbuild target it bundled for in the first line.
      expect(index.split('\n', 1)[0]).toBe(`// xds-programmed function bundle: esbuild target ${TARGET} for Lambda ${RUNTIME}`);
      const fn = resources[`${name[0]?.toUpperCase() ?? ''}${name.slice(1)}LambdaFunction`];
      handlers[name] = String(fn?.Properties['Handler']);
    }
    // The reader checks what it unpacks (a flipped byte in index.js's data fails), so the entries
    // above are the zip's real content.
    const corrupt = Buffer.from(readFileSync(artifacts['status'] ?? ''));
    const at = 30 + 'index.js'.length + 100; // first entry (sorted): index.js, its data after the 30-byte header and the name
    corrupt.writeUInt8(corrupt.readUInt8(at) ^ 0xff, at);
    expect(() => readZipEntries(corrupt)).toThrow(/^ZIP entry index\.js /);
    // Lambda resolves `<file>.<export>` against the zip's root: load each that way in plain Node.
    // (The bundles run here on the test's Node, 20.19+: fine while esbuild emits the same code for
    // node20 and node24, as it does for these sources; syntax only Node 24 parses would fail here first.)
    const script = `
      const { join } = require('node:path');
      const handlers = ${JSON.stringify(handlers)};
      const result = {};
      for (const [name, handler] of Object.entries(handlers)) {
        const [file, exported] = handler.split('.');
        result[name] = typeof require(join(${JSON.stringify(unzipped)}, name, file + '.js'))[exported];
      }
      console.log(JSON.stringify(result));`;
    const result = await run(process.execPath, ['-e', script], { env: { TABLE_NAME: service, AWS_REGION: region, DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' } });
    expect(result.stderr).not.toMatch(/Error|Cannot find module/);
    expect(JSON.parse(result.stdout.trim())).toEqual(Object.fromEntries(FUNCTIONS.map((name) => [name, 'function'])));
  });

  it('the packaged query bundle answers /healthz in plain Node', async () => {
    const script = `
      const query = require(${JSON.stringify(join(dir, 'unzipped', 'query', 'index.js'))});
      query.handler({ rawPath: '/healthz', requestContext: { http: { method: 'GET' } } }).then((r) => console.log(JSON.stringify(r)));`;
    const result = await run(process.execPath, ['-e', script], { env: { TABLE_NAME: service, AWS_REGION: region, DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' } });
    // (stderr may carry the AWS SDK's Node-version notice; no error may appear.)
    expect(result.stderr).not.toMatch(/Error|Cannot find module/);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ statusCode: 200, body: '{"ok":true}' });
  });
});
