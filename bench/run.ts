// `npm run bench -- <name> [options]`: runs one benchmark (or all of them with no name) and prints
// its tables. Benchmarks live in bench/<name>.ts and export `run(argv: string[]): Promise<void>`.
import { Command } from 'commander';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

interface BenchModule {
  run: (argv: string[]) => Promise<void>;
}

const benchDir = __dirname;
const available = readdirSync(benchDir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .sort();

const program = new Command()
  .name('npm run bench --')
  .description(`Benchmarks: ${available.join(', ')}`)
  .argument('[name]', 'benchmark to run (default: all)')
  .allowUnknownOption(true)
  .allowExcessArguments(true)
  .action(async (name: string | undefined, _opts: unknown, cmd: Command) => {
    const names = name ? [name] : available;
    for (const n of names) {
      const file = join(benchDir, `${n}.ts`);
      if (!existsSync(file)) {
        console.error(`unknown benchmark "${n}"; available: ${available.join(', ')}`);
        process.exitCode = 2;
        return;
      }
      const mod = (await import(file)) as Partial<BenchModule>;
      if (typeof mod.run !== 'function') {
        console.error(`bench/${n}.ts does not export run(argv)`);
        process.exitCode = 2;
        return;
      }
      console.log(`\n== bench: ${n} ==`);
      await mod.run(cmd.args.slice(name ? 1 : 0));
    }
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
