// Random damage to recorded DynamoDB stream records, for the stream-handler fuzz tests: a mutation
// picks a node anywhere under one record's `dynamodb` (keys, images, attribute values, sequence
// number) or the record itself and deletes it or replaces it with something a corrupt writer, a
// schema change or a truncated event could put there.
import fc from 'fast-check';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Values that are wrong as DynamoDB AttributeValues or as item fields. */
export const oddValueArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, {}, [], '', 0, -1, true, 'x'.repeat(70_000)),
  fc.constantFrom<Json>({ S: 5 }, { N: 'abc' }, { N: '1e400' }, { N: '-0' }, { M: null }, { M: [] }, { L: {} }, { L: [{ Q: 1 }] }, { NULL: false }, { BOOL: 'yes' }, { SS: [] }, { NS: ['x'] }, { B: '!!not base64' }, { S: 'x', N: '1' }),
  fc.constantFrom<Json>({ S: 'ENVOY#' }, { S: 'OBJECT#a/b/c/d' }, { S: 'GEN#x' }, { S: 'STATE' }, { S: 'EnvoyState' }, { S: 'ObjectGeneration' }, { N: '99999999999999999999' }),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

export interface Mutation {
  record: number;
  /** Index into the record's node paths (taken modulo their count). */
  node: number;
  op: 'delete' | 'replace';
  value: Json;
}

export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  record: fc.nat(),
  node: fc.nat(),
  op: fc.constantFrom<Mutation['op']>('delete', 'replace'),
  value: oddValueArb,
});

function paths(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...paths(child, [...prefix, key])]);
}

/** A deep copy of `records` with `mutations` applied (each to one record). */
export function mutate<T>(records: readonly T[], mutations: readonly Mutation[]): T[] {
  const copy = JSON.parse(JSON.stringify(records)) as Json[];
  for (const mutation of mutations) {
    if (copy.length === 0) break;
    const index = mutation.record % copy.length;
    const record = copy[index] as Json;
    const all = paths(record);
    if (all.length === 0) continue;
    const path = all[mutation.node % all.length] as (string | number)[];
    let parent = record as Record<string | number, Json>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
    const last = path[path.length - 1] as string | number;
    if (mutation.op === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      // A copy: the arbitraries hand out shared constants, and a later mutation editing inside an
      // inserted value must not edit the constant (that made cycles across runs: the value contained itself).
      parent[last] = JSON.parse(JSON.stringify(mutation.value)) as Json;
    }
  }
  return copy as T[];
}
