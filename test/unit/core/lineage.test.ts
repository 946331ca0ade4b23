import fc from 'fast-check';
import {
  applyTypeChange,
  currentTypeVersions,
  currentWatermark,
  newLineageState,
  programmedThrough,
  typeSyncReports,
  typeVersionAt,
  hasReachedWatermark,
  withProgrammedThrough,
  type LineageState,
} from '../../../common/core';
import { parseItem, toLineageStateItem } from '../../../common/store';
import { CDS, EDS, L1, RDS, T0, envoy } from './fixtures';

function start(): LineageState {
  const made = newLineageState({ instanceId: 'gw-a', bootId: 'boot1', group: 'edge', now: T0 });
  if (!made.ok) throw new Error(made.error);
  return made.value;
}

function change(state: LineageState, typeUrls: string[], maxHistory?: number): LineageState {
  const next = applyTypeChange(state, typeUrls, T0 + 1, maxHistory);
  if (!next.ok) throw new Error(next.error);
  return next.value;
}

describe('lineage state', () => {
  it('starts empty with a valid lineage derived from the group', () => {
    expect(start()).toMatchObject({ lineage: L1, currentSeq: 0, typeHistory: {}, historyStart: 0 });
    const odd = newLineageState({ instanceId: 'gw-a', bootId: 'boot1', group: 'Edge Proxies/EU', now: T0 });
    expect(odd.ok && odd.value.lineage).toMatch(/^gw-a\.boot1\.[a-z0-9-]{1,63}$/);
    expect(newLineageState({ instanceId: 'GW A', bootId: 'b', group: 'g', now: T0 }).ok).toBe(false);
  });

  it.each<[string, string[][], number | undefined, Record<string, number[]>, number]>([
    ['one change per seq', [[CDS], [RDS], [CDS]], undefined, { [CDS]: [1, 3], [RDS]: [2] }, 0],
    ['one response changing two types takes one seq', [[CDS, EDS], [RDS]], undefined, { [CDS]: [1], [EDS]: [1], [RDS]: [2] }, 0],
    ['duplicates in one change count once', [[CDS, CDS]], undefined, { [CDS]: [1] }, 0],
    ['trimming moves historyStart past the dropped change', [[CDS], [RDS], [CDS], [CDS]], 2, { [CDS]: [3, 4], [RDS]: [2] }, 2],
  ])('%s', (_name, changes, maxHistory, history, historyStart) => {
    let state = start();
    for (const typeUrls of changes) state = change(state, typeUrls, maxHistory);
    expect(state.typeHistory).toEqual(history);
    expect(state.historyStart).toBe(historyStart);
    expect(state.currentSeq).toBe(changes.length);
    expect(parseItem(JSON.parse(JSON.stringify(toLineageStateItem(state))) as Record<string, unknown>).ok).toBe(true);
  });

  it('refuses an empty change', () => {
    expect(applyTypeChange(start(), [], T0).ok).toBe(false);
  });

  it('current versions and watermark', () => {
    const state = change(change(change(start(), [CDS]), [RDS]), [CDS]);
    expect(currentTypeVersions(state)).toEqual({ [CDS]: 3, [RDS]: 2 });
    expect(currentWatermark(state, T0 + 9)).toEqual({ seq: 3, types: { [CDS]: 3, [RDS]: 2 }, at: T0 + 9 });
  });

  it('trimmed history never makes programmedThrough larger than the full history would (property)', () => {
    const types = [CDS, EDS, RDS];
    fc.assert(
      fc.property(
        fc.array(fc.subarray(types, { minLength: 1 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.nat(45), { minLength: 3, maxLength: 3 }),
        (changes, maxHistory, ackedRaw) => {
          let full = start();
          let trimmed = start();
          for (const typeUrls of changes) {
            full = change(full, typeUrls);
            trimmed = change(trimmed, typeUrls, maxHistory);
          }
          const acked = Object.fromEntries(types.map((t, i) => [t, Math.min(ackedRaw[i]!, full.currentSeq)]));
          const exact = programmedThrough(acked, full.typeHistory, { currentSeq: full.currentSeq });
          const safe = programmedThrough(acked, trimmed.typeHistory, { currentSeq: trimmed.currentSeq, historyStart: trimmed.historyStart });
          expect(safe).toBeDefined();
          expect(safe!).toBeLessThanOrEqual(exact!);
          // And what it claims is true by the full history's definition.
          for (const t of types) expect(acked[t]!).toBeGreaterThanOrEqual(typeVersionAt(full.typeHistory[t], safe!) ?? 0);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('programmedThrough agrees with hasReachedWatermark (property)', () => {
  it('an Envoy has reached W iff programmedThrough >= W.seq', () => {
    const types = [CDS, EDS, RDS];
    fc.assert(
      fc.property(
        fc.array(fc.subarray(types, { minLength: 1 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.option(fc.nat(35), { nil: undefined }), { minLength: 3, maxLength: 3 }),
        fc.nat(35),
        (changes, ackedRaw, markAt) => {
          let lineage = start();
          for (const typeUrls of changes) lineage = change(lineage, typeUrls);
          const k = Math.min(markAt, lineage.currentSeq);
          const typesAtK: Record<string, number> = {};
          for (const t of types) {
            const v = typeVersionAt(lineage.typeHistory[t], k);
            if (v !== undefined) typesAtK[t] = v;
          }
          const watermark = { observable: true as const, lineages: { [L1]: { seq: k, types: typesAtK, at: T0 } } };
          const state = withProgrammedThrough(
            envoy('e', Object.fromEntries(types.map((t, i) => [t, ackedRaw[i] === undefined ? {} : { acked: Math.min(ackedRaw[i]!, lineage.currentSeq) }]))),
            lineage.typeHistory,
            { currentSeq: lineage.currentSeq },
          );
          const through = state.programmedThrough;
          expect(hasReachedWatermark(state, watermark)).toBe(through !== undefined && through >= k);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('typeSyncReports (proxy-status view)', () => {
  const lineage = change(change(change(start(), [CDS]), [RDS]), [CDS]); // CDS current 3, RDS current 2
  const lineages = new Map([[lineage.lineage, lineage]]);
  it.each<[string, ReturnType<typeof envoy>, { typeUrl: string; status: string }[]]>([
    ['synced', envoy('e', { [CDS]: { acked: 3 }, [RDS]: { acked: 2 } }), [{ typeUrl: CDS, status: 'SYNCED' }, { typeUrl: RDS, status: 'SYNCED' }]],
    ['stale and not sent', envoy('e', { [CDS]: { acked: 1, pending: { seq: 3, sentAt: T0 } }, [RDS]: {} }), [{ typeUrl: CDS, status: 'STALE' }, { typeUrl: RDS, status: 'NOT_SENT' }]],
    ['nacked', envoy('e', { [CDS]: { acked: 1, nack: { seq: 3, message: 'bad', at: T0 } } }), [{ typeUrl: CDS, status: 'NACKED' }]],
    ['type never changed on the lineage: any ACK is synced', envoy('e', { [EDS]: { acked: 0 } }), [{ typeUrl: EDS, status: 'SYNCED' }]],
    ['unknown lineage', envoy('e', { [CDS]: { acked: 1, lineage: 'gw-z.b.c' } }), [{ typeUrl: CDS, status: 'UNKNOWN' }]],
    ['unsubscribed types are left out', envoy('e', { [CDS]: { acked: 3 }, [RDS]: { subscribed: false } }), [{ typeUrl: CDS, status: 'SYNCED' }]],
  ])('%s', (_name, state, expected) => {
    const reports = typeSyncReports(state, lineages);
    expect(reports.map((r) => ({ typeUrl: r.typeUrl, status: r.status }))).toEqual(expected.sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : 1)));
  });

  it('carries the NACK message', () => {
    const [report] = typeSyncReports(envoy('e', { [CDS]: { acked: 1, nack: { seq: 3, message: 'bad', at: T0 } } }), lineages);
    expect(report).toEqual({ typeUrl: CDS, status: 'NACKED', acked: 1, current: 3, nackMessage: 'bad' });
  });

  // The fleet-size path writes a state on class changes only: the lineage's PROGRESS item vouches for
  // a member programmed through at least S, so every type whose current version is at most S runs it.
  it('a state behind, vouched by PROGRESS: SYNCED where the current version is within the bound, never over a NACK or another lineage', () => {
    const behind = envoy('e', { [CDS]: { acked: 1, pending: { seq: 3, sentAt: T0 } }, [RDS]: { acked: 1 } });
    const statuses = (vouch: { lineage: string; programmedThroughAtLeast: number } | undefined) =>
      typeSyncReports(behind, lineages, vouch).map((r) => `${r.typeUrl === CDS ? 'CDS' : 'RDS'} ${r.status}${r.fromProgress === true ? ' (progress)' : ''}`);
    expect(statuses(undefined)).toEqual(['CDS STALE', 'RDS NOT_SENT']);
    expect(statuses({ lineage: lineage.lineage, programmedThroughAtLeast: 2 })).toEqual(['CDS STALE', 'RDS SYNCED (progress)']);
    expect(statuses({ lineage: lineage.lineage, programmedThroughAtLeast: 3 })).toEqual(['CDS SYNCED (progress)', 'RDS SYNCED (progress)']);
    expect(statuses({ lineage: 'gw-other.b.c', programmedThroughAtLeast: 9 })).toEqual(['CDS STALE', 'RDS NOT_SENT']);
    const nacked = envoy('e', { [CDS]: { acked: 1, nack: { seq: 3, message: 'bad', at: T0 } } });
    expect(typeSyncReports(nacked, lineages, { lineage: lineage.lineage, programmedThroughAtLeast: 3 }).map((r) => r.status)).toEqual(['NACKED']);
  });
});
