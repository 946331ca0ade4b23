// The writer side of bench/write-ceiling.ts, in its own process as the gateway is: the gateway's own
// store code (openTable, DynamoEventStore.updateEnvoyState: a conditional put per Envoy state)
// writes `writes` states at `concurrency` in flight, after a warm-up, and reports over IPC:
//   argv[2]  JSON WriterOptions
//   child -> { type: 'started' }                      the timed writes begin (after the warm-up)
//   child -> { type: 'done', wallMs, cpuMs, written } | { type: 'failed', error }
import pino from 'pino';
import { z } from 'zod';

import { openTable } from '../../common/store';
import { forEachConcurrently } from '../../common/worker-pool';
import { ceilingStates } from './ceiling-states';

const optionsSchema = z.object({
  endpoint: z.string().url(),
  tableName: z.string().min(3),
  writes: z.number().int().positive(),
  warmup: z.number().int().nonnegative(),
  concurrency: z.number().int().positive(),
  nodeIdPrefix: z.string().min(1),
  lineage: z.string().min(1),
});
export type WriterOptions = z.infer<typeof optionsSchema>;

export const writerReplySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started') }),
  z.object({ type: z.literal('done'), wallMs: z.number(), cpuMs: z.number(), written: z.number().int() }),
  z.object({ type: z.literal('failed'), error: z.string() }),
]);
export type WriterReply = z.infer<typeof writerReplySchema>;

async function writeAll(options: WriterOptions): Promise<WriterReply> {
  const table = openTable({
    tableName: options.tableName,
    client: { region: 'us-east-1', endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } },
    logger: pino({ level: 'warn' }),
  });
  const { store } = table;
  const states = ceilingStates({ count: options.warmup + options.writes, nodeIdPrefix: options.nodeIdPrefix, lineage: options.lineage, seq: 1, now: Date.now() });
  const run = async (batch: typeof states): Promise<number> => {
    let written = 0;
    await forEachConcurrently(batch, options.concurrency, async (state) => {
      const result = await store.updateEnvoyState(state, undefined);
      if (result.ok) written++;
    });
    return written;
  };
  try {
    // Warm-up: connections opened, code compiled, the SDK's caches filled, as in a running gateway.
    await run(states.slice(0, options.warmup));
    await new Promise<void>((resolve) => (process.send === undefined ? resolve() : process.send({ type: 'started' } satisfies WriterReply, () => resolve())));
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const written = await run(states.slice(options.warmup));
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    return { type: 'done', wallMs, cpuMs: (cpu.user + cpu.system) / 1000, written };
  } finally {
    table.close();
  }
}

if (require.main === module) {
  const send = (reply: WriterReply): void => {
    process.send?.(reply, () => process.exit(0));
  };
  const parsed = optionsSchema.safeParse(JSON.parse(process.argv[2] ?? 'null'));
  if (!parsed.success) send({ type: 'failed', error: `invalid writer options: ${parsed.error.message}` });
  else writeAll(parsed.data).then(send, (error: unknown) => send({ type: 'failed', error: error instanceof Error ? error.message : String(error) }));
}
