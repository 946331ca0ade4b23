// Which Envoy states still go to the recorder when the gateway publishes PROGRESS and convergence
// decides from it (--state-writes class-changes; docs/ARCHITECTURE.md, "The idea": STATE "written at
// once when the Envoy's class changes … and otherwise at most every --state-refresh-ms").
//
// With PROGRESS_EVALUATION the per-Envoy STATE is no longer on the path from an ACK to a True: the
// lineage's PROGRESS item carries the counts, the denominator and the blockers. What a STATE still
// has to say at once is what a reader of one Envoy must not miss, and what keeps the fleet view's
// shards honest about liveness and blame: a connection starting or ending (status, connectedAt,
// lineage), a NACK appearing, changing or clearing, a wait passing the ACK timeout (STUCK), the set
// of subscribed types and the lineages serving them, and a required type missing. Progress alone
// (programmedThrough and the acked seqs, up or down, a response sent and not yet answered, lastSeenAt)
// waits for the refresh. Down too: a route change that adds a cluster makes every Envoy less
// programmed for a moment (a names change on EDS), and writing that state would put one STATE write
// per Envoy back on every such change, and hold the node's events behind the state's answer hold
// (recorder envoy-state-queue.ts). The recorder stamps incarnations over the states it is handed
// (envoy-count.ts), so a dip it never sees moves no incarnation; nothing on this path reads them
// (the PROGRESS item counts the publisher's own, which sees every state). The ACK/NACK/STUCK events are
// not demoted: the recorder writes the events of a node whose state it was not handed (its orphans) to
// the version log with --event-log-mode chunks (version-log-pipeline.ts; NACKs to the Envoy's own log),
// or as event-log items otherwise (event-log-pipeline.ts), so the log keeps every answer and no stored
// state ever claims an ACK the log lacks.
import { memberFromEnvoyState, stuckTypesAsStored, type EnvoyState, type Member } from '../../../common/core';

/** The gateway's --state-writes modes (ops/config.ts). */
export const STATE_WRITES = ['every', 'class-changes'] as const;
export type StateWrites = (typeof STATE_WRITES)[number];

export interface StateDemotionPolicy {
  /** Longest time a state that only moved progress waits for its write (the fleet view's staleness). */
  refreshMs: number;
  /** The functions' ACK_TIMEOUT_MS: a wait that long is STUCK, a class change. */
  ackTimeoutMs: number;
  /** The functions' REQUIRED_TYPE_URLS (a required type missing blocks, so it is part of the class). */
  requiredTypeUrls: readonly string[];
}

/** What of a state was last handed to the recorder. */
export interface WrittenClass {
  key: string;
  at: number;
}

/**
 * `coalesced`: nothing of the class changed, but the recorder still holds an earlier state of the node
 * unwritten (its answer hold, recorder envoy-state-queue.ts): the newer state replaces it in the same
 * write, and the hold sees the answers. Without it the held state would wait out the whole hold, and
 * the node's ACK events with it.
 */
export type StateWriteReason = 'first' | 'class' | 'refresh' | 'coalesced';

/**
 * The state's class: everything in it a reader must see at once (the header). Two states of one
 * Envoy with the same key differ only in progress.
 */
export function envoyStateClassKey(state: EnvoyState, policy: Pick<StateDemotionPolicy, 'ackTimeoutMs' | 'requiredTypeUrls'>, summary?: Member): string {
  // The PROGRESS publisher summarises every state anyway (records-tee.ts hands its summary over): the
  // blockers do not depend on the incarnation it stamps, so they are the same as summarising here.
  const blockers = (summary ?? memberFromEnvoyState(state, policy.requiredTypeUrls)).b;
  // `w` lists every type waiting for an answer: a change wave adds and removes it on every Envoy, so
  // only the waits past the ACK timeout (stuck, judged at the state's own lastSeenAt as readers do)
  // are part of the class.
  // Called for every state the tracker produces (each response sent, each ACK): a plain string, the
  // blockers serialised only when there are any besides `w` (NACKs, split, missing types are rare).
  let blocked = '';
  if (blockers !== undefined && hasKeyBesides(blockers, 'w')) {
    const { w: _waiting, ...held } = blockers;
    blocked = JSON.stringify(held);
  }
  const subscribed: string[] = [];
  for (const typeUrl of Object.keys(state.types)) {
    const type = state.types[typeUrl] as EnvoyState['types'][string];
    if (type.subscribed) subscribed.push(`${typeUrl}@${type.lineage}`);
  }
  return `${state.lineage}\n${state.status}\n${state.connectedAt}\n${subscribed.sort().join(' ')}\n${blocked}\n${stuckTypesAsStored(state, state.lastSeenAt, policy.ackTimeoutMs).join(' ')}`;
}

function hasKeyBesides(object: object, key: string): boolean {
  for (const own of Object.keys(object)) if (own !== key) return true;
  return false;
}

/** Why the state must be written now, or undefined when it may wait for a later one. */
export function stateWriteReason(last: WrittenClass | undefined, key: string, now: number, refreshMs: number, queuedUnwritten = false): StateWriteReason | undefined {
  if (last === undefined) return 'first';
  if (last.key !== key) return 'class';
  if (now - last.at >= refreshMs) return 'refresh';
  if (queuedUnwritten) return 'coalesced';
  return undefined;
}

export interface StateDemotionStats {
  offered: number;
  written: number;
  demoted: number;
  writtenBy: Record<StateWriteReason, number>;
}

/** Per Envoy, the class last written; says of each tracked state whether the recorder gets it. */
export class StateDemotion {
  private readonly written = new Map<string, WrittenClass>();
  private readonly counters: StateDemotionStats = { offered: 0, written: 0, demoted: 0, writtenBy: { first: 0, class: 0, refresh: 0, coalesced: 0 } };

  constructor(private readonly policy: StateDemotionPolicy) {}

  /**
   * True when the state goes to the recorder (remembered as written); false when it is demoted.
   * `queuedUnwritten`: the recorder holds an earlier state of the node not yet written. `summary`: the
   * state's member summary when the caller has it (envoyStateClassKey).
   */
  admit(state: EnvoyState, now: number, queuedUnwritten = false, summary?: Member): boolean {
    this.counters.offered++;
    const key = envoyStateClassKey(state, this.policy, summary);
    const last = this.written.get(state.nodeId);
    const reason = stateWriteReason(last, key, now, this.policy.refreshMs, queuedUnwritten);
    if (reason === undefined) {
      this.counters.demoted++;
      return false;
    }
    // A coalesced state shares the earlier one's write: its refresh clock does not restart.
    this.written.set(state.nodeId, { key, at: reason === 'coalesced' && last !== undefined ? last.at : now });
    this.counters.written++;
    this.counters.writtenBy[reason]++;
    return true;
  }

  /** The recorder forgot the node: its next state is a first one. */
  forget(nodeId: string): void {
    this.written.delete(nodeId);
  }

  stats(): StateDemotionStats {
    return { ...this.counters, writtenBy: { ...this.counters.writtenBy } };
  }
}
