// Envoy states shaped like the ones the gateway writes when an Envoy reaches a change's watermark:
// four types subscribed, sent and ACKed on one lineage, the four ACK events carried in the state
// (docs/GATEWAY.md, "The event log"). Built with the core's own transitions so the item is the size
// and shape of a real one (~1.3 KB), not a stand-in. Used by bench/write-ceiling.ts.
import {
  applyAck,
  applySent,
  applySubscribe,
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  newEnvoyState,
  RDS_TYPE_URL,
  toCarriedEvent,
  type EnvoyState,
} from '../../common/core';

const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL] as const;

/** Event-log retention the gateway stamps on carried events (7 days, in epoch seconds from `now`). */
const EVENT_TTL_SECONDS = 7 * 24 * 3600;

export interface CeilingStateOptions {
  /** Envoys (one state each). */
  count: number;
  /** Node ids are `<prefix>-<i>`: distinct per run, so every write creates its item (rev 1). */
  nodeIdPrefix: string;
  lineage: string;
  /** Gateway seq of the first type's response; the next types follow (seq + 1, ...). */
  seq: number;
  now: number;
}

/** One state per Envoy, each at rev 1 (a first write: the store's condition is "no item yet"). */
export function ceilingStates(options: CeilingStateOptions): EnvoyState[] {
  const states: EnvoyState[] = [];
  for (let index = 0; index < options.count; index++) {
    const nodeId = `${options.nodeIdPrefix}-${index}`;
    const at = options.now + index;
    let state = newEnvoyState({ identity: { nodeId, cluster: 'ingress', metadata: { zone: index % 2 === 0 ? 'a' : 'b' } }, group: 'ingress', lineage: options.lineage, now: at });
    const carried = TYPES.map((typeUrl, offset) => {
      const version = { lineage: options.lineage, seq: options.seq + offset };
      state = applySubscribe(state, { typeUrl, lineage: options.lineage, now: at });
      state = applySent(state, { typeUrl, version, now: at });
      state = applyAck(state, { typeUrl, version, now: at });
      return toCarriedEvent({ nodeId, outcome: 'ACK', lineage: options.lineage, seq: version.seq, typeUrl, at, ttl: Math.floor(at / 1000) + EVENT_TTL_SECONDS });
    });
    states.push({ ...state, programmedThrough: options.seq + TYPES.length - 1, incarnation: 1, unlogged: carried, rev: 1 });
  }
  return states;
}
