// The table clock (docs/CONVERGENCE.md, "Staleness across a table gap"): the time staleness is
// judged on. An Envoy's lastSeenAt and a lineage's heartbeat only move while their gateway can write
// to the table; when nobody can (DynamoDB unreachable), every stamp gets old at once, and after the
// return the gateways' refreshes land one by one, in no useful order. Judged on wall time, a live
// Envoy whose refresh has not landed yet would leave the denominator while another, refreshed, counts:
// a generation decided without it, a possible false True (invariant 1).
//
// So staleness is judged on a clock that stops while the readers themselves could not use the table.
// The expire function is the readers' pulse: it records the end time of every tick it completes
// (`tickAt`; the end, since a tick's requests may have waited out an outage in the SDK's retries). Past `tickAt + stallMs` with no newer tick, the clock stands still (a gap in progress:
// nothing goes stale); the tick that ends the gap records it, and the gap's time never counts towards
// any stamp's age. Stopping the clock only ever keeps Envoys in the denominator longer (safe); the
// delay is the gap beyond `stallMs`. A gap shorter than `stallMs` is not seen, which is why
// `stallMs` plus the gateway's Envoy heartbeat must stay below the TTL (docs/CONVERGENCE.md).
//
// Pure: the expire function advances the clock (advanceTableClock) and stores it in the lineage
// registry item; every reader of staleness (convergence, expire, the query function) takes it from there.

/** An interval (epoch ms) during which the readers' clock stood still. */
export interface TableGap {
  from: number;
  to: number;
}

export interface TableClock {
  /** End time of the last expire tick that completed. */
  tickAt: number;
  /** Recent gaps, oldest first (at most MAX_TABLE_GAPS, none older than twice the TTL in table time). */
  gaps: readonly TableGap[];
}

/** A stored clock with the stall bound it is read with; undefined clock: no tick recorded yet (wall time). */
export interface TableClockView {
  clock: TableClock | undefined;
  stallMs: number;
}

export const MAX_TABLE_GAPS = 16;

/** Default stall bound: three AWS expire ticks (every minute), at most half the TTL. */
export function defaultStallMs(ttlMs: number): number {
  return Math.min(180_000, Math.floor(ttlMs / 2));
}

/** Table time at wall time `t`: wall time minus every stretch of (recorded or ongoing) gap before it. */
export function tableTime(view: TableClockView | undefined, t: number): number {
  const clock = view?.clock;
  if (clock === undefined) return t;
  let stopped = 0;
  for (const gap of clock.gaps) stopped += Math.max(0, Math.min(t, gap.to) - gap.from);
  const standsStillFrom = clock.tickAt + (view?.stallMs ?? 0);
  if (t > standsStillFrom) stopped += t - standsStillFrom;
  return t - stopped;
}

/** How old a stamp is at `now`, in table time. */
export function tableAge(view: TableClockView | undefined, stamp: number, now: number): number {
  return tableTime(view, now) - tableTime(view, stamp);
}

/**
 * The clock after an expire tick completed at `now` (its judgments use it as of the tick's start). A
 * tick later than `stallMs` after the previous one ends a gap: it is recorded from where the clock stopped to `now`. Gaps that can no
 * longer make any stamp within twice the TTL look younger are dropped.
 */
export function advanceTableClock(clock: TableClock | undefined, now: number, options: { stallMs: number; ttlMs: number }): TableClock {
  if (clock === undefined) return { tickAt: now, gaps: [] };
  if (now <= clock.tickAt) return clock;
  const stoppedFrom = clock.tickAt + options.stallMs;
  const gaps = now > stoppedFrom ? [...clock.gaps, { from: stoppedFrom, to: now }] : [...clock.gaps];
  const next: TableClock = { tickAt: now, gaps };
  const view = { clock: next, stallMs: options.stallMs };
  const kept = gaps.filter((gap) => tableAge(view, gap.to, now) <= 2 * options.ttlMs).slice(-MAX_TABLE_GAPS);
  return { tickAt: now, gaps: kept };
}

/** A view's clock, for logs: how long it has stood still at `now` (0: running). */
export function standingStillMs(view: TableClockView | undefined, now: number): number {
  if (view?.clock === undefined) return 0;
  return Math.max(0, now - (view.clock.tickAt + view.stallMs));
}
