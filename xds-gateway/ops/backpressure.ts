// Backpressure that loses nothing (docs/GATEWAY.md "Backpressure"). When the recorder's event queue
// reaches its high-water mark the relay is paused: downstream streams stop reading requests (HTTP/2
// flow control holds them in the Envoys) and hold new responses, so no new ACK work is created
// while DynamoDB is slow. The relay resumes only once the queue is at or below a low-water mark
// (hysteresis: resuming at the high-water mark would flap at every flush). Nothing is dropped: the
// recorder keeps everything it has; the Envoys keep what they have not sent yet.
import type { Logger } from 'pino';

/** What this needs of the recorder (xds-gateway/tracking/recorder/index.ts). */
export interface PressureSource {
  onPressureChange(listener: (pressure: boolean) => void): void;
  pressure(): boolean;
  stats(): { queuedEvents: number };
}

/** What this needs of the relay (RelayControl). */
export interface PausableRelay {
  setPaused(paused: boolean): void;
}

export interface BackpressureOptions {
  recorder: PressureSource;
  relay: PausableRelay;
  /** Queued events at or below which a paused relay resumes (below the recorder's high-water mark). */
  lowWaterEvents: number;
  /** How often a paused relay re-checks the queue depth. */
  checkIntervalMs: number;
  logger: Logger;
  /** Called on each pause/resume (metrics). */
  onChange?: (paused: boolean) => void;
}

export class BackpressureController {
  private paused = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private pauses = 0;

  constructor(private readonly options: BackpressureOptions) {
    options.recorder.onPressureChange((pressure) => {
      if (pressure) this.pause();
      else this.maybeResume();
    });
  }

  isPaused(): boolean {
    return this.paused;
  }

  pauseCount(): number {
    return this.pauses;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private pause(): void {
    if (this.paused || this.stopped) return;
    this.paused = true;
    this.pauses += 1;
    this.options.logger.warn({ queuedEvents: this.options.recorder.stats().queuedEvents, lowWater: this.options.lowWaterEvents }, 'backpressure: pausing downstream streams');
    this.options.relay.setPaused(true);
    this.options.onChange?.(true);
    // The recorder reports "no pressure" as soon as it is below the high-water mark; resuming waits
    // for the low-water mark, so poll while paused.
    this.timer = setInterval(() => this.maybeResume(), this.options.checkIntervalMs);
    this.timer.unref();
  }

  private maybeResume(): void {
    if (!this.paused || this.stopped) return;
    const queuedEvents = this.options.recorder.stats().queuedEvents;
    if (this.options.recorder.pressure() || queuedEvents > this.options.lowWaterEvents) return;
    this.paused = false;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.options.logger.warn({ queuedEvents, lowWater: this.options.lowWaterEvents }, 'backpressure: resuming downstream streams');
    this.options.relay.setPaused(false);
    this.options.onChange?.(false);
  }
}
