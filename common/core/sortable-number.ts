// Numbers written so that string order equals numeric order: zero-padded to the digits of
// Number.MAX_SAFE_INTEGER. The table's sort keys use them (common/store/table-layout.ts), and so does
// an event's identity (envoy-event.ts), which is the order of the event log.

/** Digits of zero padding: Number.MAX_SAFE_INTEGER has 16 digits. */
export const KEY_NUMBER_WIDTH = 16;

export function padKeyNumber(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`cannot pad ${String(n)} into a key`);
  return String(n).padStart(KEY_NUMBER_WIDTH, '0');
}
