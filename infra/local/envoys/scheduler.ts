// One timer for the whole fleet. Thousands of simulated Envoys each delaying their ACKs would
// otherwise mean thousands of live Node timers; instead every delayed action goes into one min-heap
// ordered by (dueAt, insertion order) and a single setTimeout is armed for the earliest entry.
// Insertion order breaks ties, so two actions due at the same moment run in the order they were
// scheduled (an Envoy's ACKs for consecutive responses must leave in the order they arrived).

export interface ScheduledTask {
  readonly dueAt: number;
  cancel(): void;
}

interface HeapEntry {
  dueAt: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
}

export interface SchedulerClock {
  now(): number;
}

export const systemClock: SchedulerClock = { now: () => Date.now() };

export class Scheduler {
  private readonly heap: HeapEntry[] = [];
  private nextSeq = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly clock: SchedulerClock = systemClock,
    /** Called when a task throws: one bad task must not stop the others. */
    private readonly onTaskError: (error: unknown) => void = () => undefined,
  ) {}

  get pending(): number {
    return this.heap.length;
  }

  /** Runs `run` after `delayMs` (0 = on the next turn of the event loop, never synchronously). */
  schedule(delayMs: number, run: () => void): ScheduledTask {
    if (this.closed) throw new Error('scheduler is closed');
    const entry: HeapEntry = {
      dueAt: this.clock.now() + Math.max(0, delayMs),
      seq: this.nextSeq++,
      run,
      cancelled: false,
    };
    this.push(entry);
    this.arm();
    return {
      dueAt: entry.dueAt,
      cancel: () => {
        entry.cancelled = true;
        if (this.heap[0] === entry) this.rearm();
      },
    };
  }

  /** Drops every pending task and the timer (so a test or bench can exit). */
  close(): void {
    this.closed = true;
    this.heap.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  /** Drops the cancelled head(s) and arms the timer for what is left, or for nothing. */
  private rearm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.arm();
  }

  private arm(): void {
    // A cancelled task never holds the timer (nor the process, e.g. an Envoy's 15 s initial fetch
    // timeout cancelled once it initialised).
    while (this.heap[0]?.cancelled) this.pop();
    const head = this.heap[0];
    if (!head || this.closed) return;
    if (this.timer && head.dueAt >= this.armedFor) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = head.dueAt;
    this.timer = setTimeout(() => this.fire(), Math.max(0, head.dueAt - this.clock.now()));
  }

  /**
   * Runs every task due now, in order; returns how many ran. The timer calls this; tests with a
   * fake clock call it directly. Tasks scheduled while running wait for the next call, so a burst
   * of zero-delay tasks cannot starve the event loop.
   */
  runDue(): number {
    const now = this.clock.now();
    const limit = this.nextSeq;
    let ran = 0;
    for (let head = this.heap[0]; head && head.dueAt <= now && head.seq < limit; head = this.heap[0]) {
      this.pop();
      if (head.cancelled) continue;
      ran++;
      try {
        head.run();
      } catch (error) {
        this.onTaskError(error);
      }
      if (this.closed) break;
    }
    return ran;
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.runDue();
    this.arm();
  }

  private push(entry: HeapEntry): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex] as HeapEntry;
      if (!before(entry, parent)) break;
      heap[index] = parent;
      index = parentIndex;
    }
    heap[index] = entry;
  }

  private pop(): HeapEntry | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || !last) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      let smallestEntry = last;
      const leftEntry = heap[left];
      if (left < heap.length && leftEntry && before(leftEntry, smallestEntry)) {
        smallest = left;
        smallestEntry = leftEntry;
      }
      const rightEntry = heap[right];
      if (right < heap.length && rightEntry && before(rightEntry, smallestEntry)) {
        smallest = right;
        smallestEntry = rightEntry;
      }
      if (smallest === index) break;
      heap[index] = smallestEntry;
      index = smallest;
    }
    heap[index] = last;
    return top;
  }
}

function before(a: HeapEntry, b: HeapEntry): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
}
