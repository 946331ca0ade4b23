// A pino logger that keeps its JSON lines in memory, with the gateway's redact config, so tests can
// assert what was (and was not) logged.
import { Writable } from 'node:stream';
import pino from 'pino';
import { GATEWAY_REDACT } from '../../../xds-gateway/ops/logging';

export interface CapturedLogger {
  logger: pino.Logger;
  text(): string;
  lines(): Array<Record<string, unknown>>;
}

export function captureLogger(level: pino.Level = 'debug'): CapturedLogger {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const text = (): string => chunks.join('');
  return {
    logger: pino({ level, redact: GATEWAY_REDACT }, sink),
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
