// When a lineage's PROGRESS item is written (docs/ARCHITECTURE.md, "The idea": at once when it decides
// something, otherwise at most every refresh while counts move, otherwise with the heartbeat). Pure:
// the publisher (progress-publisher.ts) builds the item it would write and asks this whether the write
// is due, comparing it with the item last written.
//
// "Decides something" is what can turn an evaluation from one verdict to another: the denominator
// (members), the anchors (a watermark
// off the anchors is judged conservatively, so a new one must be named before it can go True), an
// anchor becoming fully programmed, and any blocker appearing or clearing (NACK groups, stuck counts,
// split groups, the listed members' blocker fields). A move of `through` that decides nothing only
// changes the "n/m programmed" message, which the status writer shows no more often than the refresh.
import type { LineageProgress, ProgressTally } from '../../../common/core';

export interface ProgressTiming {
  /** Least time between two writes that only move counts (the status message's refresh). */
  refreshMs: number;
  /** Longest time between two writes: the item's `heartbeatAt` keeps the lineage live. */
  heartbeatMs: number;
}

export type ProgressWriteDue =
  | { kind: 'now'; why: 'first' | 'members' | 'anchors' | 'programmed' | 'blockers' }
  | { kind: 'at'; at: number; why: 'counts' | 'heartbeat' };

/** Members a tally holds at or past `seq` (the design's Σ count at ≥ W.seq). */
function programmedAt(tally: ProgressTally, seq: number): number {
  let programmed = 0;
  for (const [through, n] of tally.through) if (through >= seq) programmed += n;
  return programmed;
}

/** Members of the top-level tally relieved at anchor `seq` (lineage-progress-item.ts ProgressReliefGroupSchema). */
function relievedAt(item: LineageProgress, seq: number): number {
  let relieved = 0;
  for (const group of item.relief ?? []) if (group.seq === seq) relieved += group.n;
  return relieved;
}

/** The anchors every member is programmed through with nothing blocking it, members relieved there counting as programmed when `withRelief`. */
function programmedAnchors(item: LineageProgress, withRelief: boolean): number[] {
  // Split members count too: whether they block depends on their other lineages' liveness, which
  // only the reader knows, so their reaching an anchor is worth a write as well.
  const tallies: ProgressTally[] = [item, ...item.split];
  if (item.nacks.length > 0 || tallies.some((tally) => tally.none > 0 || (tally !== item && tally.unprogrammed > 0))) return [];
  return item.anchors.filter((seq) => {
    const relieved = withRelief ? relievedAt(item, seq) : 0;
    if (item.unprogrammed > relieved) return false;
    return tallies.reduce((sum, tally) => sum + programmedAt(tally, seq), relieved) === item.members && !tallies.some((tally) => tally.stuck.some(([at]) => at === seq));
  });
}

/**
 * The anchors every member of the item is programmed through with nothing blocking it: where an
 * evaluation would find no blocker on this lineage, for any object.
 */
export function fullyProgrammedAnchors(item: LineageProgress): number[] {
  return programmedAnchors(item, false);
}

/**
 * The anchors where an evaluation would find no blocker on this lineage for the objects outside the
 * relief groups (members relieved there counted as programmed): a superset of fullyProgrammedAnchors.
 * Both are decisive, for different objects, so a write is due when either changes.
 */
export function programmedAnchorsWithRelief(item: LineageProgress): number[] {
  return item.relief === undefined ? fullyProgrammedAnchors(item) : programmedAnchors(item, true);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The listed members' standing blockers (NACKs, split, nothing or not every required type
 * subscribed), for blame in the condition's message. Responses waiting for an answer (`w`) are left
 * out, and so are members listed for them alone: every ACK of a change wave moves them, and the
 * verdicts they can turn are the item's own counts (`stuck` above, `through` and the anchors), so a
 * write at once per ACK burst was ~95% of the PROGRESS writes at 1,000 × 1,000 (docs/bench/README.md,
 * round 8). They are written with the counts refresh.
 */
function listedBlockers(item: LineageProgress): unknown {
  const standing: unknown[] = [];
  for (const [nodeId, member] of item.listed) {
    const { w: _waiting, ...rest } = member.b ?? {};
    if (Object.keys(rest).length > 0) standing.push([nodeId, rest]);
  }
  return standing;
}

export function progressWriteDue(written: LineageProgress | undefined, writtenAt: number | undefined, next: LineageProgress, timing: ProgressTiming): ProgressWriteDue {
  if (written === undefined || writtenAt === undefined) return { kind: 'now', why: 'first' };
  // `incarnations` alone is not decisive (evaluation does not read it) and moves with every dip in an
  // Envoy's programmedThrough (core countEnvoyState): a route change adding clusters dips every Envoy
  // for a moment, and a write at once per dip was ~80% of the PROGRESS writes at 1,000 × 1,000
  // (docs/bench/README.md, round 8). It goes with the next counts write.
  if (written.members !== next.members) return { kind: 'now', why: 'members' };
  if (!same(written.anchors, next.anchors)) return { kind: 'now', why: 'anchors' };
  if (!same(fullyProgrammedAnchors(written), fullyProgrammedAnchors(next)) || !same(programmedAnchorsWithRelief(written), programmedAnchorsWithRelief(next))) return { kind: 'now', why: 'programmed' };
  if (!same(written.nacks, next.nacks) || !same(written.stuck, next.stuck) || !same(written.split, next.split) || !same(listedBlockers(written), listedBlockers(next))) {
    return { kind: 'now', why: 'blockers' };
  }
  const moved = !same(written.through, next.through) || written.incarnations !== next.incarnations || written.none !== next.none || written.unprogrammed !== next.unprogrammed || !same(written.listed, next.listed);
  // The heartbeat bounds every wait, the refresh's too: past heartbeatAt + TTL readers drop the whole
  // item, members and all, so a refresh longer than the heartbeat must not hold the heartbeat back.
  if (moved && timing.refreshMs < timing.heartbeatMs) return { kind: 'at', at: writtenAt + timing.refreshMs, why: 'counts' };
  return { kind: 'at', at: writtenAt + timing.heartbeatMs, why: 'heartbeat' };
}
