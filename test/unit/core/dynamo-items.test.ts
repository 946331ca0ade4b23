// The items the core builds must be storable in DynamoDB as they are: no undefined attributes (the
// marshaller rejects them by default), nothing lost by marshall/unmarshall, and far below the 400 KB
// item limit. Checked on states reached by random fleet runs.
import fc from 'fast-check';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import {
  applyNack,
  buildCondition,
  setCondition,
  stuckEvents,
} from '../../../common/core';
import { parseItem, toEnvoyEventItem, toEnvoyStateItem, toObjectGenerationItem, type TableItem } from '../../../common/store';
import { Simulation, actionArb, fleetArb, policy } from './fleet-model';
import { CDS, L1, T0, envoy } from './fixtures';

const DYNAMODB_ITEM_LIMIT = 400 * 1024;

function roundTrip(item: TableItem): void {
  const stored = marshall(item); // throws on undefined values
  expect(JSON.stringify(stored).length).toBeLessThan(DYNAMODB_ITEM_LIMIT / 4);
  const back = unmarshall(stored);
  expect(parseItem(back)).toEqual({ ok: true, item });
}

describe('core items in DynamoDB', () => {
  it('every item built from reachable states marshals, unmarshals and parses back unchanged (property)', () => {
    fc.assert(
      fc.property(fleetArb, fc.array(actionArb, { maxLength: 60, size: 'max' }), (fleet, actions) => {
        const sim = new Simulation(fleet);
        for (const action of actions) sim.apply(action);
        for (const state of sim.core.values()) {
          roundTrip(toEnvoyStateItem(state));
          for (const event of stuckEvents(state, sim.now, policy.ackTimeoutMs, 3_600_000)) roundTrip(toEnvoyEventItem(event));
          for (const [typeUrl, type] of Object.entries(state.types)) {
            if (type.nack !== undefined) {
              roundTrip(toEnvoyEventItem({ nodeId: state.nodeId, outcome: 'NACK', lineage: type.lineage, seq: type.nack.seq, typeUrl, at: type.nack.at, message: type.nack.message, ttl: 2_000_000_000 }));
            }
          }
        }
        const convergence = sim.convergence();
        const condition = setCondition([], buildCondition(convergence, {}, sim.now), sim.now)[0]!;
        roundTrip(toObjectGenerationItem({
          object: convergence.object, generation: convergence.generation, watermarks: { ...sim.watermarks }, firstSeenAt: T0, lastCondition: condition,
          ...(convergence.state === 'Programmed' ? { programmedAt: sim.now } : {}),
        }));
      }),
      { numRuns: 300 },
    );
  });

  it('a huge NACK message is truncated before it can threaten the item limit', () => {
    const state = applyNack(envoy('e', { [CDS]: { acked: 1 } }), { typeUrl: CDS, version: { lineage: L1, seq: 2 }, message: '✗'.repeat(1_000_000), now: T0 });
    const item = toEnvoyStateItem(state);
    expect(JSON.stringify(marshall(item)).length).toBeLessThan(20_000);
    roundTrip(item);
  });
});
