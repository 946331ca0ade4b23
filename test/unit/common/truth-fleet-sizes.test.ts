// The truth checker's fleet sizes (test/truth/fleet-sizes.ts): a run cycles through them on its
// one system, one block of schedules per size.
import { fleetSizeOf } from '../../truth/fleet-sizes';

test.each<[string, { envoys: number; fleetSizes?: number[]; fleetSizeEvery?: number }, number[]]>([
  ['no sizes: the fleet size throughout', { envoys: 6 }, [6, 6, 6, 6]],
  ['an empty list: the fleet size', { envoys: 6, fleetSizes: [] }, [6, 6, 6]],
  ['blocks of 2, cycling', { envoys: 6, fleetSizes: [6, 12, 24], fleetSizeEvery: 2 }, [6, 6, 12, 12, 24, 24, 6, 6]],
  ['blocks of 10 by default', { envoys: 3, fleetSizes: [3, 9] }, [...Array<number>(10).fill(3), 9]],
  ['a block size below 1 counts as 1', { envoys: 3, fleetSizes: [3, 4], fleetSizeEvery: 0 }, [3, 4, 3]],
])('%s', (_name, options, expected) => {
  expect(expected.map((_, index) => fleetSizeOf(options, index))).toEqual(expected);
});
