// Property tests of the core against an independent model of a fleet. fast-check generates a fleet
// (each Envoy on one of two gateway lineages, subscribing to a subset of four types) and a random
// sequence of config changes, watermark records, sends, ACKs, NACKs, disconnects, reconnects (with and
// without Envoy restarts), silent vanishing, heartbeats, expiry runs and time steps. The core's state
// is driven only through its transition functions; the test keeps its own model of what each Envoy
// really runs (from the raw event sequence) and checks computeConvergence against it after every step.
import fc from 'fast-check';
import { applyAck, applyNack } from '../../../common/core';
import { SCENARIOS, Simulation, actionArb, fleetArb, policy } from './fleet-model';
describe('core against a fleet model (fast-check)', () => {
  it('safety, no NACK laundering and exact programmed counts after every step; liveness after healing', () => {
    fc.assert(
      fc.property(fleetArb, fc.array(actionArb, { maxLength: 100, size: 'max' }), (fleet, actions) => {
        const sim = new Simulation(fleet);
        sim.checkInvariants();
        for (const action of actions) {
          sim.apply(action);
          sim.checkInvariants();
        }
        // (3) Liveness: with no more faults, the latest versions ACKed everywhere give Programmed...
        sim.heal();
        sim.checkInvariants();
        const alive = sim.model.filter((m) => !m.vanished);
        const beforeTtl = sim.convergence();
        if (beforeTtl.state !== 'Programmed') {
          // ...except that a vanished Envoy may still block, but only until its TTL runs out.
          expect(beforeTtl.blockers.every((b) => sim.model.find((m) => m.nodeId === b.nodeId)!.vanished)).toBe(true);
        }
        sim.apply({ k: 'tick', dt: policy.ttlMs + 1 });
        alive.forEach((m) => sim.apply({ k: 'heartbeat', e: sim.model.indexOf(m) }));
        sim.checkInvariants();
        const after = sim.convergence();
        expect(after.total).toBe(alive.length);
        expect(after.state).toBe(alive.length > 0 ? 'Programmed' : 'NoEnvoys');
        // The expire function then marks the vanished ones; the result does not change.
        sim.apply({ k: 'expire' });
        expect(sim.convergence()).toEqual(after);
        for (const m of sim.model) expect(sim.core.get(m.nodeId)!.status === 'EXPIRED').toBe(m.vanished);
      }),
      { numRuns: 500, examples: SCENARIOS },
    );
  });

  it('ACK and NACK transitions are idempotent: a redelivered event changes nothing (property)', () => {
    // Invariant 5: a replayed event must not change the result. f(f(s)) = f(s) for ACK and NACK of any
    // version on any type of any reachable state.
    fc.assert(
      fc.property(fleetArb, fc.array(actionArb, { maxLength: 60, size: 'max' }), fc.nat(20), fc.nat(10), fc.boolean(), (fleet, actions, pick, seq, nack) => {
        const sim = new Simulation(fleet);
        for (const action of actions) sim.apply(action);
        const m = sim.model[pick % sim.model.length]!;
        const typeUrl = m.types[pick % m.types.length]!;
        const state = sim.core.get(m.nodeId)!;
        const version = { lineage: m.lineage, seq };
        const now = sim.now;
        const once = nack ? applyNack(state, { typeUrl, version, message: 'again', now }) : applyAck(state, { typeUrl, version, now });
        const twice = nack ? applyNack(once, { typeUrl, version, message: 'again', now }) : applyAck(once, { typeUrl, version, now });
        expect(twice).toEqual(once);
        if (!nack) expect(once.types[typeUrl]!.acked).toBeGreaterThanOrEqual(state.types[typeUrl]!.acked ?? 0);
      }),
      { numRuns: 500 },
    );
  });
});
