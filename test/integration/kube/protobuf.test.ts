// The protobuf decoder for Namespace and Lease bodies, on messages built here with the wire
// format (varint keys, length-delimited fields) and the field numbers of k8s.io/api.
import { ApiError } from '../../../infra/local/kube/errors';
import { decodeKubernetesProtobuf } from '../../../infra/local/kube/protobuf';

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
const bytesField = (number: number, content: Buffer | string): Buffer => {
  const body = typeof content === 'string' ? Buffer.from(content) : content;
  return Buffer.concat([varint((number << 3) | 2), varint(body.length), body]);
};
const intField = (number: number, value: number): Buffer => Buffer.concat([varint(number << 3), varint(value)]);
const message = (...parts: Buffer[]): Buffer => Buffer.concat(parts);

function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = message(bytesField(1, apiVersion), bytesField(2, kind));
  return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), bytesField(1, typeMeta), bytesField(2, raw), bytesField(3, ''), bytesField(4, '')]);
}

describe('decodeKubernetesProtobuf', () => {
  it('decodes a Namespace with labels, annotations and a zero creationTimestamp', () => {
    const metadata = message(
      bytesField(1, 'team-a'),
      bytesField(8, Buffer.alloc(0)),
      bytesField(11, message(bytesField(1, 'tier'), bytesField(2, 'web'))),
      bytesField(11, message(bytesField(1, 'env'), bytesField(2, 'prod'))),
      bytesField(12, message(bytesField(1, 'note'), bytesField(2, 'hi'))),
    );
    const raw = message(bytesField(1, metadata), bytesField(2, Buffer.alloc(0)), bytesField(3, Buffer.alloc(0)));
    expect(decodeKubernetesProtobuf(envelope('v1', 'Namespace', raw))).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a', labels: { tier: 'web', env: 'prod' }, annotations: { note: 'hi' } },
      spec: {},
      status: {},
    });
  });

  it('decodes a Lease with MicroTime renewTime', () => {
    const renewTime = message(intField(1, 1767225600), intField(2, 123456000)); // 2026-01-01T00:00:00.123456Z
    const spec = message(bytesField(1, 'pod-a'), intField(2, 15), bytesField(4, renewTime), intField(5, 3));
    const raw = message(bytesField(1, message(bytesField(1, 'leader'), bytesField(3, 'kube-system'))), bytesField(2, spec));
    expect(decodeKubernetesProtobuf(envelope('coordination.k8s.io/v1', 'Lease', raw))).toEqual({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'leader', namespace: 'kube-system' },
      spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 15, renewTime: '2026-01-01T00:00:00.123456Z', leaseTransitions: 3 },
    });
  });

  it.each([
    ['no magic prefix', Buffer.from('{"kind":"Namespace"}'), 400],
    ['a kind it does not decode', envelope('apps/v1', 'Deployment', Buffer.alloc(0)), 415],
    ['an ObjectMeta field it does not decode (ownerReferences)', envelope('v1', 'Namespace', bytesField(1, bytesField(13, Buffer.alloc(0)))), 415],
    ['a truncated message', envelope('v1', 'Namespace', Buffer.from([0x0a, 0x05, 0x0a])), 400],
    ['a truncated varint', Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x08, 0x80]), 400],
  ])('refuses %s with %d', (_name, body, code) => {
    let caught: unknown;
    try {
      decodeKubernetesProtobuf(body);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).code).toBe(code);
  });
});
