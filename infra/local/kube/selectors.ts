// Label and field selectors, with the syntax of k8s.io/apimachinery/pkg/labels and /fields.
// Field selectors: `metadata.name` and `metadata.namespace` on every kind (all custom resources
// get in the real apiserver), plus the fields a built-in kind declares selectable
// (ResourceType.selectableFields: a Secret's `type`, an Event's `involvedObject.*`, ...); anything
// else is a 400, never silently ignored.
import { errors } from './errors';
import { isJsonObject, stringMap, type Json, type JsonObject } from './json';

export type LabelRequirement =
  | { key: string; op: 'equals' | 'notEquals'; value: string }
  | { key: string; op: 'in' | 'notIn'; values: string[] }
  | { key: string; op: 'exists' | 'doesNotExist' };

export interface FieldRequirement {
  /** A dotted path into the object (`metadata.name`, `involvedObject.uid`). */
  field: string;
  op: 'equals' | 'notEquals';
  value: string;
}

/** Splits on commas that are not inside parentheses (`a in (x,y),b=c`). */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (char === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, selector: string): string {
  if (!LABEL_KEY.test(key) || key.length > 316) throw errors.badRequest(`unable to parse requirement: invalid label key "${key}" in selector "${selector}"`);
  return key;
}

function checkValue(value: string, selector: string): string {
  if (!LABEL_VALUE.test(value) || value.length > 63) throw errors.badRequest(`unable to parse requirement: invalid label value "${value}" in selector "${selector}"`);
  return value;
}

export function parseLabelSelector(selector: string | undefined): LabelRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  return splitTopLevel(selector).map((part): LabelRequirement => {
    const setMatch = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
    if (setMatch) {
      const values = (setMatch[3] ?? '').split(',').map((v) => checkValue(v.trim(), selector));
      return { key: checkKey(setMatch[1] ?? '', selector), op: setMatch[2] === 'in' ? 'in' : 'notIn', values };
    }
    const compare = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (compare) {
      return {
        key: checkKey(compare[1] ?? '', selector),
        op: compare[2] === '!=' ? 'notEquals' : 'equals',
        value: checkValue(compare[3] ?? '', selector),
      };
    }
    if (part.startsWith('!')) return { key: checkKey(part.slice(1).trim(), selector), op: 'doesNotExist' };
    if (/^\S+$/.test(part)) return { key: checkKey(part, selector), op: 'exists' };
    throw errors.badRequest(`unable to parse requirement: unable to parse label selector "${selector}"`);
  });
}

export function parseFieldSelector(selector: string | undefined, selectableFields: readonly string[] = []): FieldRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  return selector.split(',').map((part) => {
    const match = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!match) throw errors.badRequest(`invalid field selector: "${part}"`);
    const field = match[1] ?? '';
    if (field !== 'metadata.name' && field !== 'metadata.namespace' && !selectableFields.includes(field)) {
      throw errors.badRequest(`field label not supported: ${field}`);
    }
    return { field, op: match[2] === '!=' ? 'notEquals' : 'equals', value: match[3] ?? '' };
  });
}

export function matchesLabels(object: JsonObject, requirements: LabelRequirement[]): boolean {
  if (requirements.length === 0) return true;
  const labels = stringMap(isJsonObject(object['metadata']) ? object['metadata']['labels'] : undefined);
  return requirements.every((requirement) => {
    const value = labels[requirement.key];
    switch (requirement.op) {
      case 'equals':
        return value === requirement.value;
      case 'notEquals':
        return value !== requirement.value;
      case 'in':
        return value !== undefined && requirement.values.includes(value);
      case 'notIn':
        return value === undefined || !requirement.values.includes(value);
      case 'exists':
        return value !== undefined;
      case 'doesNotExist':
        return value === undefined;
    }
  });
}

export function matchesFields(object: JsonObject, requirements: FieldRequirement[]): boolean {
  if (requirements.length === 0) return true;
  return requirements.every((requirement) => {
    // The apiserver's field sets hold strings; an absent field is the empty string.
    let raw: Json | undefined = object;
    for (const key of requirement.field.split('.')) raw = isJsonObject(raw) ? raw[key] : undefined;
    const actual = typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : '';
    return requirement.op === 'equals' ? actual === requirement.value : actual !== requirement.value;
  });
}
