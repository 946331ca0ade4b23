// Pure logic of the hardening pieces (no I/O): the per-stream token bucket and the backpressure
// controller's hysteresis (pause at the high-water mark, resume only at or below the low-water mark).
import fc from 'fast-check';
import pino from 'pino';
import { BackpressureController, type PressureSource } from '../../../xds-gateway/ops/backpressure';
import { TokenBucket } from '../../../xds-gateway/relay';

describe('TokenBucket', () => {
  test('allows the burst at once, then the rate', () => {
    const bucket = new TokenBucket({ ratePerSecond: 2, burst: 3 }, 0);
    expect([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)]).toEqual([true, true, true, false]);
    expect(bucket.take(400)).toBe(false); // 0.8 token
    expect(bucket.take(500)).toBe(true); // 1 token after 500 ms at 2/s
    expect(bucket.take(500)).toBe(false);
    expect([bucket.take(10_000), bucket.take(10_000), bucket.take(10_000), bucket.take(10_000)]).toEqual([true, true, true, false]); // capped at burst
  });

  test('never admits more than burst + rate × elapsed (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 200 }), (rate, burst, gaps) => {
        const bucket = new TokenBucket({ ratePerSecond: rate, burst }, 0);
        let now = 0;
        let admitted = 0;
        for (const gap of gaps) {
          now += gap;
          if (bucket.take(now)) admitted += 1;
        }
        expect(admitted).toBeLessThanOrEqual(burst + (rate * now) / 1000);
      }),
    );
  });

  test('a clock going backwards does not mint tokens', () => {
    const bucket = new TokenBucket({ ratePerSecond: 1000, burst: 1 }, 1000);
    expect(bucket.take(1000)).toBe(true);
    expect(bucket.take(0)).toBe(false);
  });
});

class FakeRecorder implements PressureSource {
  queued = 0;
  private readonly listeners: Array<(pressure: boolean) => void> = [];
  private last = false;
  constructor(private readonly highWater: number) {}
  onPressureChange(listener: (pressure: boolean) => void): void {
    this.listeners.push(listener);
  }
  pressure(): boolean {
    return this.queued >= this.highWater;
  }
  stats(): { queuedEvents: number } {
    return { queuedEvents: this.queued };
  }
  set(queued: number): void {
    this.queued = queued;
    if (this.pressure() !== this.last) {
      this.last = this.pressure();
      for (const listener of this.listeners) listener(this.last);
    }
  }
}

describe('BackpressureController', () => {
  test('pauses at the high-water mark and resumes only at or below the low-water mark', async () => {
    const recorder = new FakeRecorder(10);
    const calls: boolean[] = [];
    const changes: boolean[] = [];
    const controller = new BackpressureController({
      recorder,
      relay: { setPaused: (paused) => calls.push(paused) },
      lowWaterEvents: 4,
      checkIntervalMs: 5,
      logger: pino({ level: 'silent' }),
      onChange: (paused) => changes.push(paused),
    });
    try {
      recorder.set(9);
      expect(calls).toEqual([]);
      recorder.set(10);
      expect(calls).toEqual([true]);
      recorder.set(7); // below high water, above low water: stays paused
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(controller.isPaused()).toBe(true);
      expect(calls).toEqual([true]);
      recorder.set(4);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(calls).toEqual([true, false]);
      expect(changes).toEqual([true, false]);
      recorder.set(12);
      expect(controller.pauseCount()).toBe(2);
    } finally {
      controller.stop();
    }
  });
});
