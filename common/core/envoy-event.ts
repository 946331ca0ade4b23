// ACK / NACK / STUCK events of one Envoy: the event as the gateway logs it (`EnvoyEvent`), its compact
// form carried in a STATE or an event-log item (`CarriedEvent`), and the identity readers dedupe by.
import { z } from 'zod';
import { epochMsSchema, lineageSchema, messageSchema, nodeIdSchema, seqSchema, typeUrlSchema } from './record-fields';
import { padKeyNumber } from './sortable-number';
import { KNOWN_TYPE_URLS } from './type-urls';

export type EventOutcome = 'ACK' | 'NACK' | 'STUCK';
export const EVENT_OUTCOMES: readonly EventOutcome[] = ['ACK', 'NACK', 'STUCK'];

/**
 * An ACK/NACK/STUCK event in its compact stored form (it is rewritten with every STATE write that
 * carries it, and DynamoDB bills writes per KB): o outcome, l lineage, q seq, k the short name of a
 * well-known type (CDS, EDS, LDS, RDS, SDS) or u any other type URL (exactly one of k and u), a at,
 * m NACK message, s STUCK sentAt, x ttl (epoch seconds). The node id is the item's.
 */
export const CarriedEventSchema = z
  .object({
    o: z.enum(['ACK', 'NACK', 'STUCK']),
    l: lineageSchema,
    q: seqSchema,
    k: z.enum(['CDS', 'EDS', 'LDS', 'RDS', 'SDS']).optional(),
    u: typeUrlSchema.optional(),
    a: epochMsSchema,
    m: messageSchema.optional(),
    s: epochMsSchema.optional(),
    x: z.number().int().positive(),
  })
  .refine((event) => event.o !== 'NACK' || event.m !== undefined, { message: 'a NACK event must carry the Envoy message', path: ['m'] })
  .refine((event) => (event.k === undefined) !== (event.u === undefined), { message: 'exactly one of k (known type) and u (type URL)', path: ['u'] });
export type CarriedEvent = z.infer<typeof CarriedEventSchema>;

/** Upper bound on events one item may hold (a STATE's `unlogged`, an event-log item); writers stay far below. */
export const MAX_EVENTS_PER_ITEM = 256;

export const envoyEventShape = {
  nodeId: nodeIdSchema,
  outcome: z.enum(['ACK', 'NACK', 'STUCK']),
  lineage: lineageSchema,
  seq: seqSchema,
  typeUrl: typeUrlSchema,
  /** When the gateway saw it (STUCK: when it was detected). */
  at: epochMsSchema,
  /** NACK: the Envoy's error_detail.message, truncated. */
  message: messageSchema.optional(),
  /** STUCK: when the unanswered response was sent. */
  sentAt: epochMsSchema.optional(),
  /** Epoch seconds. */
  ttl: z.number().int().positive(),
};
/** A NACK event carries the Envoy's message (the stored item schemas refine with the same rule). */
export const nackCarriesMessage = (event: { outcome: string; message?: string | undefined }): boolean =>
  event.outcome !== 'NACK' || event.message !== undefined;
export const EnvoyEventSchema = z
  .object(envoyEventShape)
  .refine(nackCarriesMessage, { message: 'a NACK event must carry the Envoy message', path: ['message'] });
export type EnvoyEvent = z.infer<typeof EnvoyEventSchema>;

/**
 * The identity of an event: what the single-event key encodes (`<lineage>#<seq padded>#<typeUrl>#
 * <outcome>`). Two records with the same identity are the same event (a replay, or an event both in a
 * log item and still in a STATE after a crash between the two writes); readers keep one. Its order is
 * the event log's order (lineage, seq, type, outcome).
 */
export function carriedEventIdentity(event: CarriedEvent): string {
  return `${event.l}#${padKeyNumber(event.q)}#${carriedTypeUrl(event)}#${event.o}`;
}

const TYPE_URL_BY_SHORT_NAME: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(KNOWN_TYPE_URLS).map(([url, short]) => [short, url]));

/** The type URL of a carried event (`k` expanded). */
export function carriedTypeUrl(event: Pick<CarriedEvent, 'k' | 'u'>): string {
  return event.k === undefined ? (event.u ?? '') : (TYPE_URL_BY_SHORT_NAME[event.k] ?? event.k);
}

/** `{ k }` for a well-known type URL, `{ u }` for any other (never ambiguous: a bare "CDS" type URL stays in `u`). */
export function carriedTypeFields(typeUrl: string): Pick<CarriedEvent, 'k' | 'u'> {
  const short = KNOWN_TYPE_URLS[typeUrl];
  return short === 'CDS' || short === 'EDS' || short === 'LDS' || short === 'RDS' || short === 'SDS' ? { k: short } : { u: typeUrl };
}
