// The verdict on one object generation. Its own file: the stored decision (stored-decision.ts) and the
// computation (convergence.ts) both name it, and the computation reads records that hold a decision.

/**
 * Invalid: the controller rejected the generation (its status says so), so no Envoy can program it.
 * Blocked: not programmed because Envoys rejected other objects' resources (no NACK is this object's).
 */
export const CONVERGENCE_STATES = ['Programmed', 'Pending', 'Rejected', 'Blocked', 'Stuck', 'NoEnvoys', 'GenerationNotObservable', 'Invalid'] as const;
export type ConvergenceState = (typeof CONVERGENCE_STATES)[number];
