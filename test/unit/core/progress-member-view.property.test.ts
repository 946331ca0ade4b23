// What the fleet view reads of one member from its lineage's PROGRESS item (core
// progress-member-view.ts) must never overstate it: over random fleets (programmedThrough spread over
// the open watermarks, some Envoys unprogrammed, NACKed, without types, on another lineage for a type,
// disconnected), for every member the view is either absent, exactly its programmedThrough when
// listed, or at most it.
import fc from 'fast-check';
import { memberProgressView, progressFromStates, type EnvoyState, type LineageWatermark } from '../../../common/core';
import { CDS, envoy, L1, L2, LDS, T0 } from './fixtures';

const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };

type Kind = 'programmed' | 'unprogrammed' | 'nacked' | 'noTypes' | 'split';

const KINDS: readonly Kind[] = ['programmed', 'unprogrammed', 'nacked', 'noTypes', 'split'];

/** A fleet of a few kinds of member (so fleets with one odd kind alone occur, not only mixes of all). */
const fleetArb = fc.subarray([...KINDS], { minLength: 1 }).chain((kinds) =>
  fc.array(fc.record({ kind: fc.constantFrom(...kinds), t: fc.integer({ min: 0, max: 30 }), connected: fc.boolean() }), { minLength: 1, maxLength: 60, size: 'max' }),
);

function stateOf(index: number, member: { kind: Kind; t: number; connected: boolean }): EnvoyState {
  const nodeId = `envoy-${index}`;
  const status = member.connected ? {} : { status: 'DISCONNECTED' as const, disconnectedAt: T0 - 1_000 };
  switch (member.kind) {
    case 'programmed': {
      // Above most others' seqs, so a bound taken from the histogram would overstate any of them.
      const t = 10 + (member.t % 21);
      return envoy(nodeId, { [CDS]: { acked: t } }, { programmedThrough: t, ...status });
    }
    case 'unprogrammed':
      return envoy(nodeId, { [CDS]: {} }, status);
    case 'nacked':
      return envoy(nodeId, { [CDS]: { acked: member.t, nack: { seq: member.t + 1, message: 'rejected', at: T0 } } }, { programmedThrough: member.t, ...status });
    case 'noTypes':
      return envoy(nodeId, {}, status);
    case 'split':
      return envoy(nodeId, { [CDS]: { acked: member.t }, [LDS]: { acked: 3, lineage: L2 } }, { programmedThrough: member.t, ...status });
  }
}

test('a member\'s view from PROGRESS is its own programmedThrough when listed, never more than it otherwise', () => {
  fc.assert(
    fc.property(
      fleetArb,
      fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 5 }),
      fc.integer({ min: 1, max: 6 }),
      (members, anchorSeqs, maxListed) => {
        const states = members.map((member, index) => stateOf(index, member));
        const open: LineageWatermark[] = anchorSeqs.map((seq) => ({ seq, types: { [CDS]: seq }, at: T0 }));
        const progress = progressFromStates({ lineage: L1, v: 1, heartbeatAt: T0, states, openWatermarks: open, requiredTypeUrls: [], policy, maxListed });
        for (const state of states) {
          const view = memberProgressView(progress, state.nodeId);
          if (view === undefined) continue;
          expect(state.programmedThrough).toBeDefined();
          if (view.listed) expect(view.programmedThroughAtLeast).toBe(state.programmedThrough);
          else expect(view.programmedThroughAtLeast).toBeLessThanOrEqual(state.programmedThrough ?? -1);
        }
      },
    ),
    { numRuns: 500 },
  );
});

test('in a healthy fleet every member gets a bound: the lowest programmedThrough of the lineage', () => {
  const states = [5, 7, 7, 9].map((t, index) => stateOf(index, { kind: 'programmed', t, connected: true }));
  const progress = progressFromStates({ lineage: L1, v: 1, heartbeatAt: T0, states, openWatermarks: [], requiredTypeUrls: [], policy, maxListed: 1 });
  const views = states.map((state) => memberProgressView(progress, state.nodeId));
  expect(views.filter((view) => view?.listed === true)).toHaveLength(1);
  for (const [index, view] of views.entries()) {
    if (view?.listed === true) expect(view.programmedThroughAtLeast).toBe(states[index]!.programmedThrough);
    else expect(view).toEqual({ programmedThroughAtLeast: 15, listed: false });
  }
  // One NACKed member elsewhere: the unlisted ones are no longer bounded (it could be any of them).
  const withNack = progressFromStates({ lineage: L1, v: 1, heartbeatAt: T0, states: [...states, stateOf(9, { kind: 'nacked', t: 2, connected: true })], openWatermarks: [], requiredTypeUrls: [], policy, maxListed: 1 });
  expect(states.map((state) => memberProgressView(withNack, state.nodeId)).filter((view) => view !== undefined && !view.listed)).toEqual([]);
});
