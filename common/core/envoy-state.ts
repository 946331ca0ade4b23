// Envoy state transitions. Pure and immutable: each returns a new state and never mutates its input.
// They never move an ACKed version backwards within a lineage and never turn a NACK into an ACK.
// `rev` is not touched here: the writer sets `rev = storedRev + 1` when it persists (ports.ts).
import type { EnvoyIdentity } from './identity';
import { programmedThrough, type ProgrammedThroughOptions } from './programmed-through';
import type { TypeHistory } from './type-history';
import { isUnresolvedNack, type EnvoyState, type TypeState } from './envoy-record';
import { truncateUtf8, MAX_MESSAGE_BYTES } from './truncate';
import type { GatewayVersion, Lineage } from './version';

export function newEnvoyState(args: { identity: EnvoyIdentity; group: string; lineage: Lineage; now: number }): EnvoyState {
  return {
    nodeId: args.identity.nodeId,
    cluster: args.identity.cluster,
    group: args.group,
    metadata: args.identity.metadata,
    lineage: args.lineage,
    status: 'CONNECTED',
    connectedAt: args.now,
    lastSeenAt: args.now,
    types: {},
    rev: 0,
  };
}

/**
 * `now` is given for requests from the Envoy (subscribe, ACK, NACK): hearing from it on an open stream
 * proves it is alive, so it is CONNECTED again even if the expire function marked it EXPIRED meanwhile
 * (e.g. the gateway's heartbeats were delayed): it must be back in the denominator at once.
 */
function withType(state: EnvoyState, typeUrl: string, type: TypeState, now: number | undefined): EnvoyState {
  // Per request and response: two literal shapes rather than a conditional spread (cheaper in V8).
  const types = { ...state.types, [typeUrl]: type };
  return now === undefined ? { ...state, types } : { ...state, types, lastSeenAt: Math.max(state.lastSeenAt, now), status: 'CONNECTED' };
}

/** A type state on `lineage` with nothing known yet. */
function freshType(lineage: Lineage): TypeState {
  return { lineage, subscribed: true };
}

/** A (re)connection: a stream from this Envoy opened on the gateway of `lineage`. */
export function applyConnect(state: EnvoyState, args: { lineage: Lineage; now: number }): EnvoyState {
  const reconnect = state.status !== 'CONNECTED';
  return {
    ...state,
    lineage: args.lineage,
    status: 'CONNECTED',
    connectedAt: reconnect ? args.now : state.connectedAt,
    lastSeenAt: Math.max(state.lastSeenAt, args.now),
  };
}

/**
 * An initial request for a type (classifyRequest → 'initial'). `resume` is the gateway version parsed
 * from the request's version_info, i.e. what the Envoy says it already runs (SotW); absent for Delta or
 * a fresh Envoy. We take the Envoy's word over our memory: an Envoy that restarted with the same node
 * id runs nothing, so an older ACK must not keep counting.
 */
export function applySubscribe(
  state: EnvoyState,
  args: { typeUrl: string; lineage: Lineage; resume?: GatewayVersion; now: number },
): EnvoyState {
  const previous = state.types[args.typeUrl];
  const acked = args.resume !== undefined && args.resume.lineage === args.lineage ? args.resume.seq : undefined;
  const type: TypeState = { lineage: args.lineage, subscribed: true };
  if (acked !== undefined) type.acked = acked;
  // A NACK of a version newer than what the Envoy runs is still unresolved: keep its message.
  if (previous?.lineage === args.lineage && isUnresolvedNack(previous.nack, acked)) {
    type.nack = previous.nack;
  }
  // version_info on a new stream does not say the Envoy got names it added before the old one closed.
  if (previous?.lineage === args.lineage && previous.namesChange !== undefined && acked !== undefined) {
    type.namesChange = { at: previous.namesChange.at, sent: false };
  }
  return withType(state, args.typeUrl, type, args.now);
}

/**
 * The Envoy added resource names on a type (see NamesChange). Until it ACKs a response sent after
 * this, the type does not count as at any version. Call it after applying the request's own
 * classification (the request that adds names usually also ACKs the previous response).
 */
export function applyNamesAdded(state: EnvoyState, args: { typeUrl: string; lineage: Lineage; now: number }): EnvoyState {
  const previous = state.types[args.typeUrl];
  const base = previous !== undefined && previous.lineage === args.lineage ? previous : freshType(args.lineage);
  return withType(state, args.typeUrl, { ...base, subscribed: true, namesChange: { at: base.namesChange?.at ?? args.now, sent: false } }, args.now);
}

/**
 * The stream serving a type closed while the Envoy's other streams live on (per-type xDS services).
 * This is not an unsubscription: Envoy keeps using the last config it accepted for the type when a
 * stream ends and re-sends its subscription on the next one (xDS protocol, "the client retains its
 * last-known configuration"), like applyDisconnect for the whole Envoy. So the type keeps counting:
 * its last ACK, and an unresolved NACK still blocks (invariants 1 and 2; truth checker seed 4019,
 * docs/RELIABILITY.md). Nothing is in flight on a closed stream: pending is cleared.
 */
export function applyTypeStreamClosed(state: EnvoyState, args: { typeUrl: string; now: number }): EnvoyState {
  const previous = state.types[args.typeUrl];
  if (previous === undefined) return state;
  const { pending: _pending, ...rest } = previous;
  return withType(state, args.typeUrl, rest, args.now);
}

/** The Envoy stopped subscribing to a type (it dropped the type; a closed stream is applyTypeStreamClosed). */
export function applyUnsubscribe(state: EnvoyState, args: { typeUrl: string; now: number }): EnvoyState {
  const previous = state.types[args.typeUrl];
  if (previous === undefined) return state;
  const { pending: _pending, ...rest } = previous;
  return withType(state, args.typeUrl, { ...rest, subscribed: false }, args.now);
}

/**
 * The gateway sent a response at `version` for a type. If the type was on another lineage, its old
 * seqs mean nothing here and are dropped. `pending.sentAt` keeps the *oldest* unanswered send, so an
 * Envoy that never answers is found stuck even while new versions keep being sent.
 */
export function applySent(state: EnvoyState, args: { typeUrl: string; version: GatewayVersion; now: number }): EnvoyState {
  const previous = state.types[args.typeUrl];
  const base = previous !== undefined && previous.lineage === args.version.lineage ? previous : freshType(args.version.lineage);
  const pending = {
    seq: Math.max(base.pending?.seq ?? 0, args.version.seq),
    sentAt: base.pending?.sentAt ?? args.now,
  };
  const type: TypeState = { ...base, pending };
  if (base.namesChange !== undefined) type.namesChange = { ...base.namesChange, sent: true };
  return withType(state, args.typeUrl, type, undefined);
}

/**
 * The Envoy ACKed `version` (classifyRequest → 'ack'). Ignored if the type is on another lineage (an
 * answer to a stream we have since replaced). acked only grows; a NACK is cleared only by an ACK of
 * the same or a newer version; pending is cleared once the ACK covers it.
 */
export function applyAck(state: EnvoyState, args: { typeUrl: string; version: GatewayVersion; now: number }): EnvoyState {
  const previous = state.types[args.typeUrl];
  if (previous !== undefined && previous.lineage !== args.version.lineage) {
    return { ...state, status: 'CONNECTED', lastSeenAt: Math.max(state.lastSeenAt, args.now) };
  }
  const base = previous ?? freshType(args.version.lineage);
  const acked = Math.max(base.acked ?? args.version.seq, args.version.seq);
  const type: TypeState = { lineage: base.lineage, subscribed: base.subscribed, acked };
  if (isUnresolvedNack(base.nack, acked)) type.nack = base.nack;
  if (base.pending !== undefined && base.pending.seq > acked) type.pending = base.pending;
  // Only a response sent after the names were added can carry them (classifyRequest ties the ACK to
  // the latest response sent).
  if (base.namesChange !== undefined && !base.namesChange.sent) type.namesChange = base.namesChange;
  return withType(state, args.typeUrl, type, args.now);
}

/**
 * The Envoy NACKed `version` (classifyRequest → 'nack'). The ACKed version stays as it was (Envoy keeps
 * running the last good config); the message is truncated so items stay small.
 */
export function applyNack(
  state: EnvoyState,
  args: { typeUrl: string; version: GatewayVersion; message: string; now: number; maxMessageBytes?: number },
): EnvoyState {
  const previous = state.types[args.typeUrl];
  if (previous !== undefined && previous.lineage !== args.version.lineage) {
    return { ...state, status: 'CONNECTED', lastSeenAt: Math.max(state.lastSeenAt, args.now) };
  }
  const base = previous ?? freshType(args.version.lineage);
  const type: TypeState = {
    ...base,
    nack: { seq: args.version.seq, message: truncateUtf8(args.message, args.maxMessageBytes ?? MAX_MESSAGE_BYTES), at: args.now },
  };
  if (base.pending !== undefined && base.pending.seq <= args.version.seq) delete type.pending;
  return withType(state, args.typeUrl, type, args.now);
}

function withoutPending(types: EnvoyState['types']): EnvoyState['types'] {
  const result: EnvoyState['types'] = {};
  for (const [typeUrl, type] of Object.entries(types)) {
    const { pending: _pending, ...rest } = type;
    result[typeUrl] = rest;
  }
  return result;
}

/**
 * All the Envoy's streams closed. Subscriptions and ACKs are kept: Envoy keeps serving its last
 * config when the control plane goes away, so it still counts (and still blocks if behind) until it
 * reconnects or expires. Nothing is in flight any more, so pending is cleared.
 */
export function applyDisconnect(state: EnvoyState, now: number): EnvoyState {
  if (state.status === 'EXPIRED') return { ...state, types: withoutPending(state.types) };
  return { ...state, status: 'DISCONNECTED', lastSeenAt: Math.max(state.lastSeenAt, now), types: withoutPending(state.types) };
}

/** Not seen for the TTL: out of the denominator until it reconnects. */
export function applyExpire(state: EnvoyState): EnvoyState {
  return { ...state, status: 'EXPIRED', types: withoutPending(state.types) };
}

/**
 * The gateway still holds a stream for this Envoy (refreshes lastSeenAt for idle SotW streams). An
 * EXPIRED Envoy with an open stream is alive after all and becomes CONNECTED; a DISCONNECTED one has
 * no stream, so a heartbeat for it is a caller's mistake and is ignored.
 */
export function applyHeartbeat(state: EnvoyState, now: number): EnvoyState {
  if (state.status === 'DISCONNECTED') return state;
  return { ...state, status: 'CONNECTED', lastSeenAt: Math.max(state.lastSeenAt, now) };
}

/**
 * programmedThrough of the state's subscribed types on its lineage; undefined when one is on another
 * lineage. `namesHeld`: how a type with a names hold (NamesChange: names the Envoy added and was not
 * served, or a reference hold: names its config uses that it has not asked for) counts. 'hold': as not
 * ACKed at all (its ACKed version does not cover the whole subscription); 'acked': at its ACKed version
 * (what the Envoy runs of the names it had).
 */
function throughOfTypes(state: EnvoyState, history: TypeHistory, options: ProgrammedThroughOptions, namesHeld: 'hold' | 'acked'): number | undefined {
  const acked: Record<string, number | undefined> = {};
  for (const [typeUrl, type] of Object.entries(state.types)) {
    if (!type.subscribed) continue;
    if (type.lineage !== state.lineage) return undefined;
    acked[typeUrl] = type.namesChange !== undefined && namesHeld === 'hold' ? undefined : type.acked;
  }
  return programmedThrough(acked, history, options);
}

/**
 * What the Envoy's ACKs alone say it is programmed through while a names hold keeps its
 * `programmedThrough` unset: the `t` of a names-hold relief (aggregate-shard.ts NamesHoldRelief),
 * valid only for the objects the held names do not matter to. Undefined when no names hold is what
 * keeps it unset, or the ACKs alone say nothing either.
 */
export function programmedThroughBesidesNamesHolds(state: EnvoyState, history: TypeHistory, options: ProgrammedThroughOptions = {}): number | undefined {
  if (state.programmedThrough !== undefined) return undefined;
  let held = false;
  for (const type of Object.values(state.types)) if (type.subscribed && type.namesChange !== undefined) held = true;
  return held ? throughOfTypes(state, history, options, 'acked') : undefined;
}

/** Recomputes `programmedThrough` on the Envoy's lineage from that lineage's type history. */
export function withProgrammedThrough(state: EnvoyState, history: TypeHistory, options: ProgrammedThroughOptions = {}): EnvoyState {
  const through = throughOfTypes(state, history, options, 'hold');
  // Called after every request and response: most leave it where it was, and the state is returned
  // as it is (no copy; an object rest copy per ACK was a visible share of the gateway's CPU).
  if (through === state.programmedThrough) return state;
  if (through !== undefined) return { ...state, programmedThrough: through };
  const { programmedThrough: _old, ...rest } = state;
  return rest;
}
