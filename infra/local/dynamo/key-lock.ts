// Per-item-key mutual exclusion inside the front. DynamoDB Streams order the records of one item
// by the order its writes were applied; reading the image before, writing, and reading the image
// after must therefore not interleave with another write to the same key. Writes to other keys
// proceed in parallel.

type Release = () => void;

export class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>();

  /** Waits for every earlier holder of `key`, then holds it until the returned function is called. */
  async acquire(key: string): Promise<Release> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: Release;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => held);
    this.tails.set(key, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      // The last holder cleans up so the map only holds keys with writes in flight.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }

  /**
   * Holds several keys at once (a BatchWriteItem). Taken in sorted order so two batches sharing keys
   * can never wait on each other in a cycle.
   */
  async acquireAll(keys: Iterable<string>): Promise<Release> {
    const sorted = [...new Set(keys)].sort();
    const releases: Release[] = [];
    for (const key of sorted) releases.push(await this.acquire(key));
    return () => {
      for (const release of releases.reverse()) release();
    };
  }

  /** Keys with a write in flight or queued (for tests and metrics). */
  get size(): number {
    return this.tails.size;
  }
}
