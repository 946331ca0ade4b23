// The truth checker against unmodified Contour (contour-runner.ts), a CI budget of seeded schedules:
// leader SIGKILLs and SIGTERMs of Contour's Lease holder, spec changes encoding their generation in
// the route prefix, Envoy, DynamoDB and stream faults; every True judged by what each simulated
// Envoy held (held-content.ts), never by the gateway's own bookkeeping.
import pino from 'pino';
import { runContourTruth } from './contour-runner';
import { generateSchedule } from './schedule';

const SEED = 8001;
const SCHEDULES = 6;
const SHAPE = { envoys: 5, objects: 2, steps: 12, durationMs: 2000 };

describe('truth checker against unmodified Contour (small budget)', () => {
  it('finds no violation over seeded fault schedules with leader kills and step-downs, judged by held content', async () => {
    const report = await runContourTruth({
      schedules: SCHEDULES,
      seed: SEED,
      envoys: SHAPE.envoys,
      objects: SHAPE.objects,
      stepsPerSchedule: SHAPE.steps,
      scheduleDurationMs: SHAPE.durationMs,
      writeBound: 6,
      // A shared, noisy machine: invariant 3 gets a loose wall-clock budget here (as in truth.test.ts).
      recoveryBudgetMs: 30_000,
      logger: pino({ level: process.env['LOG_LEVEL'] ?? 'silent' }),
    });
    const failures = report.schedules.filter((s) => s.violations.length > 0).map((s) => ({ seed: s.seed, steps: s.steps, violations: s.violations }));
    expect(failures).toEqual([]);
    expect(report.schedules).toHaveLength(SCHEDULES);
    // The run did something: every final True of every object in every schedule was judged against
    // every Envoy's held content.
    expect(report.trueWritesChecked).toBeGreaterThanOrEqual(SCHEDULES * SHAPE.objects);
    expect(report.clientContentChecked).toBeGreaterThanOrEqual(SCHEDULES * SHAPE.objects * SHAPE.envoys);
    // These seeds plan leader kills and step-downs (schedules are pure): both must have hit a holder.
    const planned = Array.from({ length: SCHEDULES }, (_, i) => generateSchedule(SEED + i, { ...SHAPE, leaderChange: true, gatewayKill: false }).steps).flat();
    expect(planned.some((s) => s.step.kind === 'leaderKill') && planned.some((s) => s.step.kind === 'leaderStepDown')).toBe(true);
    expect(report.faultsByKind['leaderKill'] ?? 0).toBeGreaterThan(0);
    expect(report.faultsByKind['leaderStepDown'] ?? 0).toBeGreaterThan(0);
    expect(report.faultsByKind['specChange'] ?? 0).toBeGreaterThan(SCHEDULES);
    expect(report.leaseTransitions).toBeGreaterThan(0);
  }, 240_000);
});
