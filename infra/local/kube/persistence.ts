// Optional state file: the whole store as JSON, rewritten (write to a temporary file, then
// rename, so a crash never leaves a half-written file) shortly after each change.
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { JsonObject } from './json';
import type { StoreSnapshot } from './store';

const FORMAT_VERSION = 1;

const stateFileSchema = z.object({
  formatVersion: z.literal(FORMAT_VERSION),
  resourceVersion: z.number().int().nonnegative(),
  objects: z.record(z.string(), z.array(z.record(z.string(), z.unknown()))),
});

export function loadState(path: string): StoreSnapshot | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`state file ${path} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = stateFileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`state file ${path} has an unexpected shape: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return { resourceVersion: parsed.data.resourceVersion, objects: parsed.data.objects as Record<string, JsonObject[]> };
}

export function saveState(path: string, snapshot: StoreSnapshot): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify({ formatVersion: FORMAT_VERSION, ...snapshot }));
  renameSync(temporary, path);
}

/**
 * Coalesces bursts of changes into one write after `delayMs`; `flush()` writes now. The write
 * is synchronous (a consistent snapshot, no interleaved writes), so with a large store the gap
 * between writes grows to ten times the last write's duration: persistence never takes more
 * than about a tenth of the event loop.
 */
export class StateWriter {
  private timer: NodeJS.Timeout | undefined;
  private lastWriteMs = 0;

  constructor(
    private readonly path: string,
    private readonly snapshot: () => StoreSnapshot,
    private readonly delayMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  changed(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.write();
    }, Math.max(this.delayMs, this.lastWriteMs * 10));
  }

  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.write();
  }

  private write(): void {
    const started = performance.now();
    try {
      saveState(this.path, this.snapshot());
    } catch (error) {
      this.onError(error);
    }
    this.lastWriteMs = performance.now() - started;
  }
}
