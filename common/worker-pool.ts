// The one bounded worker pool of the repository: "do this to every item, at most N at a time".
// Handlers, the store adapter, the gateway's recorder, the local system and the bench all fan out
// I/O this way (a batch of stream candidates, BatchWriteItem chunks, sample objects …) so that a
// large batch neither runs one request at a time nor floods DynamoDB or the API server.
//
// Semantics every caller relies on: items start in array order; at most `concurrency` are in flight;
// the returned promise resolves once every item's work has settled. A rejected `work` rejects the
// pool at once (as Promise.all does) while the other workers finish their current item and go on
// with the rest, so callers that must see every outcome catch inside `work` (most do: they count or
// log per item). Pure (no timers, no I/O), so it may be imported from anywhere.

/**
 * Runs `work(item, index)` for every item with at most `concurrency` in flight (at least 1: a
 * concurrency below 1 or not a number still makes progress, one at a time).
 */
export async function forEachConcurrently<T>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  const limit = Number.isNaN(concurrency) ? 1 : Math.max(1, Math.floor(concurrency));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** `forEachConcurrently` over the indices 0 … count-1 (work that is numbered, not listed). */
export async function forEachIndexConcurrently(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  await forEachConcurrently(Array.from({ length: Math.max(0, Math.floor(count)) }, (_, index) => index), concurrency, work);
}
