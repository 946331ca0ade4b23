// The gateway's side of NACK attribution (xds-gateway/tracking/nack-attribution.ts): what changed
// between the version an Envoy holds and the one it rejected, and which objects own a resource.
import { NackAttributor, ObjectOwnership, ResponseHistory, RESPONSE_HISTORY_VERSIONS } from '../../../xds-gateway/tracking/nack-attribution';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const L = 'gw1.1.g';
const bytes = (text: string): Buffer => Buffer.from(text);
const applied = (seq: number, resources: Record<string, string>) => ({
  lineage: L,
  typeUrl: CDS,
  seq,
  changed: true,
  resources: Object.entries(resources).map(([name, value]) => ({ name, value: bytes(value) })),
});

describe('ResponseHistory', () => {
  it('names what changed after the held version, through the rejected one', () => {
    const history = new ResponseHistory();
    history.record(applied(1, { a: '1', b: '1' }));
    history.record(applied(4, { a: '1', b: '2', c: '1' }));
    history.record(applied(6, { a: '2', c: '1' }));
    expect(history.changedBetween(L, CDS, 1, 4)?.sort()).toEqual(['b', 'c']);
    expect(history.changedBetween(L, CDS, 4, 6)?.sort()).toEqual(['a', 'b']);
    expect(history.changedBetween(L, CDS, 1, 6)?.sort()).toEqual(['a', 'b', 'c']);
    // Holding nothing: all of it is new.
    expect(history.changedBetween(L, CDS, undefined, 6)?.sort()).toEqual(['a', 'c']);
    expect(history.changedBetween('other', CDS, 1, 6)).toBeUndefined();
  });

  it('says unknown once the changes after the held version were dropped', () => {
    const history = new ResponseHistory();
    for (let seq = 1; seq <= RESPONSE_HISTORY_VERSIONS + 2; seq++) history.record(applied(seq, { a: String(seq) }));
    expect(history.changedBetween(L, CDS, 1, RESPONSE_HISTORY_VERSIONS + 2)).toBeUndefined();
    expect(history.changedBetween(L, CDS, RESPONSE_HISTORY_VERSIONS, RESPONSE_HISTORY_VERSIONS + 2)).toEqual(['a']);
  });
});

describe('ObjectOwnership and NackAttributor', () => {
  const proxy = (name: string, services: string[]) => ({ metadata: { namespace: 'default', name }, spec: { virtualhost: { fqdn: `${name}.local` }, routes: [{ services: services.map((s) => ({ name: s, port: 8080 })) }] } });
  const kind = { group: 'projectcontour.io', kind: 'HTTPProxy' };
  const ref = (name: string) => ({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name });

  it('follows spec changes and deletions', () => {
    const ownership = new ObjectOwnership();
    ownership.observe(kind, ref('p'), proxy('p', ['app-0']));
    ownership.observe(kind, ref('q'), proxy('q', ['app-0', 'app-1']));
    expect(ownership.ownersOf('default/app-0/8080/abc').sort()).toEqual(['projectcontour.io/HTTPProxy/default/p', 'projectcontour.io/HTTPProxy/default/q']);
    ownership.observe(kind, ref('q'), proxy('q', ['app-1']));
    expect(ownership.ownersOf('default/app-0/8080')).toEqual(['projectcontour.io/HTTPProxy/default/p']);
    ownership.forget(ref('p'));
    expect(ownership.ownersOf('default/app-0/8080')).toEqual([]);
    expect(ownership.hostOwnersIn('Duplicate entry of domain q.local in route x')).toEqual(['projectcontour.io/HTTPProxy/default/q']);
    expect(ownership.hostOwnersIn('Duplicate entry of domain xq.local.y in route x')).toEqual([]);
  });

  it('blames a NACK on the owners of the named resource; provenance stamps win over naming', () => {
    const ownership = new ObjectOwnership();
    ownership.observe(kind, ref('p'), proxy('p', ['app-0']));
    const stamped = new Map([['default/app-0/8080', ['x.dev/Route/default/stamped']]]);
    const attributor = new NackAttributor({ ownership, provenance: { ownersOf: (_l, _t, name) => stamped.get(name) } });
    attributor.upstreamApplied({ ...applied(2, { 'default/app-0/8080': 'v1', 'default/app-1/8080': 'v1' }), group: 'g', upstreamVersion: '1', upstreamEpoch: 1, at: 0 });
    expect(attributor.blame({ lineage: L, typeUrl: CDS, seq: 2, held: undefined, message: 'Error adding/updating cluster(s) default/app-0/8080: bad' })).toEqual({
      basis: 'named',
      objects: ['x.dev/Route/default/stamped'],
      resources: ['default/app-0/8080'],
    });
    stamped.clear();
    expect(attributor.blame({ lineage: L, typeUrl: CDS, seq: 2, held: undefined, message: 'Error adding/updating cluster(s) default/app-0/8080: bad' })?.objects).toEqual(['projectcontour.io/HTTPProxy/default/p']);
    // app-1 has no owner: a rejection of it cannot be placed.
    expect(attributor.blame({ lineage: L, typeUrl: CDS, seq: 2, held: undefined, message: 'Error adding/updating cluster(s) default/app-1/8080: bad' })).toBeUndefined();
  });
});
