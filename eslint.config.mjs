// Lint rules that matter here: no `any`, and the dependency direction. The pure core
// (common/core) may not import I/O: no AWS, Kubernetes, gRPC, node I/O modules, and nothing
// outside common/core. Adapters and handlers import the core, never the other way round.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ioModules = [
  'fs', 'fs/promises', 'net', 'http', 'http2', 'https', 'dgram', 'dns', 'tls', 'child_process',
  'cluster', 'worker_threads', 'os', 'process', 'readline', 'stream', 'timers', 'perf_hooks',
];

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
