// Field schemas shared by the records of the model (Envoy state, events, object generations, lineage
// state, aggregate shards). Times are epoch milliseconds; seqs and generations stay below 2^53.
import { z } from 'zod';
import { isValidTypeUrl } from './type-urls';
import { isValidLineage } from './version';

/** Longest accepted Envoy node id (bounds key size; DynamoDB's partition key limit is 2048 bytes). */
export const MAX_NODE_ID_LENGTH = 1024;
/** Longest stored message (NACK text), in characters; writers truncate to MAX_MESSAGE_BYTES first. */
export const MAX_STORED_MESSAGE_LENGTH = 8192;

export const seqSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export const epochMsSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export const lineageSchema = z.string().refine(isValidLineage, { message: 'invalid lineage' });
export const typeUrlSchema = z.string().refine(isValidTypeUrl, { message: 'invalid type URL' });
export const nodeIdSchema = z.string().min(1).max(MAX_NODE_ID_LENGTH);
export const messageSchema = z.string().max(MAX_STORED_MESSAGE_LENGTH);
export const generationSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
