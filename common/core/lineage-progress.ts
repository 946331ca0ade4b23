// PROGRESS: a lineage's convergence summary built by its own gateway (docs/ARCHITECTURE.md, "Design:
// work per change proportional to gateways, not Envoys"; the item is lineage-progress-item.ts).
//
// progressFromStates turns the gateway's tracked states into the item through the shards' own
// per-Envoy rule: each state becomes the Member the convergence function would store
// (memberFromEnvoyState), and memberBlocker decides, per member and per watermark the gateway knows
// as open, whether it is stuck there. evaluateFromProgress decides X@G from the items of the live
// lineages with the same rules (memberBlocker on the listed members, nackBlocker's blame rule on the
// NACK counts, convergenceState's severity order on the reasons present).
//
// Same answer as evaluateFromAggregates over shards holding the same states (property-tested in
// test/unit/core/lineage-progress.property.test.ts): the verdict, `programmed` and `total`, and the
// blockers, of which at most MAX_PROGRESS_LISTED members per lineage are named (the rest are counted
// in `blockersOmitted`). Where it differs, by design:
//  - no denominator in transit: the counts and the members come from one snapshot of the gateway,
//    so "N Envoy states … not yet in the aggregates" cannot arise; a live lineage without an item is
//    Pending (PROGRESS_MISSING: no item yet, or its gateway writes none), as a lineage without a
//    count is on the shard path;
//  - a watermark that is not one of the item's anchors (the gateway did not know it as open when it
//    wrote) is judged conservatively: `programmed` may be lower and Stuck may show as Pending, never
//    the other way, until the next write names it;
//  - a disconnected member leaves the count at the gateway's next write after its TTL, not at the
//    moment its TTL ends; a dead gateway's members all drop at heartbeatAt + TTL;
//  - stuck is judged at each member's lastSeenAt as the shards judge it, which equals the reader's
//    judgement whenever the reader's clock is not behind the gateway's;
//  - beyond the bounds of the item (blames, split lineage sets) members are held on the safe side:
//    as unblamed NACKs (Rejected rather than Blocked) or as split members blocking whatever.
import type { Blocker } from './blocker';
import { blamesOtherObjectsOnly, latestPerNode, noEnvoysConvergence, sortBlockers, stateOfReasons, unobservableConvergence, type Convergence, type ConvergencePolicy } from './convergence';
import { incarnationOf, isLiveMember, memberBlocker, memberFromEnvoyState, splitLiveElsewhere, unknownCountBlocker } from './aggregate';
import { MAX_BLAMED } from './nack-blame';
import { NOT_PROGRAMMED, type Member } from './aggregate-shard';
import type { EnvoyState } from './envoy-record';
import { shortTypeName } from './type-urls';
import { formatObjectRef, type ObjectRef } from './identity';
import {
  MAX_PROGRESS_ANCHORS,
  MAX_PROGRESS_BLAME_GROUPS,
  MAX_PROGRESS_LISTED,
  MAX_PROGRESS_RELIEF_GROUPS,
  MAX_PROGRESS_SPLIT_GROUPS,
  MAX_PROGRESS_SPLIT_LINEAGES,
  tallyMembers,
  type LineageProgress,
  type ProgressNackGroup,
  type ProgressReliefGroup,
  type ProgressSplitGroup,
  type ProgressTally,
} from './lineage-progress-item';
import type { LineageWatermark } from './object-generation';
import { seenWithin } from './staleness';
import type { TableClockView } from './table-clock';
import type { Watermark } from './watermark';
import type { Lineage } from './version';

// --- building (the gateway)

export interface ProgressBuildInput {
  lineage: Lineage;
  /** The version this write will have (the stored one + 1). */
  v: number;
  /** The gateway's clock at the snapshot: liveness and stuck are judged as of it. */
  heartbeatAt: number;
  /** The gateway's current states of the lineage's members, disconnected ones included (those of other lineages are skipped). */
  states: readonly EnvoyState[];
  /**
   * Watermarks this gateway recorded on the lineage that may still be decided. The oldest
   * MAX_PROGRESS_ANCHORS become the anchors, where evaluation is exact.
   */
  openWatermarks: readonly LineageWatermark[];
  /** REQUIRED_TYPE_URLS: the same list the convergence function builds members with. */
  requiredTypeUrls: readonly string[];
  policy: Pick<ConvergencePolicy, 'ttlMs' | 'ackTimeoutMs'>;
  /** Members listed by summary (default and most: MAX_PROGRESS_LISTED). */
  maxListed?: number;
  /**
   * `memberFromEnvoyState(state, requiredTypeUrls)`, for a caller that keeps each state's member from
   * when the state arrived (the gateway builds this item often, from mostly unchanged states).
   */
  memberOf?: (state: EnvoyState) => Member;
}

interface RawTally {
  none: number;
  unprogrammed: number;
  through: number[];
  stuck: Map<number, number>;
}

function emptyRawTally(): RawTally {
  return { none: 0, unprogrammed: 0, through: [], stuck: new Map() };
}

function mergeRawTally(into: RawTally, from: RawTally): void {
  into.none += from.none;
  into.unprogrammed += from.unprogrammed;
  into.through.push(...from.through);
  for (const [seq, n] of from.stuck) into.stuck.set(seq, (into.stuck.get(seq) ?? 0) + n);
}

/**
 * The histogram folded at the anchors: members are parted by how many anchors are at or below their
 * programmedThrough, and each part is one row at its lowest programmedThrough. So no row's seq is above
 * any of its members' (never more programmed than true at any watermark), and a part never straddles
 * an anchor (exact at every anchor).
 */
export function foldThrough(through: readonly number[], anchors: readonly number[]): [number, number][] {
  const parts = new Map<number, [number, number]>();
  for (const t of through) {
    const part = anchors.filter((anchor) => anchor <= t).length;
    const row = parts.get(part);
    if (row === undefined) parts.set(part, [t, 1]);
    else parts.set(part, [Math.min(row[0], t), row[1] + 1]);
  }
  return [...parts.entries()].sort(([a], [b]) => a - b).map(([, row]) => row);
}

function tallyOf(raw: RawTally, anchors: readonly number[]): ProgressTally {
  return {
    none: raw.none,
    unprogrammed: raw.unprogrammed,
    through: foldThrough(raw.through, anchors),
    stuck: [...raw.stuck.entries()].sort(([a], [b]) => a - b),
  };
}

/**
 * The objects a NACK member's unresolved NACKs blame together, or undefined when one NACK has no blame.
 * nackBlocker's rule (every NACK names objects, none this one) over the union of their objects gives
 * what it gives over the NACKs themselves, for every object; a union beyond NackBlame's bound is
 * counted as unblamed (held against every object: the safe side).
 */
function blameOfMember(nacks: NonNullable<NonNullable<Member['b']>['n']>): string[] | undefined {
  if (nacks.some((nack) => nack.o === undefined || nack.o.length === 0)) return undefined;
  const union = [...new Set(nacks.flatMap((nack) => nack.o ?? []))].sort();
  return union.length <= MAX_BLAMED ? union : undefined;
}

function nackGroupsOf(blames: readonly (string[] | undefined)[]): ProgressNackGroup[] {
  let unblamed = 0;
  const blamed = new Map<string, { o: string[]; n: number }>();
  for (const blame of blames) {
    if (blame === undefined) {
      unblamed++;
      continue;
    }
    const key = blame.join('\n');
    const group = blamed.get(key);
    if (group === undefined) blamed.set(key, { o: blame, n: 1 });
    else group.n++;
  }
  const keys = [...blamed.keys()].sort();
  // One slot stays for the unblamed group when there is one, or when blames overflow into it.
  const room = keys.length + (unblamed > 0 ? 1 : 0) <= MAX_PROGRESS_BLAME_GROUPS ? keys.length : MAX_PROGRESS_BLAME_GROUPS - 1;
  for (const key of keys.slice(room)) unblamed += (blamed.get(key) as { n: number }).n;
  const groups: ProgressNackGroup[] = unblamed > 0 ? [{ n: unblamed }] : [];
  for (const key of keys.slice(0, room)) groups.push(blamed.get(key) as ProgressNackGroup);
  return groups;
}

function splitGroupsOf(raws: ReadonlyMap<string, { lineages: string[]; raw: RawTally }>, anchors: readonly number[]): ProgressSplitGroup[] {
  const keys = [...raws.keys()].sort();
  const kept = keys.length <= MAX_PROGRESS_SPLIT_GROUPS ? keys : keys.slice(0, MAX_PROGRESS_SPLIT_GROUPS - 1);
  const groups: ProgressSplitGroup[] = kept.map((key) => {
    const { lineages, raw } = raws.get(key) as { lineages: string[]; raw: RawTally };
    return { lineages, ...tallyOf(raw, anchors) };
  });
  if (kept.length === keys.length) return groups;
  // The rest share one group under the union of their lineages: if all of those are dead, so are each
  // member's own; if one is live, a member whose own are all dead blocks too (safe, not live).
  const union = new Set<string>();
  const merged = emptyRawTally();
  for (const key of keys.slice(kept.length)) {
    const { lineages, raw } = raws.get(key) as { lineages: string[]; raw: RawTally };
    for (const lineage of lineages) union.add(lineage);
    mergeRawTally(merged, raw);
  }
  const lineages = [...union].sort();
  const fits = lineages.length <= MAX_PROGRESS_SPLIT_LINEAGES;
  groups.push({ lineages: lineages.slice(0, MAX_PROGRESS_SPLIT_LINEAGES), ...(fits ? {} : { lineagesOmitted: true as const }), ...tallyOf(merged, anchors) });
  return groups;
}

/**
 * Which members are listed first: those blocking whatever the watermark, most severe first (NACKs,
 * then stuck at an anchor, split, nothing subscribed), then the least programmed, and members relieved
 * for some objects last. The decision names blockers in severity order too (sortBlockers), so these
 * are the ones it would name.
 */
function listingRank(member: Member, stuckAtAnAnchor: boolean): number {
  if ((member.b?.n?.length ?? 0) > 0) return 0;
  if (stuckAtAnAnchor) return 1;
  if (member.b?.split !== undefined) return 2;
  if (member.b?.none === true) return 3;
  // A relieved member blocks only the objects its added names matter to: after the ones that block all.
  return member.h === undefined ? 4 : 5;
}

/**
 * Relieved members (NamesHoldRelief) grouped by anchor and objects, the largest groups first up to
 * MAX_PROGRESS_RELIEF_GROUPS; the members of the groups left out are held for every object, as without
 * relief: their stuck answers go back into the tally's count at that anchor.
 */
function reliefGroupsOf(relieved: readonly { seq: number; o: readonly string[]; stuck: boolean }[], tally: RawTally): ProgressReliefGroup[] {
  // Members share their relief's object list while it stands (the gateway keeps it), so the key
  // string is built once per list, not per member.
  const keys = new Map<readonly string[], string>();
  const groups = new Map<string, ProgressReliefGroup>();
  for (const { seq, o, stuck } of relieved) {
    let objects = keys.get(o);
    if (objects === undefined) {
      objects = o.join('\n');
      keys.set(o, objects);
    }
    const key = `${seq}\n${objects}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { seq, o: [...o], n: 1, stuck: stuck ? 1 : 0 });
    else {
      group.n++;
      if (stuck) group.stuck++;
    }
  }
  // The map's keys (seq, then the objects) order the groups: sorted once, then ranked by size (stable).
  const byKey = [...groups.entries()].sort(([a], [b]) => compareReliefKeys(a, b)).map(([, group]) => group);
  const ranked = [...byKey].sort((a, b) => b.n - a.n);
  for (const left of ranked.slice(MAX_PROGRESS_RELIEF_GROUPS)) if (left.stuck > 0) tally.stuck.set(left.seq, (tally.stuck.get(left.seq) ?? 0) + left.stuck);
  const kept = new Set(ranked.slice(0, MAX_PROGRESS_RELIEF_GROUPS));
  return byKey.filter((group) => kept.has(group));
}

/** Relief group keys (`seq\nobjects…`) by seq as a number, then by their objects. */
function compareReliefKeys(a: string, b: string): number {
  const bySeq = Number(a.slice(0, a.indexOf('\n'))) - Number(b.slice(0, b.indexOf('\n')));
  return bySeq !== 0 ? bySeq : a < b ? -1 : a > b ? 1 : 0;
}

/** The PROGRESS item of `lineage` from the gateway's states of its members. */
export function progressFromStates(input: ProgressBuildInput): LineageProgress {
  const { lineage, heartbeatAt, policy } = input;
  const marks = [...new Map(input.openWatermarks.map((mark) => [mark.seq, mark])).values()].sort((a, b) => a.seq - b.seq).slice(0, MAX_PROGRESS_ANCHORS);
  const anchors = marks.map((mark) => mark.seq);
  const main = emptyRawTally();
  const split = new Map<string, { lineages: string[]; raw: RawTally }>();
  const blames: (string[] | undefined)[] = [];
  const candidates: { nodeId: string; member: Member; rank: number }[] = [];
  const relieved: { seq: number; o: readonly string[]; stuck: boolean }[] = [];
  let members = 0;
  let incarnations = 0;
  for (const state of latestPerNode(input.states)) {
    if (state.lineage !== lineage) continue;
    const member = input.memberOf === undefined ? memberFromEnvoyState(state, input.requiredTypeUrls) : input.memberOf(state);
    // Judged at the heartbeat this item carries, which vouches for CONNECTED members as in evaluation.
    if (!isLiveMember(member, heartbeatAt, policy.ttlMs, undefined, heartbeatAt)) continue;
    members++;
    incarnations += incarnationOf(member);
    const nacks = member.b?.n ?? [];
    if (nacks.length > 0) {
      blames.push(blameOfMember(nacks));
      candidates.push({ nodeId: state.nodeId, member, rank: listingRank(member, false) });
      continue;
    }
    const lineages = member.b?.split;
    let raw = main;
    if (lineages !== undefined) {
      const key = lineages.join('\n');
      const group = split.get(key) ?? { lineages: [...lineages], raw: emptyRawTally() };
      split.set(key, group);
      raw = group.raw;
    }
    // A split group is only judged by its tally once every other lineage of its set is dead: its
    // members' stuck counts are memberBlocker's with those lineages dead.
    const dead = lineages === undefined ? undefined : new Set(lineages);
    let stuckAtAnAnchor = false;
    for (const mark of marks) {
      // Judged without an object: the member's own blockers, as for the objects its relief names.
      const stuck = memberBlocker(state.nodeId, lineage, member, mark, heartbeatAt, policy, dead)?.reason === 'stuck';
      stuckAtAnAnchor ||= stuck;
      const relief = member.h;
      if (lineages === undefined && relief !== undefined && member.t < mark.seq && relief.t >= mark.seq) relieved.push({ seq: mark.seq, o: relief.o, stuck });
      else if (stuck) raw.stuck.set(mark.seq, (raw.stuck.get(mark.seq) ?? 0) + 1);
    }
    if (member.b?.none === true) raw.none++;
    else if (member.t === NOT_PROGRAMMED) raw.unprogrammed++;
    else raw.through.push(member.t);
    candidates.push({ nodeId: state.nodeId, member, rank: listingRank(member, stuckAtAnAnchor) });
  }
  const relief = reliefGroupsOf(relieved, main);
  const maxListed = Math.max(0, Math.min(input.maxListed ?? MAX_PROGRESS_LISTED, MAX_PROGRESS_LISTED));
  candidates.sort((a, b) => a.rank - b.rank || (a.rank === 4 ? a.member.t - b.member.t : 0) || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  return {
    lineage,
    v: input.v,
    heartbeatAt,
    members,
    incarnations,
    anchors,
    ...tallyOf(main, anchors),
    nacks: nackGroupsOf(blames),
    split: splitGroupsOf(split, anchors),
    listed: candidates.slice(0, maxListed).map(({ nodeId, member }) => [nodeId, member]),
    ...(relief.length === 0 ? {} : { relief }),
    ...(input.requiredTypeUrls.length === 0 ? {} : { required: [...new Set(input.requiredTypeUrls)].sort() }),
    ttlMs: policy.ttlMs,
  };
}

/**
 * The functions' required types the item's gateway did not judge its members with (lineage-progress-item.ts
 * `required`): with any, a member the item counts as programmed may lack one of them.
 */
export function requiredTypesMissing(item: LineageProgress, required: readonly string[] | undefined): string[] {
  const judged = new Set(item.required ?? []);
  return (required ?? []).filter((typeUrl) => !judged.has(typeUrl));
}

// --- evaluation (the convergence function)

/** One live lineage as read: its PROGRESS item, or undefined when it is missing or corrupt. */
export interface LineageProgressRead {
  lineage: Lineage;
  progress: LineageProgress | undefined;
}

export interface ProgressEvaluationInput {
  object: ObjectRef;
  generation: number;
  watermark: Watermark;
  /** The lineages that may have live Envoys (the registry's live set), each with its item. */
  lineages: readonly LineageProgressRead[];
  /** Registered lineages out of the live set: a split member's types held on one no longer count (memberBlocker). */
  deadLineages?: ReadonlySet<string>;
  now: number;
  policy: ConvergencePolicy;
  /** The table clock heartbeats are judged on (table-clock.ts), as evaluateFromAggregates's members; absent: wall time. */
  tableClock?: TableClockView;
}

/**
 * A Convergence whose blockers name only the listed members: `blockersOmitted` counts the other
 * members that block (programmed + named member blockers + blockersOmitted = total).
 */
export type ProgressConvergence = Convergence & { blockersOmitted: number };

interface TallyCounts {
  programmed: number;
  stuck: number;
  noWatermark: number;
  pending: number;
}

/**
 * memberBlocker's outcome for a tally's members, counted. Without a watermark on the lineage every
 * member with a subscribed type is `noWatermark`; with one, `programmed(W)` is the design's Σ count at
 * seq ≥ W.seq (memberBlocker's `t ≥ W.seq`), `stuck` is the gateway's count at W when W is an anchor,
 * and everything else is pending (off an anchor, the members the fold or the unknown stuck count leave
 * undecided are pending: the conservative side).
 */
function countsAt(tally: ProgressTally, mark: LineageWatermark | undefined, atAnchor: boolean, relief?: { groups: readonly ProgressReliefGroup[]; object: string }): TallyCounts {
  const members = tallyMembers(tally);
  if (mark === undefined) return { programmed: 0, stuck: 0, noWatermark: members - tally.none, pending: tally.none };
  let programmed = 0;
  for (const [seq, n] of tally.through) if (seq >= mark.seq) programmed += n;
  let stuck = atAnchor ? (tally.stuck.find(([seq]) => seq === mark.seq)?.[1] ?? 0) : 0;
  // Relieved members at this anchor: programmed for an object their added names do not matter to,
  // held as without relief (stuck or pending) for one they do.
  if (atAnchor && relief !== undefined) {
    for (const group of relief.groups) {
      if (group.seq !== mark.seq) continue;
      if (group.o.includes(relief.object)) stuck += group.stuck;
      else programmed += group.n;
    }
  }
  return { programmed, stuck, noWatermark: 0, pending: members - programmed - stuck };
}

/**
 * Blocker text (unknownCountBlocker) of a live lineage without a PROGRESS item: for a moment after its gateway registers it,
 * or for as long as its gateway runs with --progress false (the shard path) while the functions decide
 * from PROGRESS; the condition names the likely cause (docs/OPERATIONS.md, "Moving between the paths").
 */
export const PROGRESS_MISSING = 'no PROGRESS item yet; a gateway run with --progress false writes none';

/** Blocker text of an item judged with a shorter TTL than the functions' ENVOY_TTL_MS. */
export function ttlMismatchText(itemTtlMs: number | undefined, ttlMs: number): string {
  return `its gateway's --envoy-ttl-ms (${itemTtlMs === undefined ? 'not stated' : itemTtlMs}) is below the functions' ENVOY_TTL_MS (${ttlMs})`;
}

/** Blocker text of an item judged without some of the functions' REQUIRED_TYPE_URLS. */
export function requiredMismatchText(missing: readonly string[]): string {
  return `its gateway's --required-type-urls lack ${missing.map(shortTypeName).join(', ')} of the functions' REQUIRED_TYPE_URLS`;
}


/** Convergence of X@G from the live lineages' PROGRESS items; same answer as evaluateFromAggregates (file comment). */
export function evaluateFromProgress(input: ProgressEvaluationInput): ProgressConvergence {
  const { object, generation, watermark, now, policy } = input;
  const objectKey = formatObjectRef(object);
  const reasons = new Set<Blocker['reason']>();
  const count = (reason: Blocker['reason'], n: number): void => {
    if (n > 0) reasons.add(reason);
  };
  const named: Blocker[] = [];
  const unknown: Blocker[] = [];
  let total = 0;
  let programmed = 0;
  for (const { lineage, progress } of input.lineages) {
    if (progress === undefined) {
      unknown.push(unknownCountBlocker(lineage, PROGRESS_MISSING));
      continue;
    }
    // Judged with fewer required types than ours: its "programmed" may count an Envoy that has not
    // subscribed to one of them (the false True REQUIRED_TYPE_URLS exists to prevent), so it counts as
    // unknown, and the blocker names the setting to align.
    const missingRequired = requiredTypesMissing(progress, policy.requiredTypeUrls);
    if (missingRequired.length > 0) {
      unknown.push(unknownCountBlocker(lineage, requiredMismatchText(missingRequired)));
      continue;
    }
    // Judged with a shorter TTL than ours: it may have dropped a disconnected Envoy we still count.
    if ((progress.ttlMs ?? 0) < policy.ttlMs) {
      unknown.push(unknownCountBlocker(lineage, ttlMismatchText(progress.ttlMs, policy.ttlMs)));
      continue;
    }
    // Every member's lastSeenAt is at most the gateway's heartbeat: past heartbeat + TTL none is live.
    if (!seenWithin(progress.heartbeatAt, now, policy.ttlMs, input.tableClock)) continue;
    total += progress.members;
    if (!watermark.observable) continue;
    const mark = watermark.lineages[lineage];
    const atAnchor = mark !== undefined && progress.anchors.includes(mark.seq);
    for (const group of progress.nacks) count(blamesOtherObjectsOnly([{ objects: group.o }], object) ? 'blocked' : 'nacked', group.n);
    const tallies: ProgressTally[] = [progress];
    for (const group of progress.split) {
      if (group.lineagesOmitted === true || splitLiveElsewhere(group.lineages, lineage, input.deadLineages).length > 0) count('pending', tallyMembers(group));
      else tallies.push(group);
    }
    for (const tally of tallies) {
      // Relief groups count members of the top-level tally only.
      const counts = countsAt(tally, mark, atAnchor, tally === progress && progress.relief !== undefined ? { groups: progress.relief, object: objectKey } : undefined);
      programmed += counts.programmed;
      count('stuck', counts.stuck);
      count('noWatermark', counts.noWatermark);
      count('pending', counts.pending);
    }
    for (const [nodeId, member] of progress.listed) {
      const blocker = memberBlocker(nodeId, lineage, member, mark, now, policy, input.deadLineages, object);
      if (blocker === undefined) continue;
      named.push(blocker);
      reasons.add(blocker.reason);
    }
  }
  if (!watermark.observable) return { ...unobservableConvergence(object, generation, watermark, total), blockersOmitted: 0 };
  if (total === 0 && unknown.length === 0) return { ...noEnvoysConvergence(object, generation), blockersOmitted: 0 };
  sortBlockers(named);
  return {
    object,
    generation,
    state: stateOfReasons(reasons, unknown.length > 0),
    programmed,
    total,
    blockers: [...named, ...unknown],
    blockersOmitted: total - programmed - named.length,
  };
}
