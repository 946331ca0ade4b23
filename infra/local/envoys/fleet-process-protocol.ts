// The IPC protocol between a parent and its fleet child process (./fleet-process.ts,
// ./fleet-process-child.ts). Both sides validate what the other sends: it is input from another process.
//
//   parent -> child  { type: 'start', spec, logLevel, tapContents? }  build the fleet and connect every Envoy
//   child  -> parent { type: 'started', envoys, startupMs }    Envoys created and connecting
//   parent -> child  { type: 'query', id, query }              a FleetQueries call
//   child  -> parent { type: 'reply', id, ok, result | error }
//   parent -> child  { type: 'close' }                         close the Envoys, then exit 0
// The child also exits when the IPC channel closes ('disconnect': the parent exited or was killed).
import { z } from 'zod';
import { fleetTrueWritesQuerySchema } from '../../../test/truth/fleet-true-writes';
import { fleetSpecSchema } from './fleet-spec';

export const fleetQuerySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('connectedCount') }),
  z.object({ kind: z.literal('configuredCount') }),
  z.object({ kind: z.literal('ackCount'), since: z.number() }),
  z.object({ kind: z.literal('lastAcks'), names: z.array(z.string()), since: z.number() }),
  z.object({
    kind: z.literal('programmedAt'),
    targets: z.array(z.object({ key: z.string(), lineage: z.string(), seqByType: z.record(z.string(), z.number().int().min(0)) })),
    since: z.number(),
  }),
  // Needs the spec's routeWatches; nodeIds: only these Envoys (default: all).
  z.object({ kind: z.literal('routable'), keys: z.array(z.string()), nodeIds: z.array(z.string()).optional() }),
  // Invariant 1 against the provenance stamps the fleet received (needs `tapContents` at start).
  fleetTrueWritesQuerySchema,
]);
export type FleetQuery = z.infer<typeof fleetQuerySchema>;

export const parentMessageSchema = z.discriminatedUnion('type', [
  // tapContents: record the provenance stamps of every response received (the trueWrites query), from before the first stream opens.
  z.object({ type: z.literal('start'), spec: fleetSpecSchema, logLevel: z.string().min(1), tapContents: z.boolean().optional() }),
  z.object({ type: z.literal('query'), id: z.number().int(), query: fleetQuerySchema }),
  z.object({ type: z.literal('close') }),
]);
export type ParentMessage = z.input<typeof parentMessageSchema>;

export const childMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started'), envoys: z.number().int().min(0), startupMs: z.number() }),
  // ok: result is the query's answer; not ok: error says why.
  z.object({ type: z.literal('reply'), id: z.number().int(), ok: z.boolean(), result: z.unknown().optional(), error: z.string().optional() }),
]);
export type ChildMessage = z.input<typeof childMessageSchema>;

export const lastAcksResultSchema = z.object({ lastAck: z.record(z.string(), z.number()), envoysWith: z.record(z.string(), z.number().int().min(0)), acks: z.number().int().min(0) });
export const programmedAtResultSchema = z.object({ lastAck: z.record(z.string(), z.number()), firstAck: z.record(z.string(), z.number()), envoysWith: z.record(z.string(), z.number().int().min(0)) });
export const countResultSchema = z.number().int().min(0);
export const routableResultSchema = z.object({ lastAt: z.record(z.string(), z.number()), envoysWith: z.record(z.string(), z.number().int().min(0)) });
