// Query parameters, read the way kube-apiserver reads them, in one place.
//
// kube-apiserver takes the query through Go's url.ParseQuery, converts it into an options struct
// (ListOptions, CreateOptions, UpdateOptions, PatchOptions, DeleteOptions) with k8s.io/apimachinery's
// generated url.Values conversions, and then validates that struct. Both steps answer differently:
//   - a value that cannot be converted (an integer that is not one) is 400 BadRequest;
//   - a converted value that the options do not allow is 422 Invalid on kind `<X>Options` of group
//     meta.k8s.io, with one cause per field, in the words of apimachinery's field errors.
// Every handler reads its parameters through the decoders at the end of this file, and nothing
// else in the server looks at the query.
//
// The conversion rules (k8s.io/apimachinery pkg/runtime/conversion.go):
//   - one value: the first one wins when a parameter is repeated (dryRun keeps them all);
//   - bool: absent, "0" or "false" in any letter case (Go's strings.EqualFold) is false, and
//     EVERYTHING else is true, including "True", "yes", "no" and the empty string of `?watch=`;
//   - integers: strconv.ParseInt(value, 10, 64), so "", "1.5", "0x10", " 1" are refused; a sign is
//     allowed. An absent integer is 0 (limit) or unset (timeoutSeconds, gracePeriodSeconds);
//   - `pretty` is not part of any options struct: it is strconv.ParseBool, and a value it cannot
//     read is simply not pretty (never an error).
import { ApiError, errors } from './errors';
import { isJsonObject, type Json, type JsonObject } from './json';
import type { FieldValidation } from './objects';
import { parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelRequirement } from './selectors';

// ---------------------------------------------------------------------------------------------
// The query string: Go's net/url.ParseQuery.

/** The parsed query: every value of every parameter, in order (Go's url.Values). */
export class QueryValues {
  private constructor(private readonly values: ReadonlyMap<string, readonly string[]>) {}

  /**
   * Go's url.ParseQuery, as kube-apiserver's `req.URL.Query()` runs it: pairs are split on `&`; a
   * pair containing `;` is dropped; `+` is a space; a pair with a malformed `%` escape is dropped
   * (not kept verbatim, as URLSearchParams would keep it).
   */
  static parse(raw: string): QueryValues {
    const values = new Map<string, string[]>();
    for (const pair of raw.split('&')) {
      if (pair === '' || pair.includes(';')) continue;
      const equals = pair.indexOf('=');
      const key = queryUnescape(equals >= 0 ? pair.slice(0, equals) : pair);
      const value = queryUnescape(equals >= 0 ? pair.slice(equals + 1) : '');
      if (key === undefined || value === undefined) continue;
      const list = values.get(key);
      if (list) list.push(value);
      else values.set(key, [value]);
    }
    return new QueryValues(values);
  }

  /** All values of a parameter (empty when absent). */
  all(name: string): readonly string[] {
    return this.values.get(name) ?? [];
  }

  /** The first value, or undefined when the parameter is absent (Go: `len(values) == 0`). */
  first(name: string): string | undefined {
    return this.values.get(name)?.[0];
  }
}

/** Go's url.QueryUnescape; undefined for a malformed escape. */
function queryUnescape(text: string): string | undefined {
  if (!text.includes('%') && !text.includes('+')) return text;
  const bytes: number[] = [];
  const input = Buffer.from(text, 'utf8');
  for (let i = 0; i < input.length; i += 1) {
    const byte = input[i] ?? 0;
    if (byte === 0x25 /* % */) {
      const hex = input.subarray(i + 1, i + 3).toString('latin1');
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (byte === 0x2b /* + */) bytes.push(0x20);
    else bytes.push(byte);
  }
  return Buffer.from(bytes).toString('utf8');
}

// ---------------------------------------------------------------------------------------------
// Conversions of one parameter (pure; errors as values).

export type Converted<T> = { ok: true; value: T } | { ok: false; message: string };

/**
 * runtime.Convert_Slice_string_To_bool: only absence, "0" and "false" (strings.EqualFold) are
 * false. strings.EqualFold folds Unicode too: U+017F LATIN SMALL LETTER LONG S folds to "s", so
 * Go reads "falſe" as false as well.
 */
export function convertBool(values: readonly string[]): boolean {
  const first = values[0];
  if (first === undefined) return false;
  return !(first === '0' || equalFoldFalse(first));
}

/** runtime.Convert_Slice_string_To_Pointer_bool as the generated code calls it: absent stays unset. */
export function convertOptionalBool(values: readonly string[]): boolean | undefined {
  return values.length === 0 ? undefined : convertBool(values);
}

function equalFoldFalse(value: string): boolean {
  const runes = [...value];
  const expected = 'false';
  if (runes.length !== expected.length) return false;
  return runes.every((rune, i) => {
    const want = expected[i] ?? '';
    const lower = rune.length === 1 && rune >= 'A' && rune <= 'Z' ? rune.toLowerCase() : rune;
    return lower === want || (want === 's' && rune === '\u017f');
  });
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** strconv.ParseInt(value, 10, 64), with Go's error text. */
export function parseInt64(value: string): Converted<bigint> {
  if (!/^[+-]?[0-9]+$/.test(value)) return { ok: false, message: `strconv.ParseInt: parsing ${goQuote(value)}: invalid syntax` };
  const parsed = BigInt(value.startsWith('+') ? value.slice(1) : value);
  if (parsed < INT64_MIN || parsed > INT64_MAX) return { ok: false, message: `strconv.ParseInt: parsing ${goQuote(value)}: value out of range` };
  return { ok: true, value: parsed };
}

/** strconv.ParseUint(value, 10, 64): no sign at all. */
export function parseUint64(value: string): Converted<bigint> {
  if (!/^[0-9]+$/.test(value)) return { ok: false, message: `strconv.ParseUint: parsing ${goQuote(value)}: invalid syntax` };
  const parsed = BigInt(value);
  if (parsed > UINT64_MAX) return { ok: false, message: `strconv.ParseUint: parsing ${goQuote(value)}: value out of range` };
  return { ok: true, value: parsed };
}

/** runtime.Convert_Slice_string_To_int64: absent is 0. */
export function convertInt64(values: readonly string[]): Converted<bigint> {
  const first = values[0];
  return first === undefined ? { ok: true, value: 0n } : parseInt64(first);
}

/** runtime.Convert_Slice_string_To_Pointer_int64: absent stays unset. */
export function convertOptionalInt64(values: readonly string[]): Converted<bigint | undefined> {
  const first = values[0];
  return first === undefined ? { ok: true, value: undefined } : parseInt64(first);
}

/** strconv.ParseBool, as the apiserver reads `pretty`: a value it cannot parse is false. */
export function parseGoBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/**
 * A resourceVersion as storage.APIObjectVersioner.ParseResourceVersion reads it: "" and "0" are
 * "any" (undefined here), anything else must be a decimal uint64.
 */
export function parseResourceVersion(value: string): Converted<bigint | undefined> {
  if (value === '' || value === '0') return { ok: true, value: undefined };
  const parsed = parseUint64(value);
  if (!parsed.ok) return { ok: false, message: `invalid resource version: resourceVersion: Invalid value: ${goQuote(value)}: ${parsed.message}` };
  return parsed;
}

/** Go's strconv.Quote, for messages that show a value the way the apiserver shows it. */
export function goQuote(value: string): string {
  let out = '"';
  for (const rune of value) {
    const code = rune.codePointAt(0) ?? 0;
    const named: Record<string, string> = { '\u0007': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '\\': '\\\\', '"': '\\"' };
    const escape = named[rune];
    if (escape !== undefined) out += escape;
    else if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(rune)) out += rune;
    else if (code < 0x80) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (code < 0x10000) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------------
// Validation errors: k8s.io/apimachinery/pkg/util/validation/field, wrapped by errors.NewInvalid.

type FieldErrorType = 'FieldValueForbidden' | 'FieldValueNotSupported' | 'FieldValueInvalid' | 'FieldValueTooLong';

interface FieldError {
  type: FieldErrorType;
  field: string;
  /** ErrorBody(): "Forbidden: ...", "Unsupported value: ...: supported values: ...". */
  body: string;
}

const forbidden = (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, body: `Forbidden: ${detail}` });
const notSupported = (field: string, shown: string, supported: string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  body: `Unsupported value: ${shown}: supported values: ${supported.map(goQuote).join(', ')}`,
});
const invalidValue = (field: string, shown: string, detail: string): FieldError => ({ type: 'FieldValueInvalid', field, body: `Invalid value: ${shown}: ${detail}` });

/** Go's json.Marshal of a []string (it escapes <, > and & too): how field errors show a list. */
function goJsonList(values: readonly string[]): string {
  return JSON.stringify(values).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

export type OptionsKind = 'ListOptions' | 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/** errors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: kind}, "", errs). */
function invalidOptions(kind: OptionsKind, fieldErrors: FieldError[]): ApiError {
  const texts = [...new Set(fieldErrors.map((e) => `${e.field}: ${e.body}`))];
  const aggregate = texts.length === 1 ? (texts[0] ?? '') : `[${texts.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${kind}.meta.k8s.io "" is invalid: ${aggregate}`, {
    group: 'meta.k8s.io',
    kind,
    causes: fieldErrors.map((e) => ({ reason: e.type, message: e.body, field: e.field })),
  });
}

/** A conversion failure: 400 with apimachinery's message, prefixed by the parameter it is about. */
function unconvertible(parameter: string, message: string): ApiError {
  return errors.badRequest(`query parameter ${parameter}: ${message}`);
}

function int64Parameter(query: QueryValues, name: string): bigint {
  const converted = convertInt64(query.all(name));
  if (!converted.ok) throw unconvertible(name, converted.message);
  return converted.value;
}

function optionalInt64Parameter(query: QueryValues, name: string): bigint | undefined {
  const converted = convertOptionalInt64(query.all(name));
  if (!converted.ok) throw unconvertible(name, converted.message);
  return converted.value;
}

function saturatingNumber(value: bigint): number {
  // Every caller clamps or compares: precision beyond 2^53 changes nothing.
  return Number(value);
}

// ---------------------------------------------------------------------------------------------
// The options of each verb.

export interface ListOptions {
  labelSelector: LabelRequirement[];
  fieldSelector: FieldRequirement[];
  watch: boolean;
  allowWatchBookmarks: boolean;
  /** As sent ("" when absent). */
  resourceVersion: string;
  resourceVersionMatch: '' | 'NotOlderThan' | 'Exact';
  /** Unset: the server's default. Negative: the watch ends at once (kube-apiserver's context is already expired). */
  timeoutSeconds: number | undefined;
  /** Zero or negative: no limit. */
  limit: number;
  continue: string;
  sendInitialEvents: boolean | undefined;
}

/**
 * ListOptions for LIST, WATCH and DELETECOLLECTION: conversion (400), the WatchList defaults of
 * kube-apiserver 1.34+ (whose WatchList feature is on by default), validation (422), then the
 * field selector's field names (400), in the apiserver's order. `selectableFields`: the kind's
 * field-selector fields beyond metadata.name and metadata.namespace (ResourceType.selectableFields).
 */
export function decodeListOptions(query: QueryValues, selectableFields: readonly string[] = []): ListOptions {
  // The generated conversion's order: timeoutSeconds, then limit, then the selectors.
  const timeoutSeconds = optionalInt64Parameter(query, 'timeoutSeconds');
  const limit = int64Parameter(query, 'limit');
  const labelSelector = parseLabelSelector(query.first('labelSelector') ?? '');
  const options = {
    watch: convertBool(query.all('watch')),
    allowWatchBookmarks: convertBool(query.all('allowWatchBookmarks')),
    resourceVersion: query.first('resourceVersion') ?? '',
    resourceVersionMatch: query.first('resourceVersionMatch') ?? '',
    continue: query.first('continue') ?? '',
    sendInitialEvents: convertOptionalBool(query.all('sendInitialEvents')),
  };
  // metainternalversion.SetListOptionsDefaults: a watch from "" or "0" that says nothing about
  // initial events is a WatchList request (initial state, then the initial-events-end bookmark
  // when bookmarks are allowed).
  if (options.sendInitialEvents === undefined && options.resourceVersionMatch === '' && options.watch && (options.resourceVersion === '' || options.resourceVersion === '0')) {
    options.sendInitialEvents = true;
    options.resourceVersionMatch = 'NotOlderThan';
  }
  const problems = options.watch ? watchOptionProblems(options) : listOptionProblems(options);
  if (problems.length > 0) throw invalidOptions('ListOptions', problems);
  const match = options.resourceVersionMatch;
  return {
    ...options,
    resourceVersionMatch: match === 'NotOlderThan' || match === 'Exact' ? match : '',
    labelSelector,
    fieldSelector: parseFieldSelector(query.first('fieldSelector') ?? '', selectableFields),
    limit: saturatingNumber(limit),
    timeoutSeconds: timeoutSeconds === undefined ? undefined : saturatingNumber(timeoutSeconds),
  };
}

interface UncheckedListOptions {
  resourceVersion: string;
  resourceVersionMatch: string;
  continue: string;
  sendInitialEvents: boolean | undefined;
}

/** metainternalversion validation.ValidateListOptions, for a LIST. */
function listOptionProblems(options: UncheckedListOptions): FieldError[] {
  const problems: FieldError[] = [];
  const match = options.resourceVersionMatch;
  if (match !== '') {
    if (options.resourceVersion === '') problems.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (options.continue !== '') problems.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') problems.push(notSupported('resourceVersionMatch', goQuote(match), ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && options.resourceVersion === '0') problems.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (options.sendInitialEvents !== undefined) problems.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return problems;
}

/** The same, for a WATCH (with the WatchList feature enabled). */
function watchOptionProblems(options: UncheckedListOptions): FieldError[] {
  const problems: FieldError[] = [];
  const match = options.resourceVersionMatch;
  if (options.sendInitialEvents !== undefined && match !== 'NotOlderThan') {
    problems.push(forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
  }
  if (match !== '') {
    if (options.sendInitialEvents === undefined) problems.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    if (match !== 'NotOlderThan') problems.push(notSupported('resourceVersionMatch', goQuote(match), ['NotOlderThan']));
    if (options.continue !== '') problems.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
  }
  return problems;
}

export interface WriteParameters {
  dryRun: readonly string[];
  fieldManager: string;
  /** "" is the apiserver's default, Warn. */
  fieldValidation: FieldValidation;
}

export interface PatchParameters extends WriteParameters {
  force: boolean | undefined;
}

/** CreateOptions (POST) and UpdateOptions (PUT): dryRun, fieldManager, fieldValidation. */
export function decodeWriteOptions(query: QueryValues, kind: 'CreateOptions' | 'UpdateOptions'): WriteParameters {
  const options = rawWriteOptions(query);
  const problems = writeOptionProblems(options);
  if (problems.length > 0) throw invalidOptions(kind, problems);
  return withFieldValidation(options);
}

/**
 * PatchOptions: as UpdateOptions, plus `force`, which only an apply patch may carry. Apply patches
 * are refused (415) before their options are read (patch.ts), so every patch here is non-apply.
 */
export function decodePatchOptions(query: QueryValues): PatchParameters {
  const options = { ...rawWriteOptions(query), force: convertOptionalBool(query.all('force')) };
  const problems: FieldError[] = [];
  if (options.force !== undefined) problems.push(forbidden('force', 'may not be specified for non-apply patch'));
  problems.push(...writeOptionProblems(options));
  if (problems.length > 0) throw invalidOptions('PatchOptions', problems);
  return { ...withFieldValidation(options), force: options.force };
}

interface RawWriteOptions {
  dryRun: readonly string[];
  fieldManager: string;
  fieldValidation: string;
}

function rawWriteOptions(query: QueryValues): RawWriteOptions {
  return { dryRun: query.all('dryRun'), fieldManager: query.first('fieldManager') ?? '', fieldValidation: query.first('fieldValidation') ?? '' };
}

function withFieldValidation(options: RawWriteOptions): WriteParameters {
  const fieldValidation = options.fieldValidation === '' ? 'Warn' : (options.fieldValidation as FieldValidation);
  return { dryRun: options.dryRun, fieldManager: options.fieldManager, fieldValidation };
}

function writeOptionProblems(options: RawWriteOptions): FieldError[] {
  const problems = fieldManagerProblems(options.fieldManager);
  problems.push(...dryRunProblems(options.dryRun));
  if (!['', 'Ignore', 'Warn', 'Strict'].includes(options.fieldValidation)) {
    problems.push(notSupported('fieldValidation', goQuote(options.fieldValidation), ['', 'Ignore', 'Strict', 'Warn']));
  }
  return problems;
}

/** validation.ValidateFieldManager: at most 128 bytes, printable characters only. */
function fieldManagerProblems(fieldManager: string): FieldError[] {
  const problems: FieldError[] = [];
  if (Buffer.byteLength(fieldManager, 'utf8') > 128) problems.push({ type: 'FieldValueTooLong', field: 'fieldManager', body: 'Too long: may not be more than 128 bytes' });
  let offset = 0;
  for (const rune of fieldManager) {
    if (!/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(rune)) {
      const code = (rune.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
      problems.push(invalidValue('fieldManager', goQuote(fieldManager), `invalid character U+${code} (at position ${offset})`));
    }
    offset += Buffer.byteLength(rune, 'utf8');
  }
  return problems;
}

/** validation.ValidateDryRun: every value must be "All". */
function dryRunProblems(dryRun: readonly string[]): FieldError[] {
  return dryRun.every((value) => value === 'All') ? [] : [notSupported('dryRun', goJsonList(dryRun), ['All'])];
}

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

export interface DeleteOptions {
  dryRun: readonly string[];
  gracePeriodSeconds: number | undefined;
  orphanDependents: boolean | undefined;
  propagationPolicy: PropagationPolicy | undefined;
  preconditions: { uid?: string; resourceVersion?: string };
}

/**
 * DeleteOptions, as the apiserver's DELETE handlers read them: from the body when there is one,
 * otherwise from the query (where `uid` and `resourceVersion` become preconditions); then
 * validation.ValidateDeleteOptions (422).
 */
export function decodeDeleteOptions(query: QueryValues, body: Json | undefined): DeleteOptions {
  const options = body === undefined ? deleteOptionsFromQuery(query) : deleteOptionsFromBody(body);
  const problems: FieldError[] = [];
  const policy = options.propagationPolicy;
  if (options.orphanDependents !== undefined && policy !== undefined) {
    problems.push(invalidValue('propagationPolicy', goQuote(policy), 'orphanDependents and deletionPropagation cannot be both set'));
  }
  if (policy !== undefined && policy !== 'Foreground' && policy !== 'Background' && policy !== 'Orphan') {
    problems.push(notSupported('propagationPolicy', goQuote(policy), ['Foreground', 'Background', 'Orphan', 'nil']));
  }
  problems.push(...dryRunProblems(options.dryRun));
  if (problems.length > 0) throw invalidOptions('DeleteOptions', problems);
  return { ...options, propagationPolicy: policy as PropagationPolicy | undefined };
}

interface UncheckedDeleteOptions {
  dryRun: readonly string[];
  gracePeriodSeconds: number | undefined;
  orphanDependents: boolean | undefined;
  propagationPolicy: string | undefined;
  preconditions: { uid?: string; resourceVersion?: string };
}

function deleteOptionsFromQuery(query: QueryValues): UncheckedDeleteOptions {
  const grace = optionalInt64Parameter(query, 'gracePeriodSeconds');
  const preconditions: { uid?: string; resourceVersion?: string } = {};
  const uid = query.first('uid');
  const resourceVersion = query.first('resourceVersion');
  if (uid) preconditions.uid = uid;
  if (resourceVersion) preconditions.resourceVersion = resourceVersion;
  return {
    dryRun: query.all('dryRun'),
    gracePeriodSeconds: grace === undefined ? undefined : saturatingNumber(grace),
    orphanDependents: convertOptionalBool(query.all('orphanDependents')),
    propagationPolicy: query.first('propagationPolicy'),
    preconditions,
  };
}

/** A DeleteOptions body: wrong JSON types are decoding errors (400), as with the apiserver's decoder. */
function deleteOptionsFromBody(body: Json): UncheckedDeleteOptions {
  if (!isJsonObject(body)) throw errors.badRequest('DeleteOptions must be a JSON object');
  const typed = <T>(field: string, check: (value: Json) => value is Json & T, type: string): T | undefined => {
    const value = body[field];
    if (value === undefined || value === null) return undefined;
    if (!check(value)) throw errors.badRequest(`DeleteOptions.${field} must be ${type}`);
    return value;
  };
  const grace = typed('gracePeriodSeconds', (v): v is number => typeof v === 'number' && Number.isSafeInteger(v), 'an integer');
  const dryRun = typed('dryRun', (v): v is string[] => Array.isArray(v) && v.every((item) => typeof item === 'string'), 'a list of strings');
  const preconditionsBody = typed('preconditions', (v): v is JsonObject => isJsonObject(v), 'an object');
  const preconditions: { uid?: string; resourceVersion?: string } = {};
  for (const field of ['uid', 'resourceVersion'] as const) {
    const value = preconditionsBody?.[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw errors.badRequest(`DeleteOptions.preconditions.${field} must be a string`);
    preconditions[field] = value;
  }
  return {
    dryRun: dryRun ?? [],
    gracePeriodSeconds: grace,
    orphanDependents: typed('orphanDependents', (v): v is boolean => typeof v === 'boolean', 'a boolean'),
    propagationPolicy: typed('propagationPolicy', (v): v is string => typeof v === 'string', 'a string'),
    preconditions,
  };
}

/** `pretty`: the first value through strconv.ParseBool; unreadable is not pretty. */
export function prettyOf(query: QueryValues): boolean {
  const value = query.first('pretty');
  return value !== undefined && value !== '' && parseGoBool(value) === true;
}
