// The shared bounded worker pool (common/worker-pool.ts): the bound, the order, every item exactly
// once, and how a failing item surfaces.
import { forEachConcurrently, forEachIndexConcurrently } from '../../../common/worker-pool';

/** A task whose completion the test controls, so the number in flight can be observed exactly. */
function gate(): { promise: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('forEachConcurrently', () => {
  it('never has more than `concurrency` in flight, starts items in order, and runs each once', async () => {
    const items = Array.from({ length: 10 }, (_, i) => `item-${i}`);
    const gates = items.map(() => gate());
    const started: string[] = [];
    let inFlight = 0;
    let peak = 0;
    const done = forEachConcurrently(items, 3, async (item, index) => {
      started.push(item);
      inFlight++;
      peak = Math.max(peak, inFlight);
      await gates[index]?.promise;
      inFlight--;
    });
    await settle();
    expect(started).toEqual(['item-0', 'item-1', 'item-2']);
    gates[1]?.open();
    await settle();
    expect(started).toEqual(['item-0', 'item-1', 'item-2', 'item-3']);
    for (const g of gates) g.open();
    await done;
    expect(started).toEqual(items);
    expect(peak).toBe(3);
  });

  it('passes each item with its index and resolves only after the last one settled', async () => {
    const seen: Array<[number, number]> = [];
    let finished = 0;
    await forEachConcurrently([10, 20, 30, 40, 50], 2, async (item, index) => {
      await new Promise((resolve) => setTimeout(resolve, 5 * (5 - index)));
      seen.push([index, item]);
      finished++;
    });
    expect(finished).toBe(5);
    expect([...seen].sort((a, b) => a[0] - b[0])).toEqual([[0, 10], [1, 20], [2, 30], [3, 40], [4, 50]]);
  });

  it('runs nothing for no items, and still makes progress with a concurrency below 1 or NaN', async () => {
    let calls = 0;
    await forEachConcurrently([], 4, async () => void calls++);
    expect(calls).toBe(0);
    for (const concurrency of [0, -3, Number.NaN, 0.5]) {
      let inFlight = 0;
      let peak = 0;
      await forEachConcurrently([1, 2, 3], concurrency, async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await settle();
        inFlight--;
        calls++;
      });
      expect(peak).toBe(1);
    }
    expect(calls).toBe(12);
  });

  it('rejects with the first failure while the other workers carry on with the rest', async () => {
    const ran: number[] = [];
    const pool = forEachConcurrently([0, 1, 2, 3, 4, 5], 2, async (item) => {
      await settle();
      ran.push(item);
      if (item === 1) throw new Error('item 1 failed');
    });
    await expect(pool).rejects.toThrow('item 1 failed');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect([...ran].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });
});

describe('forEachIndexConcurrently', () => {
  it('runs every index of 0 … count-1 once, bounded', async () => {
    const seen: number[] = [];
    let inFlight = 0;
    let peak = 0;
    await forEachIndexConcurrently(7, 2, async (index) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await settle();
      seen.push(index);
      inFlight--;
    });
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(2);
    let calls = 0;
    await forEachIndexConcurrently(0, 2, async () => void calls++);
    expect(calls).toBe(0);
  });
});
