// Convergence with blamed NACKs (docs/CONVERGENCE.md, "NACK attribution"): Rejected for the blamed
// object (or for everyone when the NACK has no blame), Blocked for an object only caught in another
// object's rejection; both evaluators agree, the stored decision keeps it, and the condition says it.
import {
  buildCondition,
  computeConvergence,
  conditionForDecision,
  decisionFromConvergence,
  DecisionSchema,
  evaluateFromAggregates,
  formatObjectRef,
  applyMember,
  emptyShard,
  memberFromEnvoyState,
  shardOf,
  type EnvoyState,
  type NackBlame,
  type Watermark,
} from '../../../common/core';
import { CDS, L1, LDS, RDS, T0, envoy } from './fixtures';

const culprit = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' };
const bystander = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-1' };
const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const wm: Watermark = { observable: true, lineages: { [L1]: { seq: 10, types: { [CDS]: 10, [LDS]: 3, [RDS]: 3 }, at: T0 } } };
// programmedThrough as the gateway sets it (the aggregates' member reads it).
const programmed = (nodeId: string): EnvoyState => envoy(nodeId, { [CDS]: { acked: 10 }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } }, { programmedThrough: 10 });
const nacking = (nodeId: string, blame: NackBlame | undefined): EnvoyState =>
  envoy(nodeId, { [CDS]: { acked: 8, nack: { seq: 10, message: 'Error adding/updating cluster(s) default/app-0/8080: bad', at: T0, ...(blame === undefined ? {} : { blame }) } }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } });
const blamed: NackBlame = { basis: 'named', objects: [formatObjectRef(culprit)], resources: ['default/app-0/8080'] };

function bothEvaluators(object: typeof culprit, envoys: EnvoyState[]) {
  const reference = computeConvergence({ object, generation: 2, watermark: wm, envoys, now: T0, policy });
  let shard = emptyShard(L1, 0);
  for (const state of envoys) shard = applyMember(shard, state.nodeId, memberFromEnvoyState(state)).shard;
  expect(envoys.every((state) => shardOf(state.nodeId, 1) === 0)).toBe(true);
  const fast = evaluateFromAggregates({ object, generation: 2, watermark: wm, aggregates: [{ lineage: L1, shards: [shard], envoysRecorded: envoys.length }], now: T0, policy });
  expect({ state: fast.state, programmed: fast.programmed, reasons: fast.blockers.map((b) => b.reason) }).toEqual({
    state: reference.state,
    programmed: reference.programmed,
    reasons: reference.blockers.map((b) => b.reason),
  });
  return reference;
}

describe('NACK attribution in convergence', () => {
  const fleet = [programmed('envoy-1'), nacking('envoy-0', blamed), programmed('envoy-2')];

  it('the blamed object is Rejected, quoting the Envoy as before', () => {
    const result = bothEvaluators(culprit, fleet);
    expect(result).toMatchObject({ state: 'Rejected', programmed: 2, total: 3 });
    expect(buildCondition(result)).toMatchObject({
      status: 'False',
      reason: 'Rejected',
      message: '2/3 Envoys programmed at generation 2; envoy-0 rejected CDS: Error adding/updating cluster(s) default/app-0/8080: bad',
    });
  });

  it('an object only caught in the rejected response is Blocked, naming the other object and resource', () => {
    const result = bothEvaluators(bystander, fleet);
    expect(result).toMatchObject({ state: 'Blocked', programmed: 2, total: 3 });
    const condition = buildCondition(result);
    expect(condition).toMatchObject({ status: 'False', reason: 'BlockedByOtherObject' });
    expect(condition.message).toBe(
      '2/3 Envoys programmed at generation 2; envoy-0 rejected CDS of HTTPProxy default/sample-0 (resource default/app-0/8080), not of this object: Error adding/updating cluster(s) default/app-0/8080: bad',
    );
  });

  it('a NACK without blame is held against every object (as before attribution)', () => {
    expect(bothEvaluators(bystander, [programmed('envoy-1'), nacking('envoy-0', undefined)]).state).toBe('Rejected');
  });

  it('one of its own NACKs among others makes the Envoy a rejection of this object', () => {
    const both = envoy('envoy-0', {
      [CDS]: { acked: 8, nack: { seq: 10, message: 'cds', at: T0, blame: blamed } },
      [RDS]: { acked: 2, nack: { seq: 3, message: 'rds', at: T0, blame: { basis: 'changed', objects: [formatObjectRef(bystander)], resources: ['ingress_http'] } } },
      [LDS]: { acked: 3 },
    });
    expect(bothEvaluators(bystander, [both]).state).toBe('Rejected');
    expect(bothEvaluators(culprit, [both]).state).toBe('Rejected');
  });

  it('Rejected outranks Blocked, which outranks Stuck and Pending', () => {
    const stuck = envoy('envoy-3', { [CDS]: { acked: 8, pending: { seq: 10, sentAt: T0 - 40_000 } }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } });
    expect(bothEvaluators(bystander, [stuck, nacking('envoy-0', blamed)]).state).toBe('Blocked');
    expect(bothEvaluators(culprit, [stuck, nacking('envoy-0', blamed)]).state).toBe('Rejected');
  });

  it('the stored decision keeps the blame, and its condition is the same', () => {
    const result = computeConvergence({ object: bystander, generation: 2, watermark: wm, envoys: fleet, now: T0, policy });
    const decision = DecisionSchema.parse(JSON.parse(JSON.stringify(decisionFromConvergence(result, T0, 1))));
    expect(decision.state).toBe('Blocked');
    expect(conditionForDecision(bystander, 2, decision)).toEqual(buildCondition(result, {}, T0));
  });
});

