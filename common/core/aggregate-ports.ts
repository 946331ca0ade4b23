// Port for the convergence aggregates (docs/CONVERGENCE.md): lineage shards, the lineage registry,
// the pending index and decisions. common/store/aggregates.ts implements it for DynamoDB.
import type { AggregateShard } from './aggregate-shard';
import type { Decision } from './stored-decision';
import type { ObjectRef } from './identity';
import type { Cursor, ItemRead, Page, PageRequest } from './ports';
import type { TableClock } from './table-clock';
import type { Lineage } from './version';

/** Known lineages and their last heartbeat (epoch ms): the small set evaluation reads shards of. */
export interface LineageRegistry {
  v: number;
  lineages: Record<Lineage, number>;
  /** The readers' table clock, advanced by the expire function (table-clock.ts); absent until its first tick. */
  clock?: TableClock;
}

/** An object generation waiting for a decision on one lineage, keyed by its watermark seq there. */
export interface PendingEntry {
  lineage: Lineage;
  seq: number;
  object: ObjectRef;
  generation: number;
}

export type OptimisticWrite = 'written' | 'conflict';

export interface AggregateStore {
  /** Every shard of a lineage (one Query). Corrupt shards are reported, not thrown. */
  getLineageShards(lineage: Lineage): Promise<{ shards: AggregateShard[]; corrupt: { shard: string; error: string }[] }>;
  getShard(lineage: Lineage, shard: number): Promise<ItemRead<AggregateShard>>;
  /** Writes iff the stored `v` equals `expectedV` (undefined: iff absent). */
  putShard(shard: AggregateShard, expectedV: number | undefined): Promise<OptimisticWrite>;
  getLineageRegistry(): Promise<LineageRegistry>;
  putLineageRegistry(registry: LineageRegistry, expectedV: number | undefined): Promise<OptimisticWrite>;
  putPending(entry: PendingEntry): Promise<void>;
  deletePending(entry: PendingEntry): Promise<void>;
  listPending(lineage: Lineage, page?: PageRequest): Promise<Page<PendingEntry> & { nextCursor?: Cursor }>;
  /**
   * Stores the decision on the OBJECT generation item iff it exists and its stored decision is not
   * from a newer snapshot (evaluatedRev). 'missing': no such item; 'stale': a newer one is stored.
   */
  writeDecision(ref: ObjectRef, generation: number, decision: Decision): Promise<'written' | 'stale' | 'missing'>;
}
