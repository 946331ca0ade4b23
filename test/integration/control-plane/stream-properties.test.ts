// Property tests of the protocol loops without gRPC (SotwStream/DeltaStream with an in-memory send):
// random sequences of snapshots and client replies.
import fc from 'fast-check';
import pino from 'pino';
import { CLUSTER_TYPE_URL, RESOURCE_TYPE_URLS, type ResourceTypeUrl } from '../../../common/xds/type-urls';
import type { DeltaDiscoveryResponse, DiscoveryResponse } from '../../../common/xds/types';
import { DeltaStream } from '../../../infra/local/control-plane/delta-stream';
import { InMemorySnapshotCache, type Snapshot, type TypeSnapshot, typeSnapshot } from '../../../infra/local/control-plane/snapshot-cache';
import { SotwStream } from '../../../infra/local/control-plane/sotw-stream';
import type { XdsStreamInfo } from '../../../infra/local/control-plane/xds-events';

const log = pino({ level: 'silent' });
const NAMES = ['a', 'b', 'c', 'd'];

/** A snapshot where only CDS has content: name -> content byte. */
function snapshotOf(version: number, contents: Record<string, number>): Snapshot {
  const snapshot = {} as Record<ResourceTypeUrl, TypeSnapshot>;
  for (const typeUrl of RESOURCE_TYPE_URLS) {
    const resources =
      typeUrl === CLUSTER_TYPE_URL
        ? Object.entries(contents).map(([name, content]) => ({ name, resource: { type_url: typeUrl, value: Buffer.from([content]) } }))
        : [];
    snapshot[typeUrl] = typeSnapshot(typeUrl, `v${version}`, resources);
  }
  return snapshot;
}

const contentsArbitrary = fc.dictionary(fc.constantFrom(...NAMES), fc.integer({ min: 0, max: 3 }));
type Step = { kind: 'snapshot'; contents: Record<string, number> } | { kind: 'reply'; nack: boolean } | { kind: 'subscribe'; name: string } | { kind: 'unsubscribe'; name: string };
const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  contentsArbitrary.map((contents) => ({ kind: 'snapshot' as const, contents })),
  fc.boolean().map((nack) => ({ kind: 'reply' as const, nack })),
  fc.constantFrom(...NAMES).map((name) => ({ kind: 'subscribe' as const, name })),
  fc.constantFrom(...NAMES).map((name) => ({ kind: 'unsubscribe' as const, name })),
);

function streamInfo(protocol: 'sotw' | 'delta'): XdsStreamInfo {
  return { streamId: 1, protocol, service: 'ads', nodeId: undefined, nodeCluster: undefined };
}

describe('protocol loop properties', () => {
  it('Delta: with ACKs only, the client converges to the subscribed snapshot; a (name, version) is not resent while the client has it', () => {
    fc.assert(
      fc.property(fc.array(stepArbitrary, { maxLength: 40 }), fc.boolean(), (steps, wildcard) => {
        const cache = new InMemorySnapshotCache();
        let version = 0;
        cache.setSnapshot(snapshotOf(version, {}));
        const outbox: DeltaDiscoveryResponse[] = [];
        const stream = new DeltaStream({ stream: streamInfo('delta'), cache, controlPlaneId: 't', send: (r) => outbox.push(r), onEvent: () => {}, log });
        const client = new Map<string, string>();
        const subscribed = new Set<string>();
        /** name -> version last sent and not since removed/unsubscribed (what the server believes the client has). */
        const lastSent = new Map<string, string>();
        let unanswered: DeltaDiscoveryResponse | undefined;
        let nacked = false;

        const deliver = (): void => {
          for (const response of outbox.splice(0)) {
            expect(unanswered).toBeUndefined(); // flow control: one in flight
            // A removed resource may legitimately come back later with the same content.
            for (const name of response.removed_resources ?? []) lastSent.delete(name);
            for (const resource of response.resources ?? []) {
              expect(lastSent.get(resource.name ?? '')).not.toBe(resource.version);
              lastSent.set(resource.name ?? '', resource.version ?? '');
            }
            unanswered = response;
          }
        };
        const reply = (nack: boolean): void => {
          if (!unanswered) return;
          const response = unanswered;
          unanswered = undefined;
          if (nack) nacked = true;
          else {
            // A client ignores resources it unsubscribed from after this response was sent.
            for (const resource of response.resources ?? []) {
              if (wildcard || subscribed.has(resource.name ?? '')) client.set(resource.name ?? '', resource.version ?? '');
            }
            for (const name of response.removed_resources ?? []) client.delete(name);
          }
          stream.handleRequest({ type_url: CLUSTER_TYPE_URL, response_nonce: response.nonce, ...(nack ? { error_detail: { message: 'no' } } : {}) });
          deliver();
        };

        // A first request naming nothing would be a (legacy) wildcard: the named case starts with `a`.
        if (!wildcard) subscribed.add('a');
        stream.handleRequest({ type_url: CLUSTER_TYPE_URL, resource_names_subscribe: wildcard ? ['*'] : ['a'] });
        deliver();
        for (const step of steps) {
          if (step.kind === 'snapshot') {
            version += 1;
            cache.setSnapshot(snapshotOf(version, step.contents));
          } else if (step.kind === 'reply') {
            reply(step.nack);
          } else if (!wildcard) {
            const subscribe = step.kind === 'subscribe';
            if (subscribe) subscribed.add(step.name);
            else {
              subscribed.delete(step.name);
              client.delete(step.name);
              // Re-subscribing later legitimately resends: forget what was sent for this name.
              lastSent.delete(step.name);
            }
            stream.handleRequest({ type_url: CLUSTER_TYPE_URL, [subscribe ? 'resource_names_subscribe' : 'resource_names_unsubscribe']: [step.name] });
          }
          deliver();
        }
        // Quiesce: ACK everything.
        for (let i = 0; i < 10 && unanswered; i += 1) reply(false);
        expect(unanswered).toBeUndefined();
        if (!nacked) {
          const current = cache.getSnapshot()?.[CLUSTER_TYPE_URL];
          const expected = new Map<string, string>();
          for (const [name, resource] of current?.resources ?? []) {
            if (wildcard || subscribed.has(name)) expected.set(name, resource.version);
          }
          expect(new Map([...client].sort())).toEqual(new Map([...expected].sort()));
        }
        stream.close();
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 300) },
    );
  });

  it('SotW: one response in flight, never the same version twice without a subscription change, converges after ACKs', () => {
    fc.assert(
      fc.property(fc.array(stepArbitrary, { maxLength: 40 }), (steps) => {
        const cache = new InMemorySnapshotCache();
        let version = 0;
        cache.setSnapshot(snapshotOf(version, { a: 1 }));
        const outbox: DiscoveryResponse[] = [];
        const stream = new SotwStream({ stream: streamInfo('sotw'), cache, controlPlaneId: 't', send: (r) => outbox.push(r), onEvent: () => {}, log });
        let unanswered: DiscoveryResponse | undefined;
        let lastSentVersion: string | undefined;
        let subscriptionChanged = false;
        const names = new Set<string>();

        const deliver = (): void => {
          for (const response of outbox.splice(0)) {
            expect(unanswered).toBeUndefined();
            if (!subscriptionChanged) expect(response.version_info).not.toBe(lastSentVersion);
            subscriptionChanged = false;
            lastSentVersion = response.version_info;
            unanswered = response;
          }
        };
        const request = (nonce: string | undefined, nack: boolean): void => {
          stream.handleRequest({
            type_url: CLUSTER_TYPE_URL,
            resource_names: [...names],
            ...(nonce !== undefined ? { response_nonce: nonce, version_info: lastSentVersion } : {}),
            ...(nack ? { error_detail: { message: 'no' } } : {}),
          });
          deliver();
        };
        names.add('a');
        request(undefined, false);
        for (const step of steps) {
          if (step.kind === 'snapshot') {
            version += 1;
            cache.setSnapshot(snapshotOf(version, step.contents));
            deliver();
          } else if (step.kind === 'reply' && unanswered) {
            const nonce = unanswered.nonce;
            unanswered = undefined;
            request(nonce, step.nack);
          } else if (step.kind === 'subscribe' && unanswered && !names.has(step.name)) {
            // SotW carries subscription changes on the ACK of the latest response.
            const nonce = unanswered.nonce;
            unanswered = undefined;
            names.add(step.name);
            subscriptionChanged = true;
            request(nonce, false);
            subscriptionChanged = false;
          }
        }
        for (let i = 0; i < 10 && unanswered; i += 1) {
          const nonce = unanswered.nonce;
          unanswered = undefined;
          request(nonce, false);
        }
        const current = cache.getSnapshot()?.[CLUSTER_TYPE_URL];
        expect(lastSentVersion).toBe(current?.version);
        stream.close();
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 300) },
    );
  });
});
