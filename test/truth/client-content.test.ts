// The content check of invariant 1 (client-content.ts) on hand-made client views: each rule must be
// able to fail.
import { checkClientContent, stampedGeneration, type ClientUnderCheck, type RoutableView } from './client-content';
import type { ConditionWrite } from './observer';

const X = 'projectcontour.io/HTTPProxy/default/sample-0';
const PREFIX = 'projectcontour.io/HTTPProxy/default/';
const trueAt = (at: number, generation: number): ConditionWrite => ({ name: 'sample-0', at, generation, condition: { status: 'True', reason: 'Programmed', message: '', observedGeneration: generation } });
const complete = (generation: number, clusters: string[]): RoutableView => ({ complete: true, clusters, generation });
const incomplete = (missing: string): RoutableView => ({ complete: false, clusters: [], generation: undefined, missing });

/** A client whose dumps are `timeline` (time → view), live throughout. */
function client(timeline: Array<[number, RoutableView]>, extra: Partial<ClientUnderCheck> = {}): ClientUnderCheck {
  return {
    nodeId: 'core-0',
    client: 'grpc-core/test',
    object: X,
    liveAt: () => true,
    viewsBetween: (from, to) => {
      const inForce = timeline.filter(([at]) => at <= from).at(-1);
      return [...(inForce ? [inForce[1]] : []), ...timeline.filter(([at]) => at > from && at <= to).map(([, view]) => view)];
    },
    ...extra,
  };
}

const clusters: Record<number, string[]> = { 1: ['default/app-0/8080'], 2: ['default/app-0-canary/8080'], 3: ['default/app-0/8080'] };
const run = (writes: ConditionWrite[], clients: ClientUnderCheck[]) =>
  checkClientContent(writes, { clients, sourcePrefix: PREFIX, expectedClusters: (_object, generation) => clusters[generation], slackMs: 100 });

it('flags a True while the client cannot route the generation yet (the new cluster not held)', () => {
  const timeline: Array<[number, RoutableView]> = [[0, complete(1, clusters[1] ?? [])], [900, incomplete('cluster default/app-0-canary/8080 not held (REQUESTED)')], [1500, complete(2, clusters[2] ?? [])]];
  const result = run([trueAt(1000, 2)], [client(timeline)]);
  expect(result.checked).toBe(1);
  expect(result.violations.map((v) => v.detail)).toEqual([expect.stringContaining('core-0 (grpc-core/test) could not route (cluster default/app-0-canary/8080 not held (REQUESTED))')]);
  expect(result.violations[0]).toMatchObject({ invariant: 'I1-client-content', known: false });
  // Once it routes G, the same write at that time is fine.
  expect(run([trueAt(1600, 2)], [client(timeline)]).violations).toEqual([]);
});

it('a route of an older generation, or one to the wrong cluster, is not the generation', () => {
  expect(run([trueAt(1000, 2)], [client([[0, complete(1, clusters[1] ?? [])]])]).violations[0]?.detail).toContain('held a route at generation 1');
  expect(run([trueAt(1000, 2)], [client([[0, complete(2, ['default/app-0/8080'])]])]).violations[0]?.detail).toContain('not to default/app-0-canary/8080');
});

it('a client already on a later generation is judged by that generation\'s spec; a dump up to one slack late counts', () => {
  expect(run([trueAt(1000, 2)], [client([[0, complete(3, clusters[3] ?? [])]])]).violations).toEqual([]);
  expect(run([trueAt(1000, 2)], [client([[0, incomplete('…')], [1050, complete(2, clusters[2] ?? [])]])]).violations).toEqual([]);
  expect(run([trueAt(1000, 2)], [client([[0, incomplete('…')], [1150, complete(2, clusters[2] ?? [])]])]).violations).toHaveLength(1);
});

it('skips clients the system need not count, marks the join race as known, and reads stamps', () => {
  const never: Array<[number, RoutableView]> = [[0, incomplete('nothing')]];
  expect(run([trueAt(1000, 2)], [client(never, { liveAt: () => false })])).toEqual({ violations: [], checked: 0 });
  expect(run([trueAt(1000, 2)], [client(never, { joinedRecently: () => true })]).violations[0]?.known).toBe(true);
  expect(run([trueAt(1000, 2)], [client(never, { object: `${PREFIX}sample-1` })]).checked).toBe(0);
  expect(stampedGeneration([`${X}@3`, `${X}@12`, `${PREFIX}sample-10@40`, 'junk'], X)).toBe(12);
});
