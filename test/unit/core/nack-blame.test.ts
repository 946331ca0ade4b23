// NACK attribution's pure rule (common/core/nack-blame.ts): which resources a client's message
// quotes, in the formats real clients write (docs/CONVERGENCE.md, "NACK attribution"), and which
// objects own them.
import { blameNack, resourceClaimsOf, resourcesNamedIn, serviceOfResourceName, MAX_BLAMED } from '../../../common/core';

const CLUSTERS = ['default/app-0/8080', 'default/app-1/8080', 'default/app-10/8080', 'default/app-1-canary/8080'];
const owners: Record<string, string[]> = {
  'default/app-0/8080': ['projectcontour.io/HTTPProxy/default/sample-0'],
  'default/app-1/8080': ['projectcontour.io/HTTPProxy/default/sample-1'],
  'default/app-10/8080': ['projectcontour.io/HTTPProxy/default/sample-10'],
  'default/app-1-canary/8080': ['projectcontour.io/HTTPProxy/default/sample-1', 'projectcontour.io/HTTPProxy/default/sample-2'],
};
const ownersOf = (name: string): string[] | undefined => owners[name];

describe('resourcesNamedIn', () => {
  it.each<[string, string, string[]]>([
    // Envoy CDS (cds_api_helper.cc): "Error adding/updating cluster(s) <name>: <error>, <name>: <error>".
    ['Envoy CDS', 'Error adding/updating cluster(s) default/app-1/8080: bad lb policy, default/app-0/8080: bad', ['default/app-0/8080', 'default/app-1/8080']],
    // gRPC C-core: "xDS response validation errors: [resource index N: <name>: INVALID_ARGUMENT: …]".
    ['C-core', 'xDS response validation errors: [resource index 1: default/app-10/8080: INVALID_ARGUMENT: field:lb_policy error:unknown]', ['default/app-10/8080']],
    // grpc-go: `resource "<name>": <error>`.
    ['grpc-go', 'error parsing "ClusterResource" response: resource "default/app-1-canary/8080": unsupported cluster type', ['default/app-1-canary/8080']],
    // Our simulated Envoy.
    ['simulated', 'simulated rejection: cluster failed validation (resource default/app-0/8080)', ['default/app-0/8080']],
    // grpc-js names only the index: nothing quoted.
    ['grpc-js', 'xDS response validation errors: [resource index 0: Cluster message validation failed: [...]]', []],
  ])('%s', (_client, message, expected) => {
    expect(resourcesNamedIn(message, CLUSTERS)).toEqual(expected);
  });

  it('matches whole names only: app-1 is not quoted by app-10 or app-1-canary', () => {
    expect(resourcesNamedIn('rejected default/app-10/8080 and default/app-1-canary/8080x', ['default/app-1/8080', 'default/app-1', 'default/app-10/8080'])).toEqual(['default/app-10/8080']);
    expect(resourcesNamedIn('cluster default/app-1: bad', ['default/app-1', 'default/app-1/8080'])).toEqual(['default/app-1']);
  });
});

describe('blameNack', () => {
  it('blames the owners of the resources the message names', () => {
    expect(blameNack({ message: 'Error adding/updating cluster(s) default/app-0/8080: bad', responseNames: CLUSTERS, changedNames: ['default/app-1/8080'], ownersOf })).toEqual({
      basis: 'named',
      objects: ['projectcontour.io/HTTPProxy/default/sample-0'],
      resources: ['default/app-0/8080'],
    });
  });

  it('falls back to what changed in the rejected response when the message names nothing', () => {
    expect(blameNack({ message: 'validation failed', responseNames: CLUSTERS, changedNames: ['default/app-1-canary/8080'], ownersOf })).toEqual({
      basis: 'changed',
      objects: ['projectcontour.io/HTTPProxy/default/sample-1', 'projectcontour.io/HTTPProxy/default/sample-2'],
      resources: ['default/app-1-canary/8080'],
    });
  });

  it('is not attributed when a resource has no known owner, nothing is known, or owners are too many', () => {
    expect(blameNack({ message: 'Error adding/updating listener(s) ingress_http: bad', responseNames: ['ingress_http'], changedNames: [], ownersOf })).toBeUndefined();
    expect(blameNack({ message: 'something failed', responseNames: CLUSTERS, changedNames: undefined, ownersOf })).toBeUndefined();
    expect(blameNack({ message: 'something failed', responseNames: CLUSTERS, changedNames: ['default/app-0/8080', 'default/unknown/80'], ownersOf })).toBeUndefined();
    const many = Array.from({ length: MAX_BLAMED + 1 }, (_, i) => `x/HTTPProxy/default/p-${i}`);
    expect(blameNack({ message: 'default/app-0/8080: bad', responseNames: CLUSTERS, changedNames: [], ownersOf: () => many })).toBeUndefined();
  });

  it('uses the host names the message quotes when the quoted resource is shared', () => {
    const blame = blameNack({
      message: 'Only unique values for domains are permitted. Duplicate entry of domain sample-1.local in route ingress_http',
      responseNames: ['ingress_http'],
      changedNames: ['ingress_http'],
      ownersOf: () => undefined,
      hostOwnersIn: (message) => (message.includes('sample-1.local') ? ['projectcontour.io/HTTPProxy/default/sample-1'] : []),
    });
    expect(blame).toEqual({ basis: 'named', objects: ['projectcontour.io/HTTPProxy/default/sample-1'], resources: ['ingress_http'] });
  });
});

describe('resourceClaimsOf', () => {
  it('HTTPProxy: the Services of its routes and TCP proxy, and its virtual host', () => {
    const proxy = {
      metadata: { namespace: 'shop', name: 'web' },
      spec: { virtualhost: { fqdn: 'Shop.Example.com' }, routes: [{ services: [{ name: 'cart', port: 80 }, { name: 'cart-canary', port: 80 }] }], tcpproxy: { services: [{ name: 'db', port: 5432 }] } },
    };
    expect(resourceClaimsOf({ group: 'projectcontour.io', kind: 'HTTPProxy' }, proxy)).toEqual({ services: ['shop/cart', 'shop/cart-canary', 'shop/db'], hosts: ['shop.example.com'] });
  });

  it('Ingress and HTTPRoute (cross-namespace backendRefs; non-Service backends ignored)', () => {
    const ingress = { metadata: { namespace: 'a' }, spec: { defaultBackend: { service: { name: 'fallback' } }, rules: [{ host: 'a.example', http: { paths: [{ backend: { service: { name: 'api' } } }] } }] } };
    expect(resourceClaimsOf({ group: 'networking.k8s.io', kind: 'Ingress' }, ingress)).toEqual({ services: ['a/api', 'a/fallback'], hosts: ['a.example'] });
    const route = { metadata: { namespace: 'b' }, spec: { hostnames: ['b.example'], rules: [{ backendRefs: [{ name: 'svc' }, { name: 'other', namespace: 'c' }, { name: 'bucket', kind: 'Bucket' }] }] } };
    expect(resourceClaimsOf({ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }, route)).toEqual({ services: ['b/svc', 'c/other'], hosts: ['b.example'] });
  });

  it('claims nothing for unknown kinds or malformed specs', () => {
    expect(resourceClaimsOf({ group: 'x.dev', kind: 'Thing' }, { metadata: { namespace: 'a' }, spec: { services: [{ name: 's' }] } })).toEqual({ services: [], hosts: [] });
    expect(resourceClaimsOf({ group: 'projectcontour.io', kind: 'HTTPProxy' }, { metadata: { namespace: 'a' }, spec: { routes: 'nope' } })).toEqual({ services: [], hosts: [] });
    expect(resourceClaimsOf({ group: 'projectcontour.io', kind: 'HTTPProxy' }, { metadata: { namespace: 'a' }, spec: { routes: [{ services: [{ name: 'a/b' }, { name: 7 }] }] } })).toEqual({ services: [], hosts: [] });
  });

  it('maps Contour and our control plane names to their Service', () => {
    expect(serviceOfResourceName('default/app-0/8080/da39a3ee5e')).toBe('default/app-0');
    expect(serviceOfResourceName('default/app-0/http')).toBe('default/app-0');
    expect(serviceOfResourceName('ingress_http')).toBeUndefined();
  });
});
