// The hold a type gets while its subscription lacks a name that the Envoy's ACKed content of a
// referencing type names (a cluster's endpoints, a route's cluster: docs/ARCHITECTURE.md, "Added
// names"). The gateway derives it (xds-gateway/tracking/envoy-tracker.ts, withReferencesChecked) after
// every request and response, from what it knows at that moment; it is not something the Envoy said.
//
// It is a condition, not an event: it holds while a name is missing and ends when none is. Once the
// Envoy subscribes to the missing name, that request's own hold (applyNamesAdded: a response sent after
// it must be ACKed) takes over. The other way a name stops missing is that the referencing type moves
// on: an Envoy applies a CDS response and, before its ACK, asks for the new clusters' endpoints, so for
// a moment the gateway sees the new EDS names next to the old clusters. Waiting there for yet another
// response would wait forever when the versions do not change again.
import type { EnvoyState, TypeState } from './envoy-record';
import type { Lineage } from './version';

function withTypeState(state: EnvoyState, typeUrl: string, type: TypeState): EnvoyState {
  return { ...state, types: { ...state.types, [typeUrl]: type } };
}

/**
 * A name is missing from `typeUrl`'s subscription: the type is behind. A hold already there (its own
 * request's, or an earlier reference hold) stays as it is: either keeps the type behind.
 */
export function applyReferenceMissing(state: EnvoyState, args: { typeUrl: string; lineage: Lineage; now: number }): EnvoyState {
  const type = state.types[args.typeUrl];
  if (type === undefined || type.lineage !== args.lineage || type.namesChange !== undefined) return state;
  return withTypeState(state, args.typeUrl, { ...type, namesChange: { at: args.now, sent: false, reference: true } });
}

/** No name is missing from `typeUrl`'s subscription any more: a reference hold ends; a request's hold stays. */
export function applyReferenceSatisfied(state: EnvoyState, args: { typeUrl: string }): EnvoyState {
  const type = state.types[args.typeUrl];
  if (type?.namesChange?.reference !== true) return state;
  const { namesChange: _namesChange, ...rest } = type;
  return withTypeState(state, args.typeUrl, rest);
}
