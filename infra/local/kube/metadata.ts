// Checks on client-written ObjectMeta fields (k8s.io/apimachinery/pkg/api/validation):
// labels are qualified-name keys with label values, annotations are strings (256 KiB in
// total), finalizers are qualified names, ownerReferences name their owner completely.
import { z } from 'zod';
import { isJsonObject, type JsonObject } from './json';

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const ANNOTATIONS_LIMIT_BYTES = 256 * 1024;

function validQualifiedName(key: string): boolean {
  const slash = key.indexOf('/');
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  return QUALIFIED_NAME.test(key) && name.length <= 63 && prefix.length <= 253;
}

const ownerReferenceSchema = z.object({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});

export interface FieldProblem {
  field: string;
  message: string;
}

export function validateObjectMeta(object: JsonObject): FieldProblem[] {
  const metadata = object['metadata'];
  if (!isJsonObject(metadata)) return [];
  const problems: FieldProblem[] = [];
  const labels = metadata['labels'];
  if (labels !== undefined && labels !== null) {
    if (!isJsonObject(labels)) problems.push({ field: 'metadata.labels', message: 'must be a map of strings' });
    else {
      for (const [key, value] of Object.entries(labels)) {
        if (!validQualifiedName(key)) problems.push({ field: `metadata.labels`, message: `Invalid value: "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix` });
        if (typeof value !== 'string') problems.push({ field: `metadata.labels.${key}`, message: 'must be a string' });
        else if (!LABEL_VALUE.test(value) || value.length > 63) {
          problems.push({ field: `metadata.labels.${key}`, message: `Invalid value: "${value}": a valid label must be an empty string or consist of at most 63 alphanumeric characters, '-', '_' or '.'` });
        }
      }
    }
  }
  const annotations = metadata['annotations'];
  if (annotations !== undefined && annotations !== null) {
    if (!isJsonObject(annotations)) problems.push({ field: 'metadata.annotations', message: 'must be a map of strings' });
    else {
      let size = 0;
      for (const [key, value] of Object.entries(annotations)) {
        if (!validQualifiedName(key)) problems.push({ field: 'metadata.annotations', message: `Invalid value: "${key}": not a qualified name` });
        if (typeof value !== 'string') problems.push({ field: `metadata.annotations.${key}`, message: 'must be a string' });
        else size += Buffer.byteLength(key) + Buffer.byteLength(value);
      }
      if (size > ANNOTATIONS_LIMIT_BYTES) problems.push({ field: 'metadata.annotations', message: `Too long: must have at most ${ANNOTATIONS_LIMIT_BYTES} bytes` });
    }
  }
  const finalizers = metadata['finalizers'];
  if (finalizers !== undefined && finalizers !== null) {
    if (!Array.isArray(finalizers) || finalizers.some((f) => typeof f !== 'string' || !validQualifiedName(f))) {
      problems.push({ field: 'metadata.finalizers', message: 'must be a list of qualified names' });
    }
  }
  const owners = metadata['ownerReferences'];
  if (owners !== undefined && owners !== null) {
    if (!z.array(ownerReferenceSchema).safeParse(owners).success) {
      problems.push({ field: 'metadata.ownerReferences', message: 'each reference needs apiVersion, kind, name and uid' });
    }
  }
  return problems;
}
