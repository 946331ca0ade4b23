// One Envoy's recent answers from the version log (docs/GATEWAY.md, "The version log"): its
// memberships name the lineages and member indices it answered as, and each lineage's newest chunks
// per type hold those answers among every other member's. The read is bounded (a detail view is one
// Lambda invocation) and, unlike the write path, grows with the fleet: a chunk holds up to 1,000
// members' answers, of which this Envoy's are at most a few.
import { memberAnswerEvent, memberAnswers, type EnvoyEvent, type VersionLog, type VersionLogMember } from '../../common/core';

/** Lineages read per view, the node's most recent memberships first. */
export const MAX_LINEAGES_READ = 3;
/** Chunks read per lineage and type, newest first (one Query; ~3 KB a chunk at most). */
export const MAX_CHUNKS_PER_TYPE = 64;
/** Memberships read per view (one Query). */
const MAX_MEMBERSHIPS_READ = 100;

export type VersionLogReader = Pick<VersionLog, 'listMembers' | 'listChunks'>;

/** The node's answers in its lineages' newest chunks of `typeUrls`, newest first, at most `count`. */
export async function recentVersionLogAnswers(log: VersionLogReader, nodeId: string, typeUrls: readonly string[], count: number): Promise<EnvoyEvent[]> {
  if (count === 0 || typeUrls.length === 0) return [];
  const memberships = (await log.listMembers(nodeId, { limit: MAX_MEMBERSHIPS_READ })).items;
  const byLineage = new Map<string, VersionLogMember[]>();
  for (const membership of [...memberships].sort((a, b) => b.joinedAt - a.joinedAt)) {
    const list = byLineage.get(membership.lineage);
    if (list !== undefined) list.push(membership);
    else if (byLineage.size < MAX_LINEAGES_READ) byLineage.set(membership.lineage, [membership]);
  }
  const reads: Promise<EnvoyEvent[]>[] = [];
  for (const [lineage, members] of byLineage) {
    for (const typeUrl of typeUrls) {
      reads.push(
        log.listChunks(lineage, { typeUrl, fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER }, { descending: true, limit: MAX_CHUNKS_PER_TYPE }).then((page) =>
          members.flatMap((membership) => [...memberAnswers(page.items, lineage, membership.member)].map((answer) => memberAnswerEvent(nodeId, lineage, answer))),
        ),
      );
    }
  }
  const answers = (await Promise.all(reads)).flat();
  return answers.sort((a, b) => b.at - a.at).slice(0, count);
}
