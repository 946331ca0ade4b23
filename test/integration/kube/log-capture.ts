// A pino logger whose JSON lines the test can read: what the local API server logged, request by
// request (its `request` lines at debug level, `request refused` at info).
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export interface CapturedLog {
  logger: Logger;
  lines: Record<string, unknown>[];
}

export function captureLog(level: 'debug' | 'info'): CapturedLog {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      partial += chunk.toString('utf8');
      let newline = partial.indexOf('\n');
      while (newline >= 0) {
        const line = partial.slice(0, newline);
        partial = partial.slice(newline + 1);
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        newline = partial.indexOf('\n');
      }
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
