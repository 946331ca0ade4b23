// How long the message refresh takes, step by step (docs/CONVERGENCE.md, "Freshness of the message"):
// the timeline status-refresh.test.ts checks for what is written (test/integration/functions/
// message-refresh-timeline.ts: 10 Envoys, the real convergence handler with its handoff and refresh
// sweep and the real status handler on local DynamoDB's stream, the local Kubernetes API server, a
// gateway heartbeating every 5 s), timed here. Per run, a new object:
//   first write → refresh   the sweep's write after the first (never below the interval R)
//   stale → refresh         from the stored decision saying 8/10 to the message saying so, with only
//                           the heartbeat running convergence (R plus where the heartbeat falls)
//   due ACK → write         an ACK arriving once a write is due, to its status write (its own record)
// Run: `npm run bench -- message-refresh [--runs 3]`.
import { Command } from 'commander';

import { DEFAULT_MESSAGE_REFRESH_MS } from '../common/core/status-update';
import { runMessageRefreshTimeline } from '../test/integration/functions/message-refresh-timeline';
import { startRefreshWorld } from '../test/integration/functions/status-refresh-support';
import { positiveInteger } from './support/args';

const HEARTBEAT_MS = 5000;

export interface MessageRefreshRow {
  run: number;
  firstToRefreshMs: number;
  staleToRefreshMs: number;
  dueAckToWriteMs: number;
  writes: number;
}

export async function runMessageRefresh(runs: number): Promise<MessageRefreshRow[]> {
  const w = await startRefreshWorld({ envoys: 10, heartbeatMs: HEARTBEAT_MS });
  const rows: MessageRefreshRow[] = [];
  try {
    await w.idle();
    for (let run = 1; run <= runs; run++) {
      const timeline = await runMessageRefreshTimeline(w, `refresh-${run}`, HEARTBEAT_MS);
      const at = (index: number): number => timeline.final[index]?.at ?? Number.NaN;
      rows.push({
        run,
        firstToRefreshMs: at(1) - at(0),
        staleToRefreshMs: at(1) - timeline.staleFrom,
        dueAckToWriteMs: at(2) - timeline.dueAckedAt,
        writes: timeline.final.length,
      });
    }
  } finally {
    await w.close();
  }
  return rows;
}

export function formatMessageRefresh(rows: readonly MessageRefreshRow[]): string {
  const lines = ['| run | first write → refresh | stale → refresh | due ACK → write | writes |', '| --- | --- | --- | --- | --- |'];
  for (const row of rows) lines.push(`| ${row.run} | ${row.firstToRefreshMs} ms | ${row.staleToRefreshMs} ms | ${row.dueAckToWriteMs} ms | ${row.writes} |`);
  return lines.join('\n');
}

export async function run(argv: string[]): Promise<void> {
  const opts = new Command('message-refresh').option('--runs <n>', 'objects taken through the timeline, one after another', positiveInteger, 1).parse(argv, { from: 'user' }).opts<{ runs: number }>();
  const rows = await runMessageRefresh(opts.runs);
  console.log(`message refresh, one object at a time: 10 Envoys, interval ${DEFAULT_MESSAGE_REFRESH_MS} ms, gateway heartbeat ${HEARTBEAT_MS} ms; local DynamoDB + local API server`);
  console.log(formatMessageRefresh(rows));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
