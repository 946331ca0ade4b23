// The states bench/write-ceiling.ts writes must be what the gateway writes when an Envoy reaches a
// watermark (valid, four types ACKed, their events carried), or the ceiling measures the wrong item.
import { CDS_TYPE_URL, EDS_TYPE_URL, EnvoyStateSchema, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { ceilingStates } from '../../../bench/support/ceiling-states';

describe('ceilingStates', () => {
  const lineage = 'gw-bench.ceiling.ingress';
  const states = ceilingStates({ count: 3, nodeIdPrefix: 'c', lineage, seq: 10, now: 1_800_000_000_000 });

  it('gives one valid first-write state per Envoy, with distinct node ids', () => {
    expect(states.map((state) => state.nodeId)).toEqual(['c-0', 'c-1', 'c-2']);
    for (const state of states) {
      expect(EnvoyStateSchema.safeParse(state).success).toBe(true);
      expect(state.rev).toBe(1);
      expect(state.status).toBe('CONNECTED');
    }
  });

  it.each([
    [CDS_TYPE_URL, 10],
    [EDS_TYPE_URL, 11],
    [LDS_TYPE_URL, 12],
    [RDS_TYPE_URL, 13],
  ])('ACKs %s at its own seq (%i) on the lineage, nothing pending', (typeUrl, seq) => {
    const type = states[0]?.types[typeUrl];
    expect(type).toMatchObject({ lineage, subscribed: true, acked: seq });
    expect(type?.pending).toBeUndefined();
  });

  it('is programmed through the last type and carries the four ACK events', () => {
    const state = states[1];
    expect(state?.programmedThrough).toBe(13);
    expect(state?.unlogged?.map((event) => [event.o, event.q, event.k])).toEqual([
      ['ACK', 10, 'CDS'],
      ['ACK', 11, 'EDS'],
      ['ACK', 12, 'LDS'],
      ['ACK', 13, 'RDS'],
    ]);
  });
});
