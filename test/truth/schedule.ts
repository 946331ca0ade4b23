// Seeded random fault schedules (pure: no I/O, no clock). A schedule is a list of steps, each at an
// offset from the schedule's start; the runner plays them, then heals every fault and checks.
// The same seed always gives the same schedule (mulberry32), so `--seed N` replays it.

export type FaultStep =
  | { kind: 'specChange'; object: number; canary: boolean }
  | { kind: 'ackDelay'; envoy: number; ms: number }
  | { kind: 'nack'; envoy: number; object: number }
  | { kind: 'hang'; envoy: number }
  | { kind: 'heal'; envoy: number }
  | { kind: 'disconnect'; envoy: number }
  | { kind: 'reconnect'; envoy: number }
  | { kind: 'vanish'; envoy: number; silent: boolean }
  | { kind: 'join' }
  | { kind: 'dynamoThrottle'; rate: number }
  | { kind: 'dynamoErrors'; rate: number; afterWrite: boolean }
  | { kind: 'dynamoLatency'; ms: number }
  | { kind: 'dynamoHeal' }
  // Stream delivery faults (infra/local/dynamo/stream-faults.ts), windows like the DynamoDB ones:
  // on until the next dynamoHeal or the heal.
  | { kind: 'streamDuplicate'; rate: number }
  | { kind: 'streamReorder'; rate: number }
  // Control-plane leader change: the leader's pod replaced (Lease released on a graceful stop, or
  // left to expire after a crash), or its Lease renewals refused by the API server for `ms`.
  | { kind: 'leaderKill'; release: boolean }
  | { kind: 'leaderStepDown'; ms: number }
  // A buggy controller rewriting our condition (test/truth/competitor.ts, tamper mode).
  | { kind: 'conditionTamper'; object: number; mode: TamperMode }
  | { kind: 'gatewayKill' }
  | { kind: 'statusStorm'; object: number; ms: number };

/** How the tampering competitor changes our condition (everything else on the object kept). */
export type TamperMode = 'delete' | 'flip' | 'lowerGeneration';
export const TAMPER_MODES: readonly TamperMode[] = ['delete', 'flip', 'lowerGeneration'];

export interface ScheduledStep {
  atMs: number;
  step: FaultStep;
}

export interface Schedule {
  seed: number;
  steps: ScheduledStep[];
}

export interface ScheduleShape {
  /** Envoys in the fleet at the schedule's start (indexes refer to the live fleet list). */
  envoys: number;
  objects: number;
  steps: number;
  /** Steps are spread over this window. */
  durationMs: number;
  leaderChange: boolean;
  /** The gateway runs as a child process that can be SIGKILLed. */
  gatewayKill: boolean;
}

export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generateSchedule(seed: number, shape: ScheduleShape): Schedule {
  const random = mulberry32(seed);
  const int = (below: number): number => Math.floor(random() * below);
  const envoy = (): number => int(shape.envoys);
  const object = (): number => int(shape.objects);
  // Weights: spec changes are what the faults act on, so they dominate.
  const makers: Array<[number, () => FaultStep]> = [
    [6, () => ({ kind: 'specChange', object: object(), canary: random() < 0.5 })],
    [2, () => ({ kind: 'ackDelay', envoy: envoy(), ms: 100 + int(1400) })],
    [2, () => ({ kind: 'nack', envoy: envoy(), object: object() })],
    [1, () => ({ kind: 'hang', envoy: envoy() })],
    [2, () => ({ kind: 'heal', envoy: envoy() })],
    [1, () => ({ kind: 'disconnect', envoy: envoy() })],
    [1, () => ({ kind: 'reconnect', envoy: envoy() })],
    [0.5, () => ({ kind: 'vanish', envoy: envoy(), silent: random() < 0.5 })],
    [0.5, () => ({ kind: 'join' })],
    [1, () => ({ kind: 'dynamoThrottle', rate: 0.1 + random() * 0.3 })],
    [1, () => ({ kind: 'dynamoErrors', rate: 0.05 + random() * 0.2, afterWrite: random() < 0.5 })],
    [0.5, () => ({ kind: 'dynamoLatency', ms: 5 + int(60) })],
    [1, () => ({ kind: 'dynamoHeal' })],
    [0.7, () => ({ kind: 'streamDuplicate', rate: 0.2 + random() * 0.5 })],
    [0.7, () => ({ kind: 'streamReorder', rate: 0.3 + random() * 0.7 })],
    [1, () => ({ kind: 'statusStorm', object: object(), ms: 300 + int(900) })],
    [0.8, () => ({ kind: 'conditionTamper', object: object(), mode: TAMPER_MODES[int(TAMPER_MODES.length)] ?? 'delete' })],
    ...(shape.leaderChange
      ? ([
          [0.3, () => ({ kind: 'leaderKill', release: random() < 0.5 })],
          [0.3, () => ({ kind: 'leaderStepDown', ms: 2500 + int(1000) })],
        ] as Array<[number, () => FaultStep]>)
      : []),
    ...(shape.gatewayKill ? ([[0.6, () => ({ kind: 'gatewayKill' })]] as Array<[number, () => FaultStep]>) : []),
  ];
  const total = makers.reduce((sum, [weight]) => sum + weight, 0);
  const steps: ScheduledStep[] = [];
  for (let index = 0; index < shape.steps; index++) {
    let pick = random() * total;
    let maker = makers[0]?.[1];
    for (const [weight, make] of makers) {
      maker = make;
      pick -= weight;
      if (pick < 0) break;
    }
    if (!maker) throw new Error('no step makers');
    steps.push({ atMs: int(shape.durationMs), step: maker() });
  }
  steps.sort((a, b) => a.atMs - b.atMs);
  return { seed, steps };
}

export function describeStep(step: ScheduledStep): string {
  const { kind, ...rest } = step.step;
  const args = Object.entries(rest).map(([key, value]) => `${key}=${typeof value === 'number' && !Number.isInteger(value) ? value.toFixed(2) : String(value)}`);
  return `+${step.atMs}ms ${kind}${args.length ? ` ${args.join(' ')}` : ''}`;
}
