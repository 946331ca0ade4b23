// A real pino logger whose JSON lines are kept in memory, so tests can assert what was logged.
import { Writable } from 'node:stream';

import pino, { type Logger } from 'pino';

export interface CapturedLog {
  logger: Logger;
  lines(): Record<string, unknown>[];
}

export function captureLogs(): CapturedLog {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim().length > 0) lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines: () => [...lines] };
}
