// A names hold judged per object (docs/ARCHITECTURE.md, "A names hold is held against the objects that
// route to the names"): a member whose programmedThrough only a names hold keeps unset carries a relief
// (aggregate-shard.ts NamesHoldRelief) from the gateway, and counts as programmed through its ACKs for
// every object but the ones the held names matter to. Here: the member rule (aggregate.ts), what its
// ACKs alone say (envoy-state.ts), and the PROGRESS item's relief groups, built and evaluated
// (lineage-progress.ts), against memberBlocker applied to each member.
import fc from 'fast-check';
import {
  evaluateFromProgress,
  formatObjectRef,
  LineageProgressSchema,
  MAX_PROGRESS_RELIEF_GROUPS,
  memberBlocker,
  memberFromEnvoyState,
  NOT_PROGRAMMED,
  programmedThroughBesidesNamesHolds,
  progressFromStates,
  relievedFor,
  withNamesHoldRelief,
  withProgrammedThrough,
  type EnvoyState,
  type LineageProgress,
  type LineageWatermark,
  type Member,
  type NamesHoldRelief,
} from '../../../common/core';
import { DEFAULT_PROGRESS_TIMING } from '../../../xds-gateway/tracking/progress/progress-publisher';
import { fullyProgrammedAnchors, programmedAnchorsWithRelief, progressWriteDue } from '../../../xds-gateway/tracking/progress/progress-timing';
import { CDS, EDS, envoy, L1, T0 } from './fixtures';

const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const x = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'x' };
const y = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'y' };
const Y = formatObjectRef(y);

const mark = (seq: number): LineageWatermark => ({ seq, types: { [CDS]: seq }, at: T0 });

/** An Envoy programmed through `t` (CDS and EDS ACKed there). */
function programmed(nodeId: string, t: number): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked: t }, [EDS]: { acked: t } }, { programmedThrough: t });
}

/** An Envoy ACKed at `acked` on both types whose EDS holds names it added `since` (not yet served): programmedThrough unset. */
function held(nodeId: string, acked: number, since = T0): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked }, [EDS]: { acked, namesChange: { at: since, sent: false } } });
}

function build(states: readonly EnvoyState[], reliefs: ReadonlyMap<string, NamesHoldRelief>, anchors: readonly number[], now = T0): LineageProgress {
  return progressFromStates({
    lineage: L1,
    v: 1,
    heartbeatAt: now,
    states,
    openWatermarks: anchors.map(mark),
    requiredTypeUrls: [],
    policy,
    memberOf: (state) => withNamesHoldRelief(memberFromEnvoyState(state), reliefs.get(state.nodeId)),
  });
}

function decide(item: LineageProgress, object: typeof x, seq: number, now = T0) {
  return evaluateFromProgress({ object, generation: 2, watermark: { observable: true, lineages: { [L1]: mark(seq) } }, lineages: [{ lineage: L1, progress: item }], now, policy });
}

describe('the member rule', () => {
  const relief: NamesHoldRelief = { t: 7, o: [Y] };

  it('attaches a relief only to a member that nothing but a names hold keeps from programmed', () => {
    const member = memberFromEnvoyState(held('a', 7));
    expect(member.t).toBe(NOT_PROGRAMMED);
    expect(withNamesHoldRelief(member, relief).h).toEqual(relief);
    // Programmed already, or held by a NACK, a missing required type, nothing subscribed: unchanged.
    const through = memberFromEnvoyState(programmed('b', 7));
    expect(withNamesHoldRelief(through, relief)).toBe(through);
    const nacked = memberFromEnvoyState(envoy('c', { [CDS]: { acked: 7, nack: { seq: 8, message: 'bad', at: T0 } }, [EDS]: { acked: 7, namesChange: { at: T0, sent: false } } }));
    expect(withNamesHoldRelief(nacked, relief)).toBe(nacked);
    const lacking = memberFromEnvoyState(held('d', 7), ['type.googleapis.com/envoy.config.listener.v3.Listener']);
    expect(withNamesHoldRelief(lacking, relief)).toBe(lacking);
    expect(withNamesHoldRelief(member, undefined)).toBe(member);
  });

  it('counts it programmed at a watermark its ACKs reach, for an object its held names do not matter to only', () => {
    const member: Member = withNamesHoldRelief(memberFromEnvoyState(held('a', 7)), relief);
    expect(relievedFor(member, 7, x)).toBe(true);
    expect(relievedFor(member, 8, x)).toBe(false);
    expect(relievedFor(member, 7, y)).toBe(false);
    expect(memberBlocker('a', L1, member, mark(7), T0, policy, undefined, x)).toBeUndefined();
    expect(memberBlocker('a', L1, member, mark(7), T0, policy, undefined, y)).toMatchObject({ reason: 'pending' });
    expect(memberBlocker('a', L1, member, mark(8), T0, policy, undefined, x)).toMatchObject({ reason: 'pending' });
    // Without an object (the gateway's own stuck judgement) the hold counts as it always did.
    expect(memberBlocker('a', L1, member, mark(7), T0, policy)).toMatchObject({ reason: 'pending' });
  });
});

describe('what the ACKs alone say', () => {
  const history = { [CDS]: [3, 7], [EDS]: [3, 8] };

  it('is the programmedThrough of the ACKed versions while a names hold (added or reference) keeps it unset', () => {
    const added = withProgrammedThrough(held('a', 7), history, { currentSeq: 8 });
    expect(added.programmedThrough).toBeUndefined();
    expect(programmedThroughBesidesNamesHolds(added, history, { currentSeq: 8 })).toBe(7);
    const reference = withProgrammedThrough(envoy('b', { [CDS]: { acked: 7 }, [EDS]: { acked: 8, namesChange: { at: T0, sent: false, reference: true } } }), history, { currentSeq: 8 });
    expect(programmedThroughBesidesNamesHolds(reference, history, { currentSeq: 8 })).toBe(8);
  });

  it('is nothing when no names hold is what keeps programmedThrough unset', () => {
    const through = withProgrammedThrough(programmed('a', 7), history, { currentSeq: 8 });
    expect(programmedThroughBesidesNamesHolds(through, history, { currentSeq: 8 })).toBeUndefined();
    const never = envoy('b', { [CDS]: { acked: 7 }, [EDS]: {} });
    expect(programmedThroughBesidesNamesHolds(never, history, { currentSeq: 8 })).toBeUndefined();
  });
});

describe('PROGRESS relief groups', () => {
  // Two anchors: X's change at 7, Y's at 9 (whose new cluster's endpoints the held members added).
  const states = [programmed('p1', 9), programmed('p2', 9), held('h1', 7), held('h2', 7), held('h3', 9)];
  const reliefs = new Map<string, NamesHoldRelief>([
    ['h1', { t: 7, o: [Y] }],
    ['h2', { t: 7, o: [Y] }],
    ['h3', { t: 9, o: [Y] }],
  ]);

  it('count the relieved members per anchor and objects; the item validates', () => {
    const item = build(states, reliefs, [7, 9]);
    expect(item.relief).toEqual([
      { seq: 7, o: [Y], n: 3, stuck: 0 },
      { seq: 9, o: [Y], n: 1, stuck: 0 },
    ]);
    expect(item.unprogrammed).toBe(3);
    expect(LineageProgressSchema.safeParse(item).success).toBe(true);
  });

  it('decide an object the held names do not matter to as programmed, and hold the one they do', () => {
    const item = build(states, reliefs, [7, 9]);
    expect(decide(item, x, 7)).toMatchObject({ state: 'Programmed', programmed: 5, total: 5, blockersOmitted: 0 });
    const forY = decide(item, y, 9);
    expect(forY).toMatchObject({ state: 'Pending', programmed: 2, total: 5 });
    // Off its relief (X at 9, beyond h1's and h2's ACKs): only h3 is relieved there.
    expect(decide(item, x, 9)).toMatchObject({ state: 'Pending', programmed: 3, total: 5 });
    expect(fullyProgrammedAnchors(item)).toEqual([]);
    expect(programmedAnchorsWithRelief(item)).toEqual([7]);
  });

  it('make a write due at once when an anchor is done for the objects outside the relief, and again when it is done for all', () => {
    const before = build(states.map((state) => (state.nodeId.startsWith('h') ? { ...state, types: { ...state.types, [CDS]: { lineage: L1, subscribed: true, acked: 5 } } } : state)), new Map(), [7, 9]);
    const relieved = build(states, reliefs, [7, 9]);
    expect(progressWriteDue(before, T0, relieved, DEFAULT_PROGRESS_TIMING)).toEqual({ kind: 'now', why: 'programmed' });
    // The held members' names served: anchor 7 done for every object, not only outside the relief.
    const served = build([programmed('p1', 9), programmed('p2', 9), programmed('h1', 7), programmed('h2', 7), programmed('h3', 8)], new Map(), [7, 9]);
    expect(programmedAnchorsWithRelief(served)).toEqual([7]);
    expect(fullyProgrammedAnchors(served)).toEqual([7]);
    expect(progressWriteDue(relieved, T0, served, DEFAULT_PROGRESS_TIMING)).toEqual({ kind: 'now', why: 'programmed' });
  });

  it('agree with memberBlocker applied to each member', () => {
    const item = build(states, reliefs, [7, 9]);
    for (const object of [x, y]) {
      for (const seq of [7, 9]) {
        const members = states.map((state) => withNamesHoldRelief(memberFromEnvoyState(state), reliefs.get(state.nodeId)));
        const blocked = members.filter((member, i) => memberBlocker(states[i]!.nodeId, L1, member, mark(seq), T0, policy, undefined, object) !== undefined).length;
        expect(decide(item, object, seq).programmed).toBe(states.length - blocked);
      }
    }
  });

  it('keep a stuck relieved member stuck for the objects its held names matter to', () => {
    const late = T0 + policy.ackTimeoutMs + 1;
    const stuck = [programmed('p1', 7), { ...held('h1', 7, T0), lastSeenAt: late }];
    const item = build(stuck, new Map([['h1', { t: 7, o: [Y] }]]), [7], late);
    expect(item.relief).toEqual([{ seq: 7, o: [Y], n: 1, stuck: 1 }]);
    expect(item.stuck).toEqual([]);
    expect(decide(item, y, 7, late)).toMatchObject({ state: 'Stuck', programmed: 1 });
    expect(decide(item, x, 7, late)).toMatchObject({ state: 'Programmed', programmed: 2 });
  });

  it('beyond MAX_PROGRESS_RELIEF_GROUPS: the members of the groups left out are held for every object, stuck where they are', () => {
    const late = T0 + policy.ackTimeoutMs + 1;
    const many: EnvoyState[] = [];
    const reliefsByNode = new Map<string, NamesHoldRelief>();
    for (let i = 0; i <= MAX_PROGRESS_RELIEF_GROUPS; i++) {
      // Group i has i + 1 members (the smallest one is left out), each with its own objects.
      for (let j = 0; j <= i; j++) {
        const nodeId = `h${i}-${j}`;
        many.push({ ...held(nodeId, 7, T0), lastSeenAt: late });
        reliefsByNode.set(nodeId, { t: 7, o: [`x.dev/Route/ns/o${String(i).padStart(2, '0')}`] });
      }
    }
    const item = build(many, reliefsByNode, [7], late);
    expect(item.relief).toHaveLength(MAX_PROGRESS_RELIEF_GROUPS);
    expect(item.relief?.some((group) => group.o[0] === 'x.dev/Route/ns/o00')).toBe(false);
    expect(item.stuck).toEqual([[7, 1]]);
    expect(LineageProgressSchema.safeParse(item).success).toBe(true);
    // Not in any group: one member left held (stuck) for it.
    expect(decide(item, x, 7, late)).toMatchObject({ state: 'Stuck', programmed: many.length - 1 });
  });

  it('list the groups by anchor, then objects, whatever their sizes (an item built twice from the same states is the same item)', () => {
    const Z = 'x.dev/Route/ns/z';
    const item = build([held('h1', 7), held('h2', 9), held('h3', 9)], new Map([['h1', { t: 7, o: [Y] }], ['h2', { t: 9, o: [Z] }], ['h3', { t: 9, o: [Z] }]]), [7, 9]);
    expect(item.relief?.map((group) => [group.seq, group.o[0], group.n])).toEqual([
      [7, Y, 1],
      [7, Z, 2],
      [9, Z, 2],
    ]);
  });

  it('an item whose relief does not add up is refused', () => {
    const item = build(states, reliefs, [7, 9]);
    expect(LineageProgressSchema.safeParse({ ...item, relief: [{ seq: 8, o: [Y], n: 1, stuck: 0 }] }).success).toBe(false);
    expect(LineageProgressSchema.safeParse({ ...item, relief: [{ seq: 7, o: [Y], n: 4, stuck: 0 }] }).success).toBe(false);
    expect(LineageProgressSchema.safeParse({ ...item, relief: [{ seq: 7, o: [Y], n: 1, stuck: 2 }] }).success).toBe(false);
  });
});

describe('PROGRESS with relief, against memberBlocker applied to each member (property)', () => {
  const objects = [x, y, { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'z' }] as const;
  const memberArb = fc.record({
    kind: fc.constantFrom('programmed', 'held', 'relieved'),
    acked: fc.integer({ min: 1, max: 6 }),
    reliefT: fc.integer({ min: 1, max: 6 }),
    owners: fc.subarray([0, 1, 2], { minLength: 1 }),
    waited: fc.boolean(),
  });

  it('counts programmed members and decides the verdict as the per-member rule does, at every anchor, for every object', () => {
    fc.assert(
      fc.property(fc.array(memberArb, { minLength: 1, maxLength: 12 }), fc.uniqueArray(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }), (specs, anchors) => {
        const late = T0 + policy.ackTimeoutMs + 1;
        const states: EnvoyState[] = [];
        const reliefs = new Map<string, NamesHoldRelief>();
        specs.forEach((spec, i) => {
          const nodeId = `e${i}`;
          const seenAt = spec.waited ? late : T0;
          if (spec.kind === 'programmed') states.push({ ...programmed(nodeId, spec.acked), lastSeenAt: seenAt });
          else states.push({ ...held(nodeId, spec.acked, T0), lastSeenAt: seenAt });
          if (spec.kind === 'relieved') reliefs.set(nodeId, { t: spec.reliefT, o: spec.owners.map((index) => formatObjectRef(objects[index]!)).sort() });
        });
        const sorted = [...anchors].sort((a, b) => a - b);
        const item = build(states, reliefs, sorted, late);
        expect(LineageProgressSchema.safeParse(item).success).toBe(true);
        const members = states.map((state) => withNamesHoldRelief(memberFromEnvoyState(state), reliefs.get(state.nodeId)));
        // The relief group a member is in at an anchor (its ACKs short of the anchor, its relief reaching it).
        const groupAt = (member: Member, seq: number): string | undefined => (member.h !== undefined && member.t < seq && member.h.t >= seq ? `${seq}\n${member.h.o.join('\n')}` : undefined);
        const groups = new Map<string, number>();
        for (const member of members) {
          for (const seq of sorted) {
            const key = groupAt(member, seq);
            if (key !== undefined) groups.set(key, (groups.get(key) ?? 0) + 1);
          }
        }
        // Every group is listed up to the cap, the largest first: none left out is larger than one listed.
        const listed = new Set((item.relief ?? []).map((group) => `${group.seq}\n${group.o.join('\n')}`));
        expect(listed.size).toBe(Math.min(groups.size, MAX_PROGRESS_RELIEF_GROUPS));
        const smallestListed = Math.min(...[...groups].filter(([key]) => listed.has(key)).map(([, n]) => n));
        for (const [key, n] of groups) if (!listed.has(key)) expect(n).toBeLessThanOrEqual(smallestListed);
        for (const object of objects) {
          for (const seq of sorted) {
            // A member of a group left out is held for every object at that anchor (judged without one).
            const blockers = members.map((member, i) => {
              const group = groupAt(member, seq);
              const leftOut = group !== undefined && !listed.has(group);
              return memberBlocker(states[i]!.nodeId, L1, member, mark(seq), late, policy, undefined, leftOut ? undefined : object);
            });
            const decided = decide(item, object, seq, late);
            expect(decided.programmed).toBe(blockers.filter((blocker) => blocker === undefined).length);
            const reasons = new Set(blockers.flatMap((blocker) => (blocker === undefined ? [] : [blocker.reason])));
            expect(decided.state).toBe(reasons.size === 0 ? 'Programmed' : reasons.has('stuck') ? 'Stuck' : 'Pending');
          }
        }
      }),
      {
        numRuns: 300,
        // Seventeen relief groups over four anchors: one is left out, its member held for every object.
        examples: [
          [
            [
              { kind: 'relieved', acked: 1, reliefT: 3, owners: [0], waited: false },
              { kind: 'relieved', acked: 1, reliefT: 3, owners: [2], waited: false },
              { kind: 'relieved', acked: 1, reliefT: 4, owners: [1], waited: false },
              { kind: 'relieved', acked: 1, reliefT: 4, owners: [0, 1], waited: false },
              { kind: 'relieved', acked: 1, reliefT: 3, owners: [0, 2], waited: false },
              { kind: 'programmed', acked: 1, reliefT: 1, owners: [2], waited: false },
            ],
            [4, 2, 3, 1],
          ],
        ],
      },
    );
  });
});
