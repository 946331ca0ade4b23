// The truth checker's handling of Delta Envoys (held resource sets instead of one response per
// version) and its fleet mix, on hand-made ground truth: each check must be able to fail.
import { CDS_TYPE_URL } from '../../common/core';
import { GroundTruth } from '../../infra/local/envoys';
import type { RebuildRecord } from '../../infra/local/control-plane/rebuild-log';
import { checkTrueWrites, deltaView, type ContentLookup, type TruthInputs } from './checker';
import { DEFAULT_FLEET_MIX, ENVOY_MODES, modeForEnvoy, parseFleetMix, protocolOf, transportOf } from './fleet-mix';
import type { ConditionWrite } from './observer';

const X = 'projectcontour.io/HTTPProxy/default/sample-0';
const Y = 'projectcontour.io/HTTPProxy/default/sample-1';

/** Per-resource content: cluster `x-primary` and `x-canary` carry X at the generation in their version. */
const contents: ContentLookup = {
  sources: () => undefined,
  resourceSources: (_typeUrl, name, version) => {
    const generation = version.split(':')[1];
    if (name.startsWith('x-')) return new Set([`${X}@${generation}`]);
    if (name.startsWith('y-')) return new Set([`${Y}@${generation}`]);
    return undefined;
  },
};

const accepted = (at: number, resources: Array<[string, string]>, removed: string[] = []) => ({
  versionInfo: `v${at}`,
  nonce: String(at),
  acceptedAt: at,
  resources: resources.map(([name, version]) => ({ name, version })),
  removed,
});

describe('deltaView: the held set after every accepted response', () => {
  it('applies upserts and removals in order, up to the time asked', () => {
    const records = [accepted(10, [['x-primary', 'g:1'], ['y-primary', 'g:1']]), accepted(20, [['x-canary', 'g:2']], ['x-primary'])];
    expect(deltaView(records, 15, CDS_TYPE_URL, X, contents).generation).toBe(1);
    expect(deltaView(records, 25, CDS_TYPE_URL, X, contents).generation).toBe(2);
    expect(deltaView(records, 5, CDS_TYPE_URL, X, contents)).toEqual({ generation: undefined, description: 'nothing' });
  });

  it('a stale resource left behind (its removal never accepted) holds the object back', () => {
    // The diff that removed x-primary was NACKed: only an unrelated diff was accepted afterwards.
    const records = [accepted(10, [['x-primary', 'g:1']]), accepted(30, [['y-primary', 'g:3']])];
    expect(deltaView(records, 40, CDS_TYPE_URL, X, contents).generation).toBe(1);
    const withCanary = [...records, accepted(50, [['x-canary', 'g:2']])];
    expect(deltaView(withCanary, 60, CDS_TYPE_URL, X, contents).generation).toBe(1);
  });

  it('a held resource whose content was never seen on the wire vouches for nothing', () => {
    const records = [accepted(10, [['x-primary', 'g:2'], ['mystery', 'g:2']])];
    const view = deltaView(records, 20, CDS_TYPE_URL, X, contents);
    expect(view.generation).toBeUndefined();
    expect(view.description).toContain('content unknown for mystery@g:2');
  });
});

describe('checkTrueWrites with Delta Envoys', () => {
  function inputs(truth: GroundTruth): TruthInputs {
    const rebuild: RebuildRecord = {
      replicaId: 'cp-1', seq: 1, at: 0, versions: { CDS: 'c', EDS: 'e', LDS: 'l', RDS: 'r', SDS: 's' }, changedTypes: [],
      contained: { CDS: [`${X}@1`], EDS: [], LDS: [], RDS: [], SDS: [] }, objects: [],
    };
    return {
      truth, contents, rebuildLogs: [{ all: () => [rebuild] }], subscribedTypes: [CDS_TYPE_URL],
      envoyTtlMs: 4000, envoyHeartbeatMs: 1000, sourcePrefix: 'projectcontour.io/HTTPProxy/default/',
      protocolOf: () => 'delta',
    };
  }
  const write = (at: number, generation: number): ConditionWrite => ({ name: 'sample-0', at, generation, condition: { status: 'True', reason: 'Programmed', message: '', observedGeneration: generation } });

  it('flags True when the Delta Envoy ACKed an unrelated diff after NACKing the object\'s cluster', () => {
    const truth = new GroundTruth();
    truth.registerEnvoy('envoy-d', 'ingress');
    truth.recordConnection('envoy-d', { kind: 'connected', at: 0 });
    truth.recordAccepted('envoy-d', CDS_TYPE_URL, accepted(10, [['x-primary', 'g:1']]));
    truth.recordNack('envoy-d', CDS_TYPE_URL, { versionInfo: 'v20', nonce: '20', message: 'bad cluster', at: 20, resourceNames: ['x-canary'] });
    truth.recordAccepted('envoy-d', CDS_TYPE_URL, accepted(30, [['y-primary', 'g:5']]));
    const violations = checkTrueWrites([write(100, 2)], inputs(truth));
    expect(violations).toHaveLength(1);
    expect(violations[0]?.detail).toMatch(/envoy-d had accepted CDS \(Delta\) held set after v30 .*x-primary@g:1: 1.*bad cluster/);
    // Once it holds the canary and no longer the primary, the same write is fine.
    truth.recordAccepted('envoy-d', CDS_TYPE_URL, accepted(40, [['x-canary', 'g:2']], ['x-primary']));
    expect(checkTrueWrites([write(100, 2)], inputs(truth))).toEqual([]);
  });
});

describe('fleet mix', () => {
  it('the default includes every mode, and a small fleet gets each of them first', () => {
    expect(DEFAULT_FLEET_MIX.map((m) => m.mode).sort()).toEqual([...ENVOY_MODES].sort());
    expect([0, 1, 2, 3].map((i) => modeForEnvoy(DEFAULT_FLEET_MIX, i, 7))).toEqual(['ads-sotw', 'ads-delta', 'per-type-sotw', 'per-type-delta']);
  });

  it('later Envoys are seeded weighted picks: same seed, same fleet; weights respected', () => {
    const modes = (seed: number): string[] => Array.from({ length: 400 }, (_, i) => modeForEnvoy(DEFAULT_FLEET_MIX, i, seed));
    expect(modes(3)).toEqual(modes(3));
    expect(modes(3)).not.toEqual(modes(4));
    const sotwAds = modes(3).filter((m) => m === 'ads-sotw').length;
    // Weight 3 of 6: about half.
    expect(sotwAds).toBeGreaterThan(150);
    expect(sotwAds).toBeLessThan(250);
  });

  it('parses a mix, refuses nonsense with a clear error, and maps modes to transport and protocol', () => {
    expect(parseFleetMix('ads-sotw')).toEqual([{ mode: 'ads-sotw', weight: 1 }]);
    expect(modeForEnvoy(parseFleetMix('ads-delta=0,per-type-delta=2'), 0, 1)).toBe('per-type-delta');
    expect(() => parseFleetMix('ads-quic=1')).toThrow(/unknown mode "ads-quic"/);
    expect(() => parseFleetMix('ads-sotw=-1')).toThrow(/weight of ads-sotw/);
    expect(() => parseFleetMix('ads-sotw=0')).toThrow(/every weight is 0/);
    expect(() => parseFleetMix('ads-sotw,ads-sotw=2')).toThrow(/given twice/);
    expect([transportOf('per-type-delta'), protocolOf('per-type-delta'), transportOf('ads-sotw'), protocolOf('ads-sotw')]).toEqual(['per-type', 'delta', 'ads', 'sotw']);
  });
});
