// Lint rules that matter here: no `any`, and the dependency direction. The pure core
// (common/core) may not import I/O: no AWS, Kubernetes, gRPC, node I/O modules, and nothing
// outside common/core. Adapters and handlers import the core, never the other way round.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ioModules = [
  'fs', 'fs/promises', 'net', 'http', 'http2', 'https', 'dgram', 'dns', 'tls', 'child_process',
  'cluster', 'worker_threads', 'os', 'process', 'readline', 'stream', 'timers', 'perf_hooks',
];

/** The DynamoDB packages: the table itself (common/store). */
const tableSdk = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@aws-sdk/util-dynamodb'];
/** AWS credentials and SigV4 signing (not the table), and the files that use them: EKS tokens, the CLI's signed queries. */
const credentialPackages = ['@aws-sdk/credential-provider-node', '@smithy/signature-v4', '@smithy/types'];
const credentialFiles = ['common/aws/**/*.ts', 'common/cli/**/*.ts', 'functions/kube/access.ts', 'functions/kube/eks-token.ts'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.serverless/**', '.build/**', 'coverage/**', '**/*.cjs', '**/*.mjs', '**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // One table boundary (docs/ARCHITECTURE.md, "Store adapter"): only common/store talks to DynamoDB,
  // plus the local DynamoDB stand-in and the tests that check it; everything else uses the store's
  // ports. The AWS packages allowed elsewhere are the credential and signing ones, in the files that
  // sign requests (the block after this one). common/core has its own, stricter block.
  {
    files: ['common/**/*.ts', 'functions/**/*.ts', 'xds-gateway/**/*.ts', 'infra/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    ignores: ['common/core/**', 'common/store/**', 'infra/local/dynamo/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: tableSdk, message: 'Only common/store reaches the DynamoDB table: use its ports (openTable).' },
          { group: ['@aws-sdk/*', '@smithy/*', ...tableSdk.map((name) => `!${name}`)],
            message: 'AWS SDK packages outside common/store are for credentials and signing only, in the files listed in eslint.config.mjs.' },
        ],
      }],
    },
  },
  {
    files: credentialFiles,
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: tableSdk, message: 'Only common/store reaches the DynamoDB table: use its ports (openTable).' },
          { group: ['@aws-sdk/*', '@smithy/*', ...tableSdk.map((name) => `!${name}`), ...credentialPackages.map((name) => `!${name}`)],
            message: `Outside common/store only these AWS packages are allowed, for credentials and signing: ${credentialPackages.join(', ')}.` },
        ],
      }],
    },
  },
  {
    files: ['common/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ioModules.flatMap((m) => [
          { name: m, message: 'common/core is pure: pass I/O in through a port.' },
          { name: `node:${m}`, message: 'common/core is pure: pass I/O in through a port.' },
        ]),
        patterns: [
          { group: ['@aws-sdk/*', '@smithy/*', '@kubernetes/*', '@grpc/*', 'dynalite', 'pino', 'prom-client', 'aws-lambda'],
            message: 'common/core is pure: no AWS/Kubernetes/gRPC/logging imports.' },
          { group: ['../*', '!./*'], message: 'common/core may only import from common/core.' },
        ],
      }],
      'no-restricted-globals': ['error',
        { name: 'setTimeout', message: 'common/core is pure: time is passed in.' },
        { name: 'setInterval', message: 'common/core is pure: time is passed in.' },
        { name: 'fetch', message: 'common/core is pure.' },
        { name: 'process', message: 'common/core is pure: configuration is passed in.' },
      ],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'common/core is pure: pass `now` in.' },
        { object: 'Math', property: 'random', message: 'common/core is pure: pass randomness in.' },
      ],
    },
  },
);
