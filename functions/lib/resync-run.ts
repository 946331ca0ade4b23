// The resync function (docs/CONVERGENCE.md, "Drift and resync"): the aggregates are a cache of the
// ENVOY STATE items, so they can always be rebuilt from them. Resync reads every state (the sparse
// state index: O(fleet), but only on this schedule), recomputes each shard's members, and fixes any
// shard that differs: a member whose recomputed rev is >= the stored one replaces it; a stored member
// with a newer rev (written by the stream since the scan) is kept; a member whose state no longer
// exists is dropped. Writes are conditional on the shard version, so resync never loses a concurrent
// stream update. Then every pending generation is re-evaluated.
import { deletedMember, emptyShard, memberFromEnvoyState, memberOf, recount, shardOf, type AggregateShard, type Member } from '../../common/core';
import { iteratePages } from '../../common/store';
import type { ConvergenceDeps } from './convergence-batch';
import { evaluateAll, pendingOn } from './evaluate';
import { pruneLineageRegistry } from './registry-prune';

export interface ResyncReport {
  states: number;
  corruptStates: number;
  shardsChecked: number;
  shardsFixed: number;
  membersFixed: number;
  evaluated: number;
  /** Lineages dropped from the registry: silent for PRUNE_AFTER_TTLS × TTL and no live member left. */
  lineagesPruned: number;
  failed: number;
}

const MAX_ATTEMPTS = 10;

function sameMember(a: Member | undefined, b: Member | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The shard as it should be, given the stored one and the members recomputed from states. */
export function reconcileShard(
  stored: AggregateShard,
  rebuilt: ReadonlyMap<string, Member>,
  stateExists: ReadonlySet<string>,
  /** Members to leave as stored: their state exists but the (eventually consistent) scan missed it. */
  keep: ReadonlySet<string> = new Set(),
): { shard: AggregateShard; fixed: number } {
  const members: Record<string, Member> = {};
  let fixed = 0;
  for (const [nodeId, member] of Object.entries(stored.members)) {
    const fresh = rebuilt.get(nodeId);
    if (keep.has(nodeId)) {
      members[nodeId] = member;
    } else if (fresh !== undefined) {
      // A state re-created after its deletion restarts its rev; it was seen later than the tombstone.
      if (fresh.r >= member.r || (member.deleted === true && fresh.s > member.s)) {
        if (!sameMember(fresh, member)) fixed++;
        members[nodeId] = fresh;
      } else {
        members[nodeId] = member;
      }
    } else if (member.gone === true && stateExists.has(nodeId)) {
      members[nodeId] = member; // moved to another lineage: keep the tombstone
    } else if (stateExists.has(nodeId)) {
      // The state exists on another lineage now but this shard never got the tombstone.
      members[nodeId] = { ...member, gone: true, live: false };
      fixed++;
    } else if (member.deleted === true) {
      members[nodeId] = member;
    } else {
      // State deleted: a tombstone, never a removal (members of a lineage only grow: the denominator
      // check compares their number with the gateway's envoysRecorded).
      members[nodeId] = deletedMember(member.r, member.s, member.k ?? 1);
      fixed++;
    }
  }
  for (const [nodeId, member] of rebuilt) {
    if (memberOf(stored, nodeId) === undefined) {
      members[nodeId] = member;
      fixed++;
    }
  }
  const counts = recount(members);
  const countsDrift = JSON.stringify(Object.entries(counts.counts).sort()) !== JSON.stringify(Object.entries(stored.counts).sort()) || counts.live !== stored.live;
  if (fixed === 0 && !countsDrift) return { shard: stored, fixed: 0 };
  return { shard: { ...stored, v: stored.v + 1, members, ...counts }, fixed: Math.max(fixed, 1) };
}

/** Lineages with a live member among the states rebuilt ("lineage|shard" → members): resync keeps them. */
function lineagesWithLiveMembers(rebuilt: ReadonlyMap<string, ReadonlyMap<string, Member>>): Set<string> {
  const live = new Set<string>();
  for (const [key, members] of rebuilt) {
    if ([...members.values()].some((member) => member.live)) live.add(key.slice(0, key.lastIndexOf('|')));
  }
  return live;
}

export async function runResync(deps: ConvergenceDeps): Promise<ResyncReport> {
  const report: ResyncReport = { states: 0, corruptStates: 0, shardsChecked: 0, shardsFixed: 0, membersFixed: 0, evaluated: 0, lineagesPruned: 0, failed: 0 };
  const rebuilt = new Map<string, Map<string, Member>>(); // "lineage|shard" → members
  const stateExists = new Set<string>();
  const lineages = new Set(Object.keys((await deps.aggregates.getLineageRegistry()).lineages));
  const states = iteratePages(
    (cursor) => deps.store.listEnvoyStates(cursor === undefined ? {} : { cursor }),
    (corrupt) => (report.corruptStates += corrupt.length),
  );
  for await (const state of states) {
    {
      report.states++;
      stateExists.add(state.nodeId);
      lineages.add(state.lineage);
      const key = `${state.lineage}|${shardOf(state.nodeId, deps.shardCount)}`;
      const members = rebuilt.get(key) ?? new Map<string, Member>();
      members.set(state.nodeId, memberFromEnvoyState(state, deps.requiredTypeUrls ?? []));
      rebuilt.set(key, members);
    }
  }
  for (const lineage of lineages) {
    for (let shardIndex = 0; shardIndex < deps.shardCount; shardIndex++) {
      const fresh = rebuilt.get(`${lineage}|${shardIndex}`) ?? new Map<string, Member>();
      report.shardsChecked++;
      try {
        for (let attempt = 1; ; attempt++) {
          const read = await deps.aggregates.getShard(lineage, shardIndex);
          if (read.status === 'missing' && fresh.size === 0) break;
          const stored = read.status === 'found' ? read.value : { ...emptyShard(lineage, shardIndex), v: read.status === 'corrupt' ? (read.rev ?? 0) : 0 };
          // A corrupt shard is replaced wholesale by the rebuilt one.
          const base = read.status === 'corrupt' ? { ...stored, members: {}, counts: {}, live: 0 } : stored;
          const keep = new Set<string>();
          for (const nodeId of Object.keys(base.members)) {
            if (fresh.has(nodeId) || stateExists.has(nodeId)) continue;
            // The scan reads an eventually consistent index: confirm before dropping a member.
            const current = await deps.store.getEnvoyState(nodeId);
            if (current.status !== 'missing') keep.add(nodeId);
          }
          const { shard, fixed } = reconcileShard(base, fresh, stateExists, keep);
          if (fixed === 0 && read.status !== 'corrupt') break;
          const expected = read.status === 'missing' ? undefined : read.status === 'found' ? read.value.v : read.rev;
          if ((await deps.aggregates.putShard(shard, expected)) === 'written') {
            report.shardsFixed++;
            report.membersFixed += fixed;
            deps.logger.warn({ lineage, shard: shardIndex, membersFixed: fixed }, 'aggregate shard drift fixed');
            break;
          }
          if (attempt >= MAX_ATTEMPTS) throw new Error(`shard ${lineage}/${shardIndex} kept changing`);
        }
      } catch (error) {
        report.failed++;
        deps.logger.error({ lineage, shard: shardIndex, err: error }, 'resync of shard failed');
      }
    }
  }
  try {
    report.lineagesPruned = (await pruneLineageRegistry(deps, lineagesWithLiveMembers(rebuilt))).length;
  } catch (error) {
    report.failed++;
    deps.logger.error({ err: error }, 'pruning the lineage registry failed');
  }
  const candidates = await pendingOn(deps, lineages);
  const { failed } = await evaluateAll(deps, candidates);
  report.evaluated = candidates.length - failed.size;
  report.failed += failed.size;
  return report;
}
