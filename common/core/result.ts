// A discriminated result for parsing untrusted input: bad input is a value, never an exception,
// so one corrupt item or message can be reported and skipped without failing a whole batch.

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export function parsedOk<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

export function parsedError<T = never>(error: string): Parsed<T> {
  return { ok: false, error };
}
