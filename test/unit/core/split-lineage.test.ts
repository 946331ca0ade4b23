// The split-across-lineages rule (docs/CONVERGENCE.md, "Split across lineages"; RELIABILITY.md
// finding "grpc-0 split across lineages"): a member whose state holds types on another lineage
// blocks while that lineage is in the live set, and stops counting them once it left it (its
// gateway is dead, so no stream serves those subscriptions any more). NACKs always block.
import { emptyShard, evaluateFromAggregates, memberFromEnvoyState, recount, type EnvoyState, type LineageAggregate, type Member } from '../../../common/core';
import { CDS, envoy, L1, L2, LDS, RDS, T0 } from './fixtures';

const L3 = 'gw-c.boot1.edge';
const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
const mark = { seq: 5, types: { [CDS]: 5 }, at: T0 };
const watermark = { observable: true as const, lineages: { [L1]: mark } };

function aggregate(lineage: string, members: Record<string, Member>): LineageAggregate {
  return { lineage, envoysRecorded: Object.keys(members).length, shards: [{ ...emptyShard(lineage, 0), members, ...recount(members) }] };
}

/** `liveOthers`: other lineages in the live set (read); `dead`: registered, heartbeat too old. */
function evaluate(state: EnvoyState, liveOthers: string[], requiredTypeUrls: string[] = [], dead: string[] = [L2]) {
  const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000, requiredTypeUrls };
  const aggregates = [aggregate(L1, { a: memberFromEnvoyState(state, requiredTypeUrls) }), ...liveOthers.map((lineage) => aggregate(lineage, {}))];
  return evaluateFromAggregates({ object, generation: 2, watermark, aggregates, now: T0, policy, deadLineages: new Set(dead.filter((lineage) => !liveOthers.includes(lineage))) });
}

// CDS on our lineage (L1) at the watermark; LDS held from another lineage.
const splitAtMark = envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 } }, { programmedThrough: 5 });

describe('a member split across lineages', () => {
  it('a foreign lineage neither live nor known dead (registered after the registry read) blocks', () => {
    const result = evaluate(splitAtMark, [], [], []);
    expect(result.state).toBe('Pending');
    expect(result.blockers.map((b) => `${b.nodeId}:${b.reason}`)).toEqual(['a:pending']);
  });

  it.each<[string, EnvoyState, string[], string[], string, string[]]>([
    ['other lineage live: blocks', splitAtMark, [L2], [], 'Pending', ['a:pending']],
    ['other lineage dead: own types decide', splitAtMark, [], [], 'Programmed', []],
    ['an unrelated lineage being live does not matter', splitAtMark, [L3], [], 'Programmed', []],
    ['one of two foreign lineages still live: blocks', envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 }, [RDS]: { acked: 2, lineage: L3 } }, { programmedThrough: 5 }), [L3], [], 'Pending', ['a:pending']],
    ['one of two foreign lineages unknown (not registered when read): blocks', envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 }, [RDS]: { acked: 2, lineage: L3 } }, { programmedThrough: 5 }), [], [], 'Pending', ['a:pending']],
    ['other lineage dead, own types behind: pending', envoy('a', { [CDS]: { acked: 3 }, [LDS]: { acked: 9, lineage: L2 } }, { programmedThrough: 3 }), [], [], 'Pending', ['a:pending']],
    ['other lineage dead, a required type only held there: pending', splitAtMark, [], [CDS, LDS], 'Pending', ['a:pending']],
    ['other lineage dead, its NACK still blocks (invariant 2)', envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 1, lineage: L2, nack: { seq: 2, message: 'bad listener', at: T0 } } }, { programmedThrough: 5 }), [], [], 'Rejected', ['a:nacked']],
    ['every type on a dead lineage: nothing subscribed here, pending', envoy('a', { [CDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5 }), [], [], 'Pending', ['a:pending']],
  ])('%s', (_name, state, liveOthers, required, expected, blockers) => {
    const result = evaluate(state, liveOthers, required);
    expect(result.state).toBe(expected);
    expect(result.blockers.map((b) => `${b.nodeId}:${b.reason}`)).toEqual(blockers);
  });

  it('names the live foreign lineage in the blocker', () => {
    expect(evaluate(splitAtMark, [L2]).blockers[0]).toEqual({ nodeId: 'a', reason: 'pending', typeUrls: [`split across gateway instances (${L1}, ${L2})`] });
  });

  it('the member keeps the own-lineage programmedThrough and lists the foreign lineage', () => {
    expect(memberFromEnvoyState(splitAtMark)).toMatchObject({ t: 5, a: { CDS: 5 }, b: { split: [L1, L2] } });
  });
});
