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
  .argument('[name]', 'benchmark to run (default: report --quick)')
  .allowUnknownOption(true)
  .allowExcessArguments(true)
  .action(async (name: string | undefined, _opts: unknown, cmd: Command) => {
    // No name: the quick end-to-end report (100 Envoys x 100 objects, a few minutes). Running every
    // benchmark at full size takes hours; name one (or `report --sizes ...`) for that.
    const names = name ? [name] : ['report'];
    const argv = name ? cmd.args.slice(1) : ['--quick', ...cmd.args];
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
      await mod.run(argv);
    }
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
