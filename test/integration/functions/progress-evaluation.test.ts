// Deciding from the gateways' PROGRESS items (PROGRESS_EVALUATION; docs/CONVERGENCE.md, "Deciding
// from PROGRESS"): the real convergence function over dynalite and its stream, with the gateway's
// part played by hand (its LINEAGE item, its watermarks, and the PROGRESS items built by the core's
// progressFromStates from Envoy states it holds). A PROGRESS write alone (no Envoy record, no expire
// tick) re-evaluates its lineage's pending generations; a live lineage without an item stays Pending.
import { applyAck, applySent, progressFromStates, PROGRESS_MISSING, withProgrammedThrough, type EnvoyState, type LineageWatermark } from '../../../common/core';
import { decisionOf, FakeEnvoy, FakeGateway, LDS, objectRef, startHandClockedWorld, waitForDecision, type HandClockedWorld } from './convergence-support';

const TTL_MS = 60_000;
const policy = { ttlMs: TTL_MS, ackTimeoutMs: 30_000 };

describe('convergence with PROGRESS_EVALUATION', () => {
  let hand: HandClockedWorld;

  beforeAll(async () => {
    hand = await startHandClockedWorld('progress', TTL_MS, { PROGRESS_EVALUATION: 'true' });
  });

  afterAll(() => hand.close());

  it('decides from the items: Pending while a member is behind, Programmed on the PROGRESS write that says it reached the watermark', async () => {
    const { world, clock } = hand;
    const t0 = Date.now();
    clock.now = t0;
    const gateway = new FakeGateway(world, 'gw-progress.boot1.edge', t0);
    gateway.change(LDS);
    await gateway.save(t0);
    const a = new FakeEnvoy(world, gateway, 'envoy-a', t0, [LDS]);
    const b = new FakeEnvoy(world, gateway, 'envoy-b', t0, [LDS]);
    await a.ackAll(t0);
    await b.ackAll(t0);
    // Generation 2 at a new seq: envoy-a has ACKed it, envoy-b not yet.
    gateway.change(LDS);
    await gateway.save(t0);
    await a.ackAll(t0);
    const ref = objectRef('progress');
    const mark: LineageWatermark = { seq: gateway.state.currentSeq, types: { [LDS]: gateway.version(LDS) }, at: t0 };
    const publish = (v: number, states: EnvoyState[]) =>
      world.table.progress.putProgress(progressFromStates({ lineage: gateway.lineage, v, heartbeatAt: clock.now, states, openWatermarks: [mark], requiredTypeUrls: [], policy }));

    // No PROGRESS item yet, while the Envoys' states are stored (as a gateway run with --progress false
    // writes them): the lineage's Envoys cannot be counted, and the blocker says why.
    await gateway.watermark(ref, 2, t0);
    const unknown = await waitForDecision(world, ref, 2, () => true, 'generation 2 decided');
    expect(unknown.state).toBe('Pending');
    expect(unknown.blockers).toEqual([expect.objectContaining({ nodeId: `Envoys of gateway lineage ${gateway.lineage}`, typeUrls: [PROGRESS_MISSING] })]);

    expect(await publish(1, [a.state, b.state])).toBe('written');
    const pending = await waitForDecision(world, ref, 2, (d) => d.total === 2, 'generation 2 decided from the item');
    expect(pending).toMatchObject({ state: 'Pending', programmed: 1, total: 2, blockers: [expect.objectContaining({ nodeId: 'envoy-b', reason: 'pending' })] });

    // envoy-b ACKs; the gateway's PROGRESS write is the only record that says so (its STATE is not written).
    clock.now = t0 + 1_000;
    const version = { lineage: gateway.lineage, seq: gateway.version(LDS) };
    const acked = withProgrammedThrough(applyAck(applySent(b.state, { typeUrl: LDS, version, now: clock.now }), { typeUrl: LDS, version, now: clock.now }), gateway.state.typeHistory, { currentSeq: gateway.state.currentSeq });
    expect(await publish(2, [a.state, acked])).toBe('written');
    const programmed = await waitForDecision(world, ref, 2, (d) => d.state === 'Programmed', 'Programmed from the second PROGRESS write');
    expect(programmed).toMatchObject({ programmed: 2, total: 2, evaluatedRevs: { [`progress:${gateway.lineage}`]: 2 } });
    // The shards never learned of envoy-b's ACK: the decision came from the item.
    expect((await decisionOf(world, ref, 2))?.state).toBe('Programmed');
    const shardMember = (await world.aggregates.getLineageShards(gateway.lineage)).shards.flatMap((shard) => Object.entries(shard.members)).find(([nodeId]) => nodeId === 'envoy-b')?.[1];
    expect(shardMember?.t).toBeLessThan(mark.seq);
  });
});
