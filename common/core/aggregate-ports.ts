// Port for the convergence aggregates (docs/CONVERGENCE.md): lineage shards, the lineage registry,
// the pending index and decisions. common/store/aggregates.ts implements it for DynamoDB.
import type { AggregateShard } from './aggregate-shard';
import type { Decision } from './stored-decision';
import type { ObjectRef } from './identity';
import type { Cursor, ItemRead, Page, PageRequest } from './ports';
import type { TableClock } from './table-clock';
import type { LineageProgress } from './lineage-progress-item';
import type { LineageProgressRead } from './lineage-progress';
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

/**
 * The lineages' PROGRESS items (lineage-progress-item.ts; docs/ARCHITECTURE.md, "Design: work per
 * change proportional to gateways, not Envoys"). Each item has one writer, its lineage's gateway,
 * whose writes are conditional on `v`; evaluation reads the items of every live lineage at once.
 */
export interface ProgressStore {
  /**
   * Writes iff the stored `v` is `progress.v - 1` (for `progress.v === 1`: iff there is none, or the
   * stored item is corrupt with no numeric `v`, which its one writer could otherwise never follow).
   */
  putProgress(progress: LineageProgress): Promise<OptimisticWrite>;
  /** One lineage's item (strongly consistent): how a writer that lost its `v` (a conflict) learns the stored one. */
  getProgress(lineage: Lineage): Promise<ItemRead<LineageProgress>>;
  /**
   * The items of many lineages (batched reads, unprocessed keys retried), one read per lineage in
   * the order given: `progress` undefined when the item is missing or corrupt (a corrupt one is
   * logged with its key, never thrown).
   */
  getProgresses(lineages: readonly Lineage[]): Promise<LineageProgressRead[]>;
}
