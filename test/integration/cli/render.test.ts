// Text rendering of the CLI: colour never shifts columns, blockers say who and why, colour only on a TTY.
import { COLOUR, describeBlocker, PLAIN, renderObject, styleFor, table } from '../../../common/cli/render';
import type { ObjectView } from '../../../common/cli/query-client';

describe('CLI rendering', () => {
  it('aligns columns by visible width, with or without colour', () => {
    const plain = table(['A', 'B'], [[PLAIN.green('SYNCED'), 'x'], ['N', 'y']]).split('\n');
    const coloured = table(['A', 'B'], [[COLOUR.green('SYNCED'), 'x'], ['N', 'y']]).split('\n').map((line) => line.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), ''));
    expect(coloured).toEqual(plain);
    expect(plain).toEqual(['A        B', 'SYNCED   x', 'N        y']);
  });

  it('colours only a terminal without NO_COLOR', () => {
    expect(styleFor({ isTTY: true }, {})).toBe(COLOUR);
    expect(styleFor({ isTTY: true }, { NO_COLOR: '1' })).toBe(PLAIN);
    expect(styleFor({ isTTY: false }, {})).toBe(PLAIN);
    expect(styleFor({}, {})).toBe(PLAIN);
  });

  it('describes each kind of blocker with what it takes to act on it', () => {
    const now = 100_000;
    expect(describeBlocker({ nodeId: 'e1', reason: 'nacked', nacks: [{ type: 'CDS', message: 'bad cluster' }] }, now)).toBe('e1: NACKED CDS: bad cluster');
    expect(describeBlocker({ nodeId: 'e2', reason: 'stuck', types: ['RDS', 'LDS'], since: 40_000 }, now)).toBe('e2: STUCK on RDS,LDS (no ACK/NACK for 1m0s)');
    expect(describeBlocker({ nodeId: 'g0', reason: 'stuck', types: ['CDS', 'EDS'], since: 40_000, unrequested: ['EDS'] }, now)).toBe('g0: STUCK on CDS (no ACK/NACK for 1m0s); EDS (names its config references not asked for, 1m0s)');
    expect(describeBlocker({ nodeId: 'e3', reason: 'pending', types: ['EDS'] }, now)).toContain('PENDING EDS');
    expect(describeBlocker({ nodeId: 'e4', reason: 'noWatermark', lineages: ['gw.b.g'] }, now)).toContain('NO WATERMARK yet for its lineage gw.b.g');
  });

  it('shows the object with its condition, counts and blockers', () => {
    const view: ObjectView = {
      object: { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' },
      generation: 3,
      condition: { type: 'EnvoyProgrammed', status: 'False', reason: 'Rejected', message: 'envoy-1 rejected CDS', observedGeneration: 3 },
      programmedAt: null,
      live: { state: 'Rejected', programmed: 4, total: 5, blockers: [{ nodeId: 'envoy-1', reason: 'nacked', nacks: [{ type: 'CDS', message: 'bad' }] }], blockersNotListed: 2, fleetTruncated: false },
    };
    const text = renderObject(view, PLAIN, 0);
    expect(text).toContain('HTTPProxy.projectcontour.io default/web  generation 3');
    expect(text).toContain('EnvoyProgrammed=False reason=Rejected observedGeneration=3');
    expect(text).toContain('4/5 programmed (Rejected)');
    expect(text).toContain('envoy-1: NACKED CDS: bad');
    expect(text).toContain('… and 2 more');
  });
});
