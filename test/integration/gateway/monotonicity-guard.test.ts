// The provenance monotonicity guard (ProvenanceWatermarks.regressionOf, docs/PROVENANCE.md §6) as
// pure logic: which upstream responses may not be given a seq on a lineage that holds watermarks.
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, type LineageState, type ObjectRef } from '../../../common/core';
import { packAny, provenanceMetadata } from '../../../common/xds';
import type { UpstreamContent } from '../../../xds-gateway/relay/relay-group';
import { lineageStateFor, recordTypeChange } from '../../../xds-gateway/tracking/lineage-mirror';
import { ProvenanceWatermarks } from '../../../xds-gateway/tracking/provenance-watermarks';
import type { Recorder } from '../../../xds-gateway/tracking/recorder';

const LINEAGE = 'gw.boot.edge';
const APP: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'app' };
const app = (generation: number): string => `projectcontour.io/HTTPProxy/default/app@${generation}`;
const other = (generation: number): string => `projectcontour.io/HTTPProxy/default/other@${generation}`;

function stamped(typeUrl: string, name: string, sources: string[]): { name: string; value: Buffer } {
  const message = typeUrl === RDS_TYPE_URL ? { name, virtual_hosts: [{ name: `${name}-vh`, domains: ['*'], metadata: provenanceMetadata(sources) }] } : { name, metadata: provenanceMetadata(sources) };
  return { name, value: Buffer.from(packAny(typeUrl, message).value) };
}

/** A ProvenanceWatermarks whose lineage `LINEAGE` holds W(app, 2) (CDS, LDS and RDS all name app@2). */
function withWatermark(): { watermarks: ProvenanceWatermarks; recorded: Array<{ ref: ObjectRef; generation: number }> } {
  const recorded: Array<{ ref: ObjectRef; generation: number }> = [];
  const recorder = { enqueueWatermark: (ref: ObjectRef, generation: number) => recorded.push({ ref, generation }) } as unknown as Recorder;
  let state: LineageState = lineageStateFor(LINEAGE, 'edge', 0);
  const watermarks = new ProvenanceWatermarks({ recorder, logger: pino({ level: 'silent' }), clock: { now: () => 1 }, lineageState: () => state });
  let seq = 0;
  for (const typeUrl of [CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL]) {
    seq += 1;
    state = recordTypeChange(state, typeUrl, seq, 1);
    const resources = [stamped(typeUrl, `${typeUrl.slice(-8)}-app`, [app(2)]), stamped(typeUrl, `${typeUrl.slice(-8)}-other`, [other(1)])];
    watermarks.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl, seq, changed: true, upstreamVersion: String(seq), upstreamEpoch: 1, resources, at: 1 });
  }
  return { watermarks, recorded };
}

function content(typeUrl: string, resources: UpstreamContent['resources'], extra: Partial<UpstreamContent> = {}): UpstreamContent {
  return { group: 'edge', lineage: LINEAGE, typeUrl, resources, firstOnReplacementStream: false, changesContent: () => true, ...extra };
}

const cds = (sources: string[][]): UpstreamContent['resources'] => sources.map((list, index) => stamped(CDS_TYPE_URL, `c${index}`, list));

test('the fixture records W(app, 2) on the lineage', () => {
  const { watermarks, recorded } = withWatermark();
  expect(watermarks.recordedGeneration(LINEAGE, APP)).toBe(2);
  expect(recorded).toContainEqual({ ref: APP, generation: 2 });
});

test('a response naming an object below its recorded generation is refused, on any stream', () => {
  const { watermarks } = withWatermark();
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(1)], [other(1)]])))).toMatch(/HTTPProxy\/default\/app at generation 1 after the watermark of generation 2/);
  // One resource still at 2 does not hide another at 1 (the lowest generation counts).
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(2)], [app(1)]])))).toBeDefined();
  expect(watermarks.regressionOf(content(RDS_TYPE_URL, [stamped(RDS_TYPE_URL, 'r', [app(1)])]))).toBeDefined();
});

test('a response at or above every recorded generation passes', () => {
  const { watermarks } = withWatermark();
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(2)], [other(1)]])))).toBeUndefined();
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(3)], [other(1)]]), { firstOnReplacementStream: true }))).toBeUndefined();
  // An object without a watermark here may be at any generation.
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(2)], [`projectcontour.io/HTTPProxy/default/new@1`]])))).toBeUndefined();
});

test('dropping a watermarked object from a type is refused only on the first response of a replacement stream', () => {
  const { watermarks } = withWatermark();
  const withoutApp = cds([[other(1)]]);
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, withoutApp))).toBeUndefined(); // same replica moving on: app deleted
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, withoutApp, { firstOnReplacementStream: true }))).toMatch(/app missing from the first response/);
});

test('an unstamped type is refused when the first response of a replacement stream changes it', () => {
  const { watermarks } = withWatermark();
  const eds = [{ name: 'default/app/8080', value: Buffer.from([]) }];
  expect(watermarks.regressionOf(content(EDS_TYPE_URL, eds, { firstOnReplacementStream: true, changesContent: () => true }))).toMatch(/unstamped/);
  expect(watermarks.regressionOf(content(EDS_TYPE_URL, eds, { firstOnReplacementStream: true, changesContent: () => false }))).toBeUndefined();
  expect(watermarks.regressionOf(content(EDS_TYPE_URL, eds, { firstOnReplacementStream: false, changesContent: () => true }))).toBeUndefined();
});

test('a lineage without watermarks accepts anything (a fresh lineage builds its own)', () => {
  const { watermarks } = withWatermark();
  const fresh = { lineage: 'gw.boot-l1.edge', firstOnReplacementStream: true };
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, cds([[app(1)]]), fresh))).toBeUndefined();
  expect(watermarks.regressionOf(content(EDS_TYPE_URL, [], fresh))).toBeUndefined();
});

test('an undecodable resource does not throw and does not hide a regression elsewhere', () => {
  const { watermarks } = withWatermark();
  const garbage = { name: 'bad', value: Buffer.from([0xff, 0xff, 0xff]) };
  expect(() => watermarks.regressionOf(content(CDS_TYPE_URL, [garbage]))).not.toThrow();
  expect(watermarks.regressionOf(content(CDS_TYPE_URL, [garbage, ...cds([[app(1)]])]))).toBeDefined();
});

test('a resource carried over from the replaced lineage is no appearance: it records no watermark alone, and holds back a newer one while served', () => {
  const recorded: Array<{ ref: ObjectRef; generation: number }> = [];
  const recorder = { enqueueWatermark: (ref: ObjectRef, generation: number) => recorded.push({ ref, generation }) } as unknown as Recorder;
  let state: LineageState = lineageStateFor(LINEAGE, 'edge', 0);
  const watermarks = new ProvenanceWatermarks({ recorder, logger: pino({ level: 'silent' }), clock: { now: () => 1 }, lineageState: () => state });
  const apply = (seq: number, typeUrl: string, resources: Array<{ name: string; value: Buffer }>, inherited?: string[]): void => {
    state = recordTypeChange(state, typeUrl, seq, 1);
    watermarks.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl, seq, changed: true, upstreamVersion: String(seq), upstreamEpoch: 1, resources, ...(inherited === undefined ? {} : { inherited }), at: 1 });
  };
  // The new lineage's first CDS: the old lineage's cluster of app@5, kept because the clients' routes
  // still use it; the new upstream (a replica behind) has nothing of app yet.
  apply(1, CDS_TYPE_URL, [stamped(CDS_TYPE_URL, 'app-old', [app(5)])], ['app-old']);
  expect(recorded).toEqual([]);
  // Its routes arrive at app@4 with their own cluster; the carried-over one still names app@5: mixed.
  apply(2, RDS_TYPE_URL, [stamped(RDS_TYPE_URL, 'routes', [app(4)])]);
  apply(3, CDS_TYPE_URL, [stamped(CDS_TYPE_URL, 'app-new', [app(4)]), stamped(CDS_TYPE_URL, 'app-old', [app(5)])], ['app-old']);
  expect(recorded).toEqual([]);
  // Released: the lineage's own content alone, app@4.
  apply(4, CDS_TYPE_URL, [stamped(CDS_TYPE_URL, 'app-new', [app(4)])]);
  expect(recorded).toEqual([{ ref: APP, generation: 4 }]);
  // Counted as the lineage's own, the carried-over cluster would have recorded W(app, 5) at seq 1.
  const counted: Array<{ ref: ObjectRef; generation: number }> = [];
  const plain = new ProvenanceWatermarks({ recorder: { enqueueWatermark: (ref: ObjectRef, generation: number) => counted.push({ ref, generation }) } as unknown as Recorder, logger: pino({ level: 'silent' }), clock: { now: () => 1 }, lineageState: () => state });
  plain.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 1, changed: true, upstreamVersion: '1', upstreamEpoch: 1, resources: [stamped(CDS_TYPE_URL, 'app-old', [app(5)])], at: 1 });
  expect(counted).toEqual([{ ref: APP, generation: 5 }]);
});
