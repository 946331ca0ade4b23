// Decoding of the Kubernetes protobuf wire format for the built-in kinds whose clients write
// them in it: kubectl's generators (`kubectl create namespace|secret|configmap`), client-go's
// generated typed clients (Leases, Events: they prefer protobuf for built-in kinds) and
// controller-runtime's client (protobuf for every built-in kind: Contour's Ingress status
// updates) send `application/vnd.kubernetes.protobuf` bodies. (client-go's event-recorder sink
// posts Events as JSON: it bypasses the generated methods.) Layout (k8s.io/apimachinery runtime/serializer/protobuf): the 4-byte magic "k8s\0",
// then a runtime.Unknown message {typeMeta=1 {apiVersion=1, kind=2}, raw=2, contentEncoding=3,
// contentType=4} whose `raw` is the object's own message. Field numbers are those of the
// `protobuf:"..."` tags in k8s.io/apimachinery/pkg/apis/meta/v1 (ObjectMeta), k8s.io/api/core/v1
// (Namespace, Event, Secret, ConfigMap), k8s.io/api/coordination/v1 (Lease) and k8s.io/api/networking/v1
// (Ingress). A field this decoder does not know is refused (415), never dropped silently.
// Responses are always JSON: client-go sends `Accept: application/vnd.kubernetes.protobuf,
// application/json` (or `..., */*`) and decodes a response by its own Content-Type
// (docs/CONTOUR.md, "Protobuf").
import { errors } from './errors';
import { isJsonObject, type Json, type JsonObject } from './json';

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

type FieldValue = { wireType: 0; value: bigint } | { wireType: 2; bytes: Buffer };

function readVarint(buffer: Buffer, start: number): { value: bigint; next: number } {
  let value = 0n;
  let shift = 0n;
  let offset = start;
  for (;;) {
    const byte = buffer[offset];
    if (byte === undefined || shift > 63n) throw errors.badRequest('malformed protobuf: truncated varint');
    value |= BigInt(byte & 0x7f) << shift;
    offset += 1;
    if ((byte & 0x80) === 0) return { value, next: offset };
    shift += 7n;
  }
}

/** Splits a message into (field number, value) pairs, in order. */
function fields(buffer: Buffer, message: string): [number, FieldValue][] {
  const result: [number, FieldValue][] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const key = readVarint(buffer, offset);
    const fieldNumber = Number(key.value >> 3n);
    const wireType = Number(key.value & 7n);
    offset = key.next;
    if (wireType === 0) {
      const varint = readVarint(buffer, offset);
      result.push([fieldNumber, { wireType: 0, value: varint.value }]);
      offset = varint.next;
    } else if (wireType === 2) {
      const length = readVarint(buffer, offset);
      const end = length.next + Number(length.value);
      if (end > buffer.length) throw errors.badRequest(`malformed protobuf: ${message} field ${fieldNumber} overruns the message`);
      result.push([fieldNumber, { wireType: 2, bytes: buffer.subarray(length.next, end) }]);
      offset = end;
    } else {
      throw errors.unsupportedMediaType(`protobuf wire type ${wireType} in ${message} field ${fieldNumber} is not decoded by this local API server; send JSON`);
    }
  }
  return result;
}

function bytesOf(value: FieldValue, where: string): Buffer {
  if (value.wireType !== 2) throw errors.badRequest(`malformed protobuf: ${where} must be length-delimited`);
  return value.bytes;
}

function stringOf(value: FieldValue, where: string): string {
  return bytesOf(value, where).toString('utf8');
}

function intOf(value: FieldValue, where: string): number {
  if (value.wireType !== 0) throw errors.badRequest(`malformed protobuf: ${where} must be a varint`);
  return Number(BigInt.asIntN(64, value.value));
}

function unknownField(message: string, fieldNumber: number): never {
  throw errors.unsupportedMediaType(`protobuf field ${fieldNumber} of ${message} is not decoded by this local API server; send application/json`);
}

/** metav1.Time / MicroTime {seconds=1, nanos=2}; the zero time (an empty message) is null. */
function timeOf(value: FieldValue, where: string, micro: boolean): Json {
  let seconds = 0;
  let nanos = 0;
  for (const [number, field] of fields(bytesOf(value, where), where)) {
    if (number === 1) seconds = intOf(field, `${where}.seconds`);
    else if (number === 2) nanos = intOf(field, `${where}.nanos`);
    else unknownField(where, number);
  }
  if (seconds === 0 && nanos === 0) return null;
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  // RFC 3339 as Kubernetes writes it: seconds for Time, microseconds for MicroTime.
  return micro ? `${iso}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${iso}Z`;
}

function mapEntry(value: FieldValue, where: string): [string, string] {
  let key = '';
  let entry = '';
  for (const [number, field] of fields(bytesOf(value, where), where)) {
    if (number === 1) key = stringOf(field, where);
    else if (number === 2) entry = stringOf(field, where);
    else unknownField(where, number);
  }
  return [key, entry];
}

function objectMeta(buffer: Buffer): JsonObject {
  const meta: JsonObject = {};
  const labels: JsonObject = {};
  const annotations: JsonObject = {};
  const finalizers: string[] = [];
  const strings: Record<number, string> = { 1: 'name', 2: 'generateName', 3: 'namespace', 4: 'selfLink', 5: 'uid', 6: 'resourceVersion' };
  for (const [number, field] of fields(buffer, 'ObjectMeta')) {
    const stringName = strings[number];
    if (stringName !== undefined) {
      const value = stringOf(field, `metadata.${stringName}`);
      if (value !== '') meta[stringName] = value;
    } else if (number === 7) meta['generation'] = intOf(field, 'metadata.generation');
    else if (number === 8) {
      const time = timeOf(field, 'metadata.creationTimestamp', false);
      if (time !== null) meta['creationTimestamp'] = time;
    } else if (number === 9) meta['deletionTimestamp'] = timeOf(field, 'metadata.deletionTimestamp', false);
    else if (number === 10) meta['deletionGracePeriodSeconds'] = intOf(field, 'metadata.deletionGracePeriodSeconds');
    else if (number === 11) {
      const [key, value] = mapEntry(field, 'metadata.labels');
      labels[key] = value;
    } else if (number === 12) {
      const [key, value] = mapEntry(field, 'metadata.annotations');
      annotations[key] = value;
    } else if (number === 14) finalizers.push(stringOf(field, 'metadata.finalizers'));
    else unknownField('ObjectMeta', number); // ownerReferences (13), managedFields (17), ...
  }
  if (Object.keys(labels).length > 0) meta['labels'] = labels;
  if (Object.keys(annotations).length > 0) meta['annotations'] = annotations;
  if (finalizers.length > 0) meta['finalizers'] = finalizers;
  return meta;
}

function namespace(buffer: Buffer): JsonObject {
  const object: JsonObject = { apiVersion: 'v1', kind: 'Namespace' };
  for (const [number, field] of fields(buffer, 'Namespace')) {
    if (number === 1) object['metadata'] = objectMeta(bytesOf(field, 'metadata'));
    else if (number === 2) {
      const finalizers: string[] = [];
      for (const [specNumber, specField] of fields(bytesOf(field, 'spec'), 'NamespaceSpec')) {
        if (specNumber === 1) finalizers.push(stringOf(specField, 'spec.finalizers'));
        else unknownField('NamespaceSpec', specNumber);
      }
      object['spec'] = finalizers.length > 0 ? { finalizers } : {};
    } else if (number === 3) {
      const status: JsonObject = {};
      for (const [statusNumber, statusField] of fields(bytesOf(field, 'status'), 'NamespaceStatus')) {
        if (statusNumber === 1) status['phase'] = stringOf(statusField, 'status.phase');
        else unknownField('NamespaceStatus', statusNumber);
      }
      object['status'] = status;
    } else unknownField('Namespace', number);
  }
  return object;
}

function lease(buffer: Buffer): JsonObject {
  const object: JsonObject = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
  for (const [number, field] of fields(buffer, 'Lease')) {
    if (number === 1) object['metadata'] = objectMeta(bytesOf(field, 'metadata'));
    else if (number === 2) {
      const spec: JsonObject = {};
      for (const [specNumber, specField] of fields(bytesOf(field, 'spec'), 'LeaseSpec')) {
        if (specNumber === 1) spec['holderIdentity'] = stringOf(specField, 'spec.holderIdentity');
        else if (specNumber === 2) spec['leaseDurationSeconds'] = intOf(specField, 'spec.leaseDurationSeconds');
        else if (specNumber === 3) spec['acquireTime'] = timeOf(specField, 'spec.acquireTime', true);
        else if (specNumber === 4) spec['renewTime'] = timeOf(specField, 'spec.renewTime', true);
        else if (specNumber === 5) spec['leaseTransitions'] = intOf(specField, 'spec.leaseTransitions');
        else unknownField('LeaseSpec', specNumber);
      }
      object['spec'] = spec;
    } else unknownField('Lease', number);
  }
  return object;
}

// Messages described by field number, for the kinds added for ingress controllers. Zero values
// (empty strings, 0, false) are left out, as the JSON `omitempty` of these Go fields does;
// gogo-protobuf writes non-pointer fields even when they are zero.
type FieldSpec =
  | { name: string; kind: 'string' | 'int' | 'bool' | 'time' | 'microtime' }
  | { name: string; kind: 'strings' }
  /** map<string, string> / map<string, bytes> (JSON: base64, as Go encodes []byte). */
  | { name: string; kind: 'stringMap' | 'bytesMap' }
  | { name: string; kind: 'message'; message: MessageSpec; repeated?: boolean };
interface MessageSpec {
  name: string;
  fields: Record<number, FieldSpec>;
}

function decodeMessage(buffer: Buffer, spec: MessageSpec): JsonObject {
  const object: JsonObject = {};
  for (const [number, field] of fields(buffer, spec.name)) {
    const fieldSpec = spec.fields[number];
    if (!fieldSpec) unknownField(spec.name, number);
    const where = `${spec.name}.${fieldSpec.name}`;
    switch (fieldSpec.kind) {
      case 'string': {
        const value = stringOf(field, where);
        if (value !== '') object[fieldSpec.name] = value;
        break;
      }
      case 'int': {
        const value = intOf(field, where);
        if (value !== 0) object[fieldSpec.name] = value;
        break;
      }
      case 'bool':
        if (intOf(field, where) !== 0) object[fieldSpec.name] = true;
        break;
      case 'time':
      case 'microtime':
        object[fieldSpec.name] = timeOf(field, where, fieldSpec.kind === 'microtime');
        break;
      case 'strings': {
        const list = Array.isArray(object[fieldSpec.name]) ? (object[fieldSpec.name] as Json[]) : [];
        list.push(stringOf(field, where));
        object[fieldSpec.name] = list;
        break;
      }
      case 'stringMap':
      case 'bytesMap': {
        const map = isJsonObject(object[fieldSpec.name]) ? (object[fieldSpec.name] as JsonObject) : {};
        let key = '';
        let entry: Buffer = Buffer.alloc(0);
        for (const [entryNumber, entryField] of fields(bytesOf(field, where), where)) {
          if (entryNumber === 1) key = stringOf(entryField, where);
          else if (entryNumber === 2) entry = bytesOf(entryField, where);
          else unknownField(where, entryNumber);
        }
        map[key] = fieldSpec.kind === 'bytesMap' ? entry.toString('base64') : entry.toString('utf8');
        object[fieldSpec.name] = map;
        break;
      }
      case 'message': {
        const value = fieldSpec.message === OBJECT_META ? objectMeta(bytesOf(field, where)) : decodeMessage(bytesOf(field, where), fieldSpec.message);
        if (fieldSpec.repeated) {
          const list = Array.isArray(object[fieldSpec.name]) ? (object[fieldSpec.name] as Json[]) : [];
          list.push(value);
          object[fieldSpec.name] = list;
        } else object[fieldSpec.name] = value;
        break;
      }
    }
  }
  return object;
}

/** Stands for ObjectMeta, decoded by objectMeta() above. */
const OBJECT_META: MessageSpec = { name: 'ObjectMeta', fields: {} };

const OBJECT_REFERENCE: MessageSpec = {
  name: 'ObjectReference',
  fields: {
    1: { name: 'kind', kind: 'string' },
    2: { name: 'namespace', kind: 'string' },
    3: { name: 'name', kind: 'string' },
    4: { name: 'uid', kind: 'string' },
    5: { name: 'apiVersion', kind: 'string' },
    6: { name: 'resourceVersion', kind: 'string' },
    7: { name: 'fieldPath', kind: 'string' },
  },
};

const EVENT: MessageSpec = {
  name: 'Event',
  fields: {
    1: { name: 'metadata', kind: 'message', message: OBJECT_META },
    2: { name: 'involvedObject', kind: 'message', message: OBJECT_REFERENCE },
    3: { name: 'reason', kind: 'string' },
    4: { name: 'message', kind: 'string' },
    5: { name: 'source', kind: 'message', message: { name: 'EventSource', fields: { 1: { name: 'component', kind: 'string' }, 2: { name: 'host', kind: 'string' } } } },
    6: { name: 'firstTimestamp', kind: 'time' },
    7: { name: 'lastTimestamp', kind: 'time' },
    8: { name: 'count', kind: 'int' },
    9: { name: 'type', kind: 'string' },
    10: { name: 'eventTime', kind: 'microtime' },
    11: { name: 'series', kind: 'message', message: { name: 'EventSeries', fields: { 1: { name: 'count', kind: 'int' }, 2: { name: 'lastObservedTime', kind: 'microtime' } } } },
    12: { name: 'action', kind: 'string' },
    13: { name: 'related', kind: 'message', message: OBJECT_REFERENCE },
    14: { name: 'reportingComponent', kind: 'string' },
    15: { name: 'reportingInstance', kind: 'string' },
  },
};

const INGRESS_BACKEND: MessageSpec = {
  name: 'IngressBackend',
  fields: {
    3: {
      name: 'resource',
      kind: 'message',
      message: { name: 'TypedLocalObjectReference', fields: { 1: { name: 'apiGroup', kind: 'string' }, 2: { name: 'kind', kind: 'string' }, 3: { name: 'name', kind: 'string' } } },
    },
    4: {
      name: 'service',
      kind: 'message',
      message: {
        name: 'IngressServiceBackend',
        fields: {
          1: { name: 'name', kind: 'string' },
          2: { name: 'port', kind: 'message', message: { name: 'ServiceBackendPort', fields: { 1: { name: 'name', kind: 'string' }, 2: { name: 'number', kind: 'int' } } } },
        },
      },
    },
  },
};

const INGRESS: MessageSpec = {
  name: 'Ingress',
  fields: {
    1: { name: 'metadata', kind: 'message', message: OBJECT_META },
    2: {
      name: 'spec',
      kind: 'message',
      message: {
        name: 'IngressSpec',
        fields: {
          1: { name: 'defaultBackend', kind: 'message', message: INGRESS_BACKEND },
          2: { name: 'tls', kind: 'message', repeated: true, message: { name: 'IngressTLS', fields: { 1: { name: 'hosts', kind: 'strings' }, 2: { name: 'secretName', kind: 'string' } } } },
          3: {
            name: 'rules',
            kind: 'message',
            repeated: true,
            message: {
              name: 'IngressRule',
              fields: {
                1: { name: 'host', kind: 'string' },
                // IngressRuleValue is embedded inline in JSON: ingressRule() below lifts `http`.
                2: {
                  name: 'ingressRuleValue',
                  kind: 'message',
                  message: {
                    name: 'IngressRuleValue',
                    fields: {
                      1: {
                        name: 'http',
                        kind: 'message',
                        message: {
                          name: 'HTTPIngressRuleValue',
                          fields: {
                            1: {
                              name: 'paths',
                              kind: 'message',
                              repeated: true,
                              message: {
                                name: 'HTTPIngressPath',
                                fields: { 1: { name: 'path', kind: 'string' }, 2: { name: 'backend', kind: 'message', message: INGRESS_BACKEND }, 3: { name: 'pathType', kind: 'string' } },
                              },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
          4: { name: 'ingressClassName', kind: 'string' },
        },
      },
    },
    3: {
      name: 'status',
      kind: 'message',
      message: {
        name: 'IngressStatus',
        fields: {
          1: {
            name: 'loadBalancer',
            kind: 'message',
            message: {
              name: 'IngressLoadBalancerStatus',
              fields: {
                1: {
                  name: 'ingress',
                  kind: 'message',
                  repeated: true,
                  message: {
                    name: 'IngressLoadBalancerIngress',
                    fields: {
                      1: { name: 'ip', kind: 'string' },
                      2: { name: 'hostname', kind: 'string' },
                      4: {
                        name: 'ports',
                        kind: 'message',
                        repeated: true,
                        message: { name: 'IngressPortStatus', fields: { 1: { name: 'port', kind: 'int' }, 2: { name: 'protocol', kind: 'string' }, 3: { name: 'error', kind: 'string' } } },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

// kubectl's generators (`kubectl create secret`, `kubectl create configmap`) post these.
const SECRET: MessageSpec = {
  name: 'Secret',
  fields: {
    1: { name: 'metadata', kind: 'message', message: OBJECT_META },
    2: { name: 'data', kind: 'bytesMap' },
    3: { name: 'type', kind: 'string' },
    4: { name: 'stringData', kind: 'stringMap' },
    5: { name: 'immutable', kind: 'bool' },
  },
};

const CONFIG_MAP: MessageSpec = {
  name: 'ConfigMap',
  fields: {
    1: { name: 'metadata', kind: 'message', message: OBJECT_META },
    2: { name: 'data', kind: 'stringMap' },
    3: { name: 'binaryData', kind: 'bytesMap' },
    4: { name: 'immutable', kind: 'bool' },
  },
};

function event(buffer: Buffer): JsonObject {
  return { apiVersion: 'v1', kind: 'Event', ...decodeMessage(buffer, EVENT) };
}

function ingress(buffer: Buffer): JsonObject {
  const object: JsonObject = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', ...decodeMessage(buffer, INGRESS) };
  const spec = object['spec'];
  if (isJsonObject(spec) && Array.isArray(spec['rules'])) {
    spec['rules'] = spec['rules'].map((rule) => {
      if (!isJsonObject(rule)) return rule;
      const { ingressRuleValue, ...rest } = rule;
      return isJsonObject(ingressRuleValue) ? { ...rest, ...ingressRuleValue } : rest;
    });
  }
  return object;
}

const DECODERS: Record<string, (raw: Buffer) => JsonObject> = {
  'v1/Namespace': namespace,
  'coordination.k8s.io/v1/Lease': lease,
  'v1/Event': event,
  'v1/Secret': (buffer) => ({ apiVersion: 'v1', kind: 'Secret', ...decodeMessage(buffer, SECRET) }),
  'v1/ConfigMap': (buffer) => ({ apiVersion: 'v1', kind: 'ConfigMap', ...decodeMessage(buffer, CONFIG_MAP) }),
  'networking.k8s.io/v1/Ingress': ingress,
};

/** Decodes a protobuf request body into the JSON form of the object. */
export function decodeKubernetesProtobuf(body: Buffer): JsonObject {
  if (body.length < 4 || MAGIC.some((byte, i) => body[i] !== byte)) throw errors.badRequest('malformed protobuf body: missing the "k8s\\0" prefix');
  let apiVersion = '';
  let kind = '';
  let raw: Buffer | undefined;
  for (const [number, field] of fields(body.subarray(4), 'runtime.Unknown')) {
    if (number === 1) {
      for (const [typeNumber, typeField] of fields(bytesOf(field, 'typeMeta'), 'TypeMeta')) {
        if (typeNumber === 1) apiVersion = stringOf(typeField, 'apiVersion');
        else if (typeNumber === 2) kind = stringOf(typeField, 'kind');
      }
    } else if (number === 2) raw = bytesOf(field, 'raw');
    else if (number === 3 && stringOf(field, 'contentEncoding') !== '') throw errors.unsupportedMediaType('protobuf contentEncoding is not supported');
  }
  const decoder = DECODERS[`${apiVersion}/${kind}`];
  if (!decoder) throw errors.unsupportedMediaType(`protobuf bodies are decoded only for Namespace, Lease, Event, Secret, ConfigMap and Ingress (got ${apiVersion}/${kind}); send application/json`);
  return decoder(raw ?? Buffer.alloc(0));
}
