// Import cycles fail the build (`npm run check:deps`, part of `npm test`): a cycle means two
// modules are one concept split in two files, or a shared type lives in the wrong one. Type-only
// imports count too (tsPreCompilationDeps), since they tie the modules' meanings together just the
// same. Run through scripts/check-deps.mjs: the dependency-cruiser CLI refuses Node 20, which this
// project still supports (package.json engines), while its API runs there.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: move the shared part to where it belongs (docs/ARCHITECTURE.md, "Pipeline and folders").',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '^dist/', '^\\.cache/', '^\\.serverless/', '^\\.build/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
