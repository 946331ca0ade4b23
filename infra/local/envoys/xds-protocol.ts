// Which xDS protocol variant a simulated Envoy speaks on a type: State of the World or Delta. Its own
// file: the per-type protocol state (typeState.ts) and the subscription model (subscriptionModel.ts)
// both name it, and typeState.ts imports the subscription model.
export type XdsProtocol = 'sotw' | 'delta';
