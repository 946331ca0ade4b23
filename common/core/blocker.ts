// Why an Envoy keeps an object generation from counting as programmed (docs/CONVERGENCE.md). One
// definition: the schema below; the type is inferred from it, and the stored decision's blockers
// (stored-decision.ts) are the same schema with the shorter message bound they are stored with.
import { z } from 'zod';
import { MAX_BLAMED, MAX_BLAMED_NAME_LENGTH } from './nack-blame';
import { MAX_STORED_MESSAGE_LENGTH } from './record-fields';

const count = z.number().int().nonnegative();
const epochMs = z.number().int().nonnegative();

/**
 * The blocker schema with NACK messages of at most `maxMessageLength` characters.
 * `nacked`: the Envoy rejected a response, and the rejection is this object's (its blame names the
 * object) or nobody's in particular (no blame): Rejected. `blocked`: every NACK holding the Envoy back
 * blames other objects only; the object's change is caught in a response the Envoy rejected because of
 * them (docs/CONVERGENCE.md, "NACK attribution"). Both keep the object from counting as programmed.
 */
export function blockerSchema(maxMessageLength: number) {
  /** A NACK as a blocker carries it: `objects`/`resources` are its blame when it has one (NackBlame). */
  const blockingNacks = z.array(
    z.object({
      typeUrl: z.string(),
      seq: count,
      message: z.string().max(maxMessageLength),
      at: epochMs,
      objects: z.array(z.string()).max(MAX_BLAMED).optional(),
      resources: z.array(z.string().max(MAX_BLAMED_NAME_LENGTH)).max(MAX_BLAMED).optional(),
    }),
  );
  return z.discriminatedUnion('reason', [
    z.object({ nodeId: z.string(), reason: z.literal('nacked'), nacks: blockingNacks }),
    z.object({ nodeId: z.string(), reason: z.literal('blocked'), nacks: blockingNacks }),
    z.object({
      nodeId: z.string(),
      reason: z.literal('stuck'),
      typeUrls: z.array(z.string()),
      since: epochMs,
      /** Of typeUrls, those waiting for the Envoy to ask for a name its accepted config references (a reference hold), not for an answer. */
      unrequested: z.array(z.string()).optional(),
    }),
    z.object({ nodeId: z.string(), reason: z.literal('noWatermark'), lineages: z.array(z.string()) }),
    z.object({ nodeId: z.string(), reason: z.literal('pending'), typeUrls: z.array(z.string()) }),
  ]);
}

/** Blockers as convergence computes them: NACK messages as the Envoy state stores them. */
export const BlockerSchema = blockerSchema(MAX_STORED_MESSAGE_LENGTH);
export type Blocker = z.infer<typeof BlockerSchema>;
export type BlockingNack = Extract<Blocker, { reason: 'nacked' }>['nacks'][number];
export type NackBlocker = Extract<Blocker, { reason: 'nacked' | 'blocked' }>;

export type StuckBlocker = Extract<Blocker, { reason: 'stuck' }>;

/** The stuck blocker; `unrequested` (reference holds among `typeUrls`) is left out when empty. */
export function stuckBlocker(nodeId: string, typeUrls: string[], since: number, unrequested: readonly string[]): StuckBlocker {
  return { nodeId, reason: 'stuck', typeUrls, since, ...(unrequested.length === 0 ? {} : { unrequested: [...unrequested] }) };
}

/** A blocker made of unresolved NACKs (`nacked` or `blocked`: convergence nackBlocker decides which). */
export function isNackBlocker(blocker: Blocker): blocker is NackBlocker {
  return blocker.reason === 'nacked' || blocker.reason === 'blocked';
}
