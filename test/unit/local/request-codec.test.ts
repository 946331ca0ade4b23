// The simulated Envoys encode a long interned name list once per list: the bytes they send must still
// decode to exactly the request, with the names in order, as protobufjs's own encoding does.
import { discoveryCodec } from '../../../infra/local/envoys/codec';
import { internNames } from '../../../infra/local/envoys/referencedNames';
import { EDS_TYPE_URL } from '../../../common/core';
import type { DiscoveryRequest } from '../../../common/xds';

const namesFrom = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `${prefix}/cluster-${String(index).padStart(4, '0')}`);

function ack(names: readonly string[], nonce: string): DiscoveryRequest {
  return { type_url: EDS_TYPE_URL, version_info: `v-${nonce}`, response_nonce: nonce, node: { id: 'sim-1', cluster: 'sim' }, resource_names: names };
}

describe('the simulated Envoys\' SotW request encoding', () => {
  const codec = discoveryCodec();

  it('decodes to the request it encoded, for a shared list and for a list encoded whole', () => {
    const shared = internNames(namesFrom('default', 40));
    expect(Object.isFrozen(shared)).toBe(true);
    for (const names of [shared, namesFrom('default', 40), namesFrom('default', 3)]) {
      const decoded = codec.decodeSotwRequest(codec.encodeSotwRequest(ack(names, '7')));
      expect(decoded.resource_names).toEqual([...names]);
      expect(decoded.version_info).toBe('v-7');
      expect(decoded.response_nonce).toBe('7');
      expect(decoded.node?.id).toBe('sim-1');
      expect(decoded.type_url).toBe(EDS_TYPE_URL);
    }
  });

  it('gives each shared list its own names, requests after requests', () => {
    const first = internNames(namesFrom('a', 30));
    const second = internNames(namesFrom('b', 30));
    for (const nonce of ['1', '2']) {
      expect(codec.decodeSotwRequest(codec.encodeSotwRequest(ack(first, nonce))).resource_names).toEqual([...first]);
      expect(codec.decodeSotwRequest(codec.encodeSotwRequest(ack(second, nonce))).resource_names).toEqual([...second]);
    }
  });
});
