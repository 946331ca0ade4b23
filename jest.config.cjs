// Jest runs TypeScript through swc (fast, no type checking: `npm run typecheck` does that).
// @kubernetes/client-node 1.x and its auth dependencies ship ESM only, so they are transformed too.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: [
    '/node_modules/(?!(@kubernetes/client-node|openid-client|oauth4webapi|jose)/)',
  ],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  setupFiles: ['<rootDir>/test/setup-env.ts'],
  testTimeout: 60000,
  // Integration tests start servers on random ports; two workers match this 2-core machine.
  maxWorkers: 2,
};
