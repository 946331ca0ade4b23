// Node ids and groups are map keys of the table's items (an aggregate shard's members), and a few
// names are special to JavaScript objects. Seen in the hostile-node fuzz: a node `__proto__` on a new
// group was counted on its lineage, but its member never reached the aggregate (the SDK's marshall
// drops the key), so every object stayed Pending "waiting for 1 Envoy state … (not yet in the
// aggregates)" for ever. `constructor` did the same another way (the SDK refused to marshall a map
// holding that key, so the shard write failed), and `toString` read as a member already there.
// Against the whole system: `__proto__` as id or group is refused at the edge by name; names every
// object inherits are Envoys like any other, counted and applied; and a spec change of a tracked
// object still becomes True afterwards.
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { startSampleSystem, type SampleMoves, type SampleSystem } from '../../fuzz/support-sample-moves';
import type { TruthSystem } from '../../truth/system';
import { eventually, lineageState, subscribeAllTypes } from '../gateway/helpers';

let system: TruthSystem;
let ads: grpc.Client;
let moves: SampleMoves;
let samples: SampleSystem | undefined;

beforeAll(async () => {
  samples = await startSampleSystem({ objects: 1, envoys: 1, logger: pino({ level: 'silent' }) });
  ({ system, ads, moves } = samples);
}, 120_000);

afterAll(async () => {
  await samples?.close();
});

const settled = <T>(promise: Promise<T>, ms: number): Promise<T | 'open'> => Promise.race([promise, new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

test.each([
  ['node.id', { id: '__proto__', cluster: 'keys-a' }, /^node\.id is "__proto__", which the table cannot hold as a map key/],
  ['node group', { id: 'keys-b', cluster: '__proto__' }, /^the node group \(node\.cluster\) is "__proto__"/],
])('%s "__proto__" is refused with INVALID_ARGUMENT naming the field', async (_field, node, details) => {
  const reader = subscribeAllTypes(ads, node);
  const status = await settled(reader.status, 10_000);
  if (status === 'open') reader.call.cancel();
  expect(status === 'open' ? 'still open' : { code: grpc.status[status.code], details: status.details }).toMatchObject({ code: 'INVALID_ARGUMENT', details: expect.stringMatching(details) });
});

test('nodes named after inherited properties are counted and applied; the sample still goes True', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('the truth system runs its gateway in this process');
  const readers = ['constructor', 'toString'].map((id) => subscribeAllTypes(ads, { id, cluster: 'keys-inherited' }));
  await Promise.all(readers.map((reader) => reader.next(10_000)));
  const lineage = gateway.relay.control.groups().find((group) => group.group === 'keys-inherited')?.lineage;
  expect(lineage).toBeDefined();
  await eventually(async () => (await lineageState(gateway.store, lineage ?? ''))?.envoysRecorded === 2, 'the lineage counts both nodes', 15_000);
  // Both unprogrammed members hold the change back until they leave: their streams end, they expire.
  for (const reader of readers) reader.call.cancel();
  await moves.changeGoesTrue();
  expect(gateway.recorder.stats().consecutiveFailures).toBe(0);
}, 120_000);
