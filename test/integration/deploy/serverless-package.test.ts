// `serverless package` offline on serverless.yml, with artifacts built the way CI builds them
// (esbuild bundle → reproducible zip), then checks on the generated CloudFormation: resources,
// reserved concurrency on every function, function URL auth, stream mappings, and IAM limited to the
// table, its index and its stream.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

import { tableDefinition } from '../../../common/store';
import { zipFunctionBundles } from '../../../infra/serverless/zip-functions';
import { CONVERGENCE_BATCH_SIZE, STATUS_BATCH_SIZE } from '../../../infra/local/system/functions';

const ROOT = join(__dirname, '..', '..', '..');
// Every handler is bundled for real, so a handler that does not bundle fails this test.
const FUNCTIONS = ['convergence', 'expire', 'resync', 'status', 'query'];

function run(command: string, args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: unknown };
interface Statement {
  Effect: string;
  Action: string[];
  Resource: unknown;
}

describe('serverless package (offline)', () => {
  let dir: string;
  let resources: Record<string, Resource>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sls-package-'));
    const dist = join(dir, 'dist');
    for (const name of FUNCTIONS) {
      await build({ entryPoints: [join(ROOT, 'functions', `${name}.ts`)], outfile: join(dist, name, 'index.js'), bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: true, logLevel: 'error' });
    }
    zipFunctionBundles(dist, join(dir, 'artifacts'));
    const packaged = await run(join(ROOT, 'node_modules', '.bin', 'serverless'), ['package', '--stage', 'ci', '--region', 'eu-west-1', '--package', join(dir, 'out')], {
      SLS_TELEMETRY_DISABLED: '1',
      SLS_NOTIFICATIONS_MODE: 'off',
      XDS_ARTIFACT_DIR: join(dir, 'artifacts'),
      HOME: join(dir, 'home'),
      // No credentials anywhere: packaging must not need AWS.
      AWS_ACCESS_KEY_ID: '',
      AWS_SECRET_ACCESS_KEY: '',
      AWS_PROFILE: '',
    });
    if (packaged.code !== 0) throw new Error(`serverless package failed:\n${packaged.stdout}\n${packaged.stderr}`);
    resources = (JSON.parse(readFileSync(join(dir, 'out', 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, Resource> }).Resources;
  }, 180_000);
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);

  it('declares the five functions on nodejs20.x, each with its own role and the table name', () => {
    const functions = ofType('AWS::Lambda::Function');
    expect(functions.map(([, f]) => f.Properties['FunctionName']).sort()).toEqual(['convergence', 'expire', 'query', 'resync', 'status'].map((n) => `xds-programmed-ci-${n}`));
    for (const [name, fn] of functions) {
      expect(fn.Properties['Runtime']).toBe('nodejs20.x');
      expect(fn.Properties['Handler']).toBe('index.handler');
      const role = name.replace('LambdaFunction', 'Role');
      expect(fn.Properties['Role']).toEqual({ 'Fn::GetAtt': [role, 'Arn'] });
      const variables = (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
      expect(variables['TABLE_NAME']).toBe('xds-programmed-ci');
      if (/^(Convergence|Expire|Resync)/.test(name)) expect(variables).toMatchObject({ ENVOY_TTL_MS: '300000', ACK_TIMEOUT_MS: '30000', AGGREGATE_SHARDS: '16' });
    }
  });

  it('every function has reserved concurrency (its cost ceiling), at the defaults docs/SECURITY.md gives', () => {
    const reserved = Object.fromEntries(ofType('AWS::Lambda::Function').map(([, fn]) => [String(fn.Properties['FunctionName']).replace('xds-programmed-ci-', ''), fn.Properties['ReservedConcurrentExecutions']]));
    expect(reserved).toEqual({ convergence: 10, status: 10, expire: 1, resync: 1, query: 10 });
    // The documented table must say the same (a default changed in one place only fails here).
    const security = readFileSync(join(ROOT, 'docs', 'SECURITY.md'), 'utf8');
    for (const [name, value] of Object.entries(reserved)) expect(security).toMatch(new RegExp(`\\| \`${name}\` \\| \`${name}Concurrency\` \\| ${String(value)} \\|`));
  });

  it('the table: pk/sk, the Envoy state index of common/store, stream NEW_AND_OLD_IMAGES, TTL on ttl, PITR, on demand', () => {
    const table = resources['EventTable'] as Resource & { DeletionPolicy?: string };
    expect(table.Type).toBe('AWS::DynamoDB::Table');
    const expected = tableDefinition('xds-programmed-ci');
    expect(table.Properties).toMatchObject({
      TableName: 'xds-programmed-ci',
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
    // State changes and object generations only: not the event log, not convergence's own items.
    expect(convergence.FilterCriteria.Filters.map((f) => JSON.parse(f.Pattern) as unknown)).toEqual([
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'ENVOY#' }] }, sk: { S: ['STATE'] } } } },
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'LINEAGE#' }] }, sk: { S: ['STATE'] } } } },
      { dynamodb: { Keys: { pk: { S: [{ prefix: 'OBJECT#' }] } } } },
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
            expect(joined).toContain(`:log-group:/aws/lambda/xds-programmed-ci-${fn}:*`);
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

  it('the packaged bundles load in plain Node and the query bundle answers /healthz', async () => {
    const script = `
      const query = require(${JSON.stringify(join(dir, 'dist', 'query', 'index.js'))});
      const status = require(${JSON.stringify(join(dir, 'dist', 'status', 'index.js'))});
      if (typeof status.handler !== 'function') throw new Error('status.handler missing');
      query.handler({ rawPath: '/healthz', requestContext: { http: { method: 'GET' } } }).then((r) => console.log(JSON.stringify(r)));`;
    const result = await run(process.execPath, ['-e', script], { TABLE_NAME: 'xds-programmed-ci', AWS_REGION: 'eu-west-1', DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' });
    // (stderr may carry the AWS SDK's Node-version notice; no error may appear.)
    expect(result.stderr).not.toMatch(/Error|Cannot find module/);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ statusCode: 200, body: '{"ok":true}' });
    // The zip's central directory names its entries (read without an unzip binary, which a fresh
    // machine may lack): each entry header is 46 bytes, name length at offset 28, name at 46.
    const zip = readFileSync(join(dir, 'artifacts', 'status.zip'));
    const names: string[] = [];
    for (let at = zip.indexOf('PK\x01\x02', 0, 'latin1'); at >= 0; at = zip.indexOf('PK\x01\x02', at + 46, 'latin1')) {
      names.push(zip.toString('utf8', at + 46, at + 46 + zip.readUInt16LE(at + 28)));
    }
    expect(names.sort()).toEqual(['index.js', 'index.js.map']);
  });
});
