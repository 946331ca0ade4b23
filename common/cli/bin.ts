// The CLI's executable entry: what scripts/build-cli.mjs bundles (dist/cli/xds-programmed.cjs) and what
// the bin shim runs through tsx when there is no bundle. main.ts stays importable without side effects.
import { EXIT } from './exit-codes';
import { runCli } from './main';

runCli(process.argv.slice(2), { out: process.stdout, err: process.stderr, env: process.env }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`xds-programmed: ${String(error).replace(/\s*[\r\n]+\s*/g, ' ')}\n`);
    process.exitCode = EXIT.unavailable;
  },
);
