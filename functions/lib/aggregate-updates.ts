// Applying member updates to lineage aggregate shards: read the shard, apply every update of the
// batch for it in order (each accepted only if its rev is newer), write it back conditional on the
// shard version read. A conflict means another writer changed the shard in between: re-read, re-apply
// (the rev checks make re-applying safe) and retry. One conditional write per shard per batch.
import type { Logger } from 'pino';

import { applyMember, emptyShard, removeMember, type AggregateShard, type AggregateStore, type Member } from '../../common/core';

export type MemberUpdate =
  | { kind: 'set'; lineage: string; shard: number; nodeId: string; member: Member }
  | { kind: 'remove'; lineage: string; shard: number; nodeId: string; rev: number; lastSeenAt: number };

export const MAX_SHARD_WRITE_ATTEMPTS = 10;

export function shardKeyOf(update: { lineage: string; shard: number }): string {
  return `${update.lineage}|${update.shard}`;
}

function applyAll(start: AggregateShard, updates: readonly MemberUpdate[]): { shard: AggregateShard; changed: boolean } {
  let shard = start;
  let changed = false;
  for (const update of updates) {
    const result = update.kind === 'set' ? applyMember(shard, update.nodeId, update.member) : removeMember(shard, update.nodeId, update.rev, update.lastSeenAt);
    shard = result.shard;
    changed ||= result.changed;
  }
  return { shard, changed };
}

/** Applies the updates of one shard; returns whether the stored shard changed. Throws after MAX attempts. */
export async function updateShard(store: AggregateStore, lineage: string, shardIndex: number, updates: readonly MemberUpdate[], logger: Logger): Promise<boolean> {
  for (let attempt = 1; attempt <= MAX_SHARD_WRITE_ATTEMPTS; attempt++) {
    const read = await store.getShard(lineage, shardIndex);
    if (read.status === 'corrupt') {
      // Rebuilt from scratch by resync; until then, updates start from an empty shard written over it.
      logger.error({ lineage, shard: shardIndex, reason: read.error }, 'aggregate shard is corrupt; replacing it (resync restores members)');
    }
    const start = read.status === 'found' ? read.value : { ...emptyShard(lineage, shardIndex), v: read.status === 'corrupt' ? (read.rev ?? 0) : 0 };
    const { shard, changed } = applyAll(start, updates);
    if (!changed) return false;
    const expected = read.status === 'missing' ? undefined : read.status === 'found' ? read.value.v : read.rev;
    const outcome = await store.putShard(shard, expected);
    if (outcome === 'written') return true;
    logger.debug({ lineage, shard: shardIndex, attempt }, 'shard changed concurrently; retrying');
    // Concurrent invocations (several stream shards) touch the same aggregate shards: back off with
    // jitter so they do not keep colliding in lockstep.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
  }
  throw new Error(`aggregate shard ${lineage}/${shardIndex}: still conflicting after ${MAX_SHARD_WRITE_ATTEMPTS} attempts`);
}
