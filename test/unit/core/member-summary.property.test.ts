// memberFromEnvoyState is written in one pass for the gateway (it summarises every state it tracks,
// per ACK). This checks it against a plain reference written the obvious way (each part computed on
// its own, as the definition in docs/ARCHITECTURE.md reads), over the states the fleet model drives
// through the core's transitions, and over arbitrary states (types in any order, on any lineages, with
// any NACKs and holds, required types missing).
import fc from 'fast-check';
import { MEMBER_MESSAGE_LENGTH, memberFromEnvoyState, NOT_PROGRAMMED, shortTypeName, typeWaitingSince, unresolvedNacks, withProgrammedThrough, type EnvoyState, type Member } from '../../../common/core';
import { actionArb, fleetArb, LINEAGES, Simulation, TYPES } from './fleet-model';

function referenceMember(state: EnvoyState, requiredTypeUrls: readonly string[]): Member {
  const subscribedAnywhere = Object.entries(state.types).filter(([, type]) => type.subscribed);
  const lineages = new Set(subscribedAnywhere.map(([, type]) => type.lineage));
  const split = lineages.size > 1 || (lineages.size === 1 && !lineages.has(state.lineage));
  const subscribed = subscribedAnywhere.filter(([, type]) => type.lineage === state.lineage);
  const nacks = unresolvedNacks(state).map((nack) => ({
    u: nack.typeUrl,
    q: nack.seq,
    m: nack.message.length <= MEMBER_MESSAGE_LENGTH ? nack.message : `${nack.message.slice(0, MEMBER_MESSAGE_LENGTH - 1)}…`,
    a: nack.at,
    ...(nack.objects === undefined ? {} : { o: nack.objects }),
    ...(nack.resources === undefined ? {} : { x: nack.resources }),
  }));
  const waiting = subscribed
    .flatMap(([typeUrl, type]) => {
      const since = typeWaitingSince(type);
      const hold = type.namesChange === undefined ? {} : { c: true as const, ...(type.namesChange.reference === true ? { r: true as const } : {}) };
      return since === undefined ? [] : [{ u: typeUrl, s: since, a: type.acked ?? -1, ...hold }];
    })
    .sort((a, b) => (a.u < b.u ? -1 : a.u > b.u ? 1 : 0));
  const missingRequired = requiredTypeUrls.filter((typeUrl) => state.types[typeUrl]?.subscribed !== true || state.types[typeUrl]?.lineage !== state.lineage);
  const b: NonNullable<Member['b']> = {
    ...(nacks.length > 0 ? { n: nacks } : {}),
    ...(waiting.length > 0 ? { w: waiting } : {}),
    ...(split ? { split: [...lineages].sort() } : {}),
    ...(subscribed.length === 0 ? { none: true } : {}),
    ...(missingRequired.length > 0 ? { req: [...missingRequired].sort() } : {}),
  };
  const programmed = subscribed.length > 0 && missingRequired.length === 0 && state.programmedThrough !== undefined;
  return {
    t: programmed ? (state.programmedThrough as number) : NOT_PROGRAMMED,
    r: state.rev,
    ...(state.incarnation !== undefined && state.incarnation > 1 ? { k: state.incarnation } : {}),
    live: state.status !== 'EXPIRED',
    s: state.lastSeenAt,
    ...(state.status === 'CONNECTED' ? { c: true as const } : {}),
    ...(subscribed.length > 0 ? { a: Object.fromEntries(subscribed.map(([typeUrl, type]) => [shortTypeName(typeUrl), type.acked ?? -1])) } : {}),
    ...(Object.keys(b).length > 0 ? { b } : {}),
  };
}

const LINEAGE_NAMES = ['gw-a.boot-1.edge', 'gw-b.boot-1.edge', 'gw-a.boot-2.edge'] as const;
const TYPE_URLS = ['type.googleapis.com/envoy.config.route.v3.RouteConfiguration', 'type.googleapis.com/envoy.config.cluster.v3.Cluster', 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', 'type.googleapis.com/envoy.config.listener.v3.Listener', 'type.googleapis.com/x.Custom'] as const;
const at = fc.integer({ min: 1_000, max: 2_000 });
const typeStateArb = fc.record(
  {
    lineage: fc.constantFrom(...LINEAGE_NAMES),
    subscribed: fc.boolean(),
    acked: fc.integer({ min: 1, max: 9 }),
    nack: fc.record({ seq: fc.integer({ min: 1, max: 9 }), message: fc.string({ maxLength: 400 }), at, blame: fc.option(fc.record({ basis: fc.constantFrom('named' as const, 'changed' as const), objects: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }), resources: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 3 }) }), { nil: undefined }) }),
    pending: fc.record({ seq: fc.integer({ min: 1, max: 9 }), sentAt: at }),
    namesChange: fc.record({ at, sent: fc.boolean(), reference: fc.constant(true) }, { requiredKeys: ['at', 'sent'] }),
  },
  { requiredKeys: ['lineage', 'subscribed'] },
);
/** States as any mix of transitions could leave them: types in any order, on any lineages, any holds. */
const envoyStateArb: fc.Arbitrary<EnvoyState> = fc
  .record({
    types: fc.uniqueArray(fc.tuple(fc.constantFrom(...TYPE_URLS), typeStateArb), { selector: ([typeUrl]) => typeUrl, maxLength: 5 }),
    lineage: fc.constantFrom(...LINEAGE_NAMES),
    status: fc.constantFrom('CONNECTED' as const, 'DISCONNECTED' as const, 'EXPIRED' as const),
    programmedThrough: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
    incarnation: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    rev: fc.nat(50),
    lastSeenAt: at,
  })
  .map(({ types, programmedThrough, incarnation, ...rest }) => ({
    nodeId: 'envoy-1',
    cluster: 'edge',
    group: 'edge',
    metadata: {},
    connectedAt: 1_000,
    ...rest,
    types: Object.fromEntries(types),
    ...(programmedThrough === undefined ? {} : { programmedThrough }),
    ...(incarnation === undefined ? {} : { incarnation }),
  }));

describe('memberFromEnvoyState (one pass) against the reference', () => {
  it('gives the same member, key order included, for any state', () => {
    fc.assert(
      fc.property(envoyStateArb, fc.subarray([...TYPE_URLS]), (state, requiredTypeUrls) => {
        // Stringified: the stored item's attribute order is the object's.
        expect(JSON.stringify(memberFromEnvoyState(state, requiredTypeUrls))).toBe(JSON.stringify(referenceMember(state, requiredTypeUrls)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the same member for every state the fleet model reaches', () => {
    fc.assert(
      fc.property(fleetArb as fc.Arbitrary<{ lineage: number; types: string[] }[]>, fc.array(actionArb, { maxLength: 60, size: 'max' }), fc.subarray([...TYPES]), (fleet, actions, requiredTypeUrls) => {
        const sim = new Simulation(fleet);
        const histories: Record<string, Record<string, number[]>> = {};
        for (const lineage of LINEAGES) histories[lineage] = Object.fromEntries(TYPES.map((t) => [t, [0]]));
        const check = (): void => {
          for (const raw of sim.core.values()) {
            const state = withProgrammedThrough(raw, histories[raw.lineage] ?? {}, { currentSeq: sim.seqs[raw.lineage] ?? 0 });
            expect(JSON.stringify(memberFromEnvoyState(state, requiredTypeUrls))).toBe(JSON.stringify(referenceMember(state, requiredTypeUrls)));
          }
        };
        check();
        for (const action of actions) {
          sim.apply(action);
          if (action.k === 'change') histories[LINEAGES[action.lineage] as string]?.[TYPES[action.type] as string]?.push(sim.seqs[LINEAGES[action.lineage] as string] ?? 0);
          check();
        }
      }),
      { numRuns: 200 },
    );
  });
});
