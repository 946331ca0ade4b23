// The truth system's timings. Their own file: the system (system.ts) starts the gateway process
// (gateway-process.ts), and both read them.

/** Timing of the system under test. TTL must exceed the gateway's Envoy heartbeat (else idle Envoys expire). */
export interface TruthTimings {
  envoyTtlMs: number;
  ackTimeoutMs: number;
  envoyHeartbeatMs: number;
  expireEveryMs: number;
  batchWindowMs: number;
}
