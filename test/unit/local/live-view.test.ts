// The live view's rendering (infra/local/system/live-view.ts) as pure functions of a snapshot: the
// terminal region (width, height, banner, order, notes) and the plain progress lines off a terminal.
import type { ObjectView } from '../../../common/cli/query-client';
import { PlainProgress, renderLiveView, summaryLine, truncate, truncateMiddle, wrap, type BannerLine, type LiveSnapshot, type ObjectProgress } from '../../../infra/local/system/live-view';

type Blocker = ObjectView['live']['blockers'][number];

const ESC = String.fromCharCode(27);
const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g');
const visible = (line: string): string => line.replace(ANSI, '');

function view(name: string, options: { generation?: number; state?: string; programmed?: number; total?: number; condition?: 'True' | 'False' | null; blockers?: Blocker[] } = {}): ObjectView {
  const generation = options.generation ?? 1;
  const state = options.state ?? 'Programmed';
  const condition = options.condition === undefined ? (state === 'Programmed' ? 'True' : 'False') : options.condition;
  return {
    object: { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name },
    generation,
    condition: condition === null ? null : { type: 'EnvoyProgrammed', status: condition, reason: state, message: '', observedGeneration: generation },
    programmedAt: null,
    live: { state, programmed: options.programmed ?? 10, total: options.total ?? 10, blockers: options.blockers ?? [], blockersNotListed: 0, fleetTruncated: false },
  };
}

const programmed = (name: string): ObjectProgress => ({ name, generation: 1, view: view(name) });
const catchingUp = (name: string, done = 4): ObjectProgress => ({ name, generation: 1, view: view(name, { state: 'Blocked', programmed: done, blockers: [{ nodeId: 'envoy-9', reason: 'pending', types: ['CDS'] }] }) });
const nacked = (name: string, message: string, nodes = ['envoy-1']): ObjectProgress => ({
  name,
  generation: 2,
  view: view(name, { generation: 2, state: 'Rejected', programmed: 10 - nodes.length, blockers: nodes.map((nodeId) => ({ nodeId, reason: 'nacked' as const, nacks: [{ type: 'CDS', message }] })) }),
});
const stuck = (name: string, nodes: string[]): ObjectProgress => ({
  name,
  generation: 1,
  view: view(name, { state: 'Stuck', programmed: 10 - nodes.length, blockers: nodes.map((nodeId) => ({ nodeId, reason: 'stuck' as const, types: ['CDS'], since: 0 })) }),
});

function snapshot(objects: ObjectProgress[], extra: Partial<LiveSnapshot> = {}): LiveSnapshot {
  return { namespace: 'default', objects, unread: [], listed: true, elapsedMs: 0, ...extra };
}

const BANNER: BannerLine[] = [
  { text: 'xds-programmed is running (200 simulated Envoys + 2 gRPC clients, 50 objects)', essential: true },
  { text: '  components ready in 1.35 s' },
  { text: '  kubeconfig     /tmp/state/kubeconfig' },
  { text: '  query URL      http://127.0.0.1:33369   (Authorization: Bearer 4HcIqx5iC2VXfIfjOi9WaxRZ4b2s3TiH)', essential: true },
  { text: '  metrics URL    http://127.0.0.1:46235/metrics' },
  { text: '  gateway xDS    127.0.0.1:36713' },
  { text: '  control plane  127.0.0.1:42805, 127.0.0.1:44529 (leader: cp-1)' },
  { text: '  DynamoDB       http://127.0.0.1:41231 table xds-programmed' },
  { text: '  env for the CLI and kubectl: source /tmp/state/env.sh', essential: true },
  { text: '  Ctrl-C stops everything.', essential: true },
];

const LONG_NACK = 'Error adding/updating cluster(s) default/app-0/8080: LOAD_BALANCING_POLICY unsupported in this build; the cluster was rejected and the previous CDS version stays in use until a new one arrives';

describe('text fitting', () => {
  it('cuts with an ellipsis, keeps a name\'s start and end, wraps at spaces', () => {
    expect(truncate('abcdefgh', 5)).toBe('abcd…');
    expect(truncate('abc', 5)).toBe('abc');
    expect(truncateMiddle('sample-very-long-name-42', 11)).toBe('sampl…me-42');
    expect(wrap('one two three four', 9, 2)).toEqual(['one two', '  three', '  four']);
    expect(wrap('abcdefghij', 4, 0)).toEqual(['abcd', 'efgh', 'ij']);
  });
});

describe('renderLiveView on a terminal', () => {
  it('keeps every line narrower than the terminal and each object\'s name and verdict', () => {
    const objects = [nacked('sample-0', LONG_NACK, ['envoy-1', 'envoy-2', 'envoy-3']), stuck('sample-1', ['envoy-4', 'envoy-5', 'envoy-6', 'envoy-7']), catchingUp('sample-2'), programmed('sample-3')];
    for (const width of [40, 60, 80, 120, 200]) {
      const lines = renderLiveView(snapshot(objects), { width, height: 40, isTTY: true, banner: BANNER }).map(visible);
      for (const line of lines) expect(Array.from(line).length).toBeLessThan(width);
      for (const [name, verdict] of [['sample-0', 'Rejected'], ['sample-1', 'Stuck'], ['sample-2', 'Blocked'], ['sample-3', 'Programmed']] as const) {
        expect(lines.some((line) => line.startsWith(name) && line.includes(verdict))).toBe(true);
      }
    }
  });

  it('says who an unfinished object waits for', () => {
    const lines = renderLiveView(snapshot([catchingUp('sample-2')]), { width: 120, isTTY: true }).map(visible);
    expect(lines.find((line) => line.startsWith('sample-2'))).toMatch(/ 4\/10 +Blocked +waiting for envoy-9 {2}EnvoyProgrammed=False$/);
  });

  it('wraps a long NACK message instead of cutting it, with the count of NACKing Envoys first', () => {
    const lines = renderLiveView(snapshot([nacked('sample-0', LONG_NACK, ['envoy-1', 'envoy-2', 'envoy-3']), programmed('sample-1')]), { width: 80, height: 30, isTTY: true }).map(visible);
    const at = lines.findIndex((line) => line.startsWith('sample-0'));
    expect(lines[at]).toMatch(/ Rejected +NACK by 3 Envoys \(envoy-1, envoy-2,/);
    // The message goes on onto indented lines; what is shown of it is the message in order.
    const shown = [lines[at] ?? '', lines[at + 1] ?? '', lines[at + 2] ?? ''].join(' ');
    expect(lines[at + 1]).toMatch(/^ {4}\S/);
    expect(shown.replace(/\s+/g, ' ')).toContain('LOAD_BALANCING_POLICY unsupported in this build;');
  });

  it('never draws more lines than the terminal has, keeping the banner\'s essential lines', () => {
    const objects = Array.from({ length: 60 }, (_, index) => (index === 37 ? nacked(`sample-${index}`, 'bad cluster') : index % 2 === 0 ? catchingUp(`sample-${index}`) : programmed(`sample-${index}`)));
    const lines = renderLiveView(snapshot(objects), { width: 80, height: 20, isTTY: true, banner: BANNER }).map(visible);
    expect(lines.length).toBeLessThanOrEqual(19);
    const text = lines.join('\n');
    // The essential banner lines: the token (wrapped, not cut) and env.sh.
    expect(text.replace(/\n\s+/g, ' ')).toContain('Bearer 4HcIqx5iC2VXfIfjOi9WaxRZ4b2s3TiH');
    expect(text).toContain('source /tmp/state/env.sh');
    expect(text).not.toContain('DynamoDB');
    expect(lines.some((line) => line.startsWith('progress: 29/60 programmed, 1 NACKed, 0 stuck, 30 catching up'))).toBe(true);
    // 60 objects: the NACKed one first, then the unfinished ones; the rest counted at the bottom.
    const rows = lines.filter((line) => line.startsWith('sample-'));
    expect(rows[0]).toMatch(/^sample-37 /);
    expect(rows[1]).toMatch(/^sample-0 /);
    expect(lines[lines.length - 1]).toMatch(/^… \d+ more objects not shown \(29 programmed, \d+ not yet\)$/);
  });

  it('shows the whole banner when the terminal has room, and rows by name below 50 objects', () => {
    const lines = renderLiveView(snapshot([programmed('sample-10'), nacked('sample-2', 'x'), programmed('sample-1')]), { width: 120, height: 50, isTTY: true, banner: BANNER }).map(visible);
    for (const line of BANNER) expect(lines).toContain(line.text);
    expect(lines.filter((line) => line.startsWith('sample-')).map((line) => line.split(' ')[0])).toEqual(['sample-1', 'sample-2', 'sample-10']);
  });

  it('says "all programmed" when every object is True at its generation', () => {
    const lines = renderLiveView(snapshot([programmed('sample-0'), programmed('sample-1')]), { width: 80, height: 24, isTTY: true }).map(visible);
    expect(lines[0]).toBe('all programmed: 2/2 objects programmed into every Envoy (10 Envoys)');
    // Programmed in the fleet but the condition is not written yet: not "all programmed".
    const pending: ObjectProgress = { name: 'sample-1', generation: 1, view: view('sample-1', { condition: null }) };
    expect(summaryLine(snapshot([programmed('sample-0'), pending]))).toBe('progress: 1/2 programmed, 0 NACKed, 0 stuck, 1 catching up (10 Envoys)');
  });

  it('shows objects not read yet as such, before anything is known', () => {
    expect(summaryLine(snapshot([], { listed: false }))).toBe('reading the objects in namespace default…');
    const unread: ObjectProgress = { name: 'sample-1', generation: 1, view: undefined };
    const lines = renderLiveView(snapshot([programmed('sample-0'), unread], { unread: ['sample-1'] }), { width: 100, height: 24, isTTY: true }).map(visible);
    expect(lines[0]).toBe('progress: 1/2 programmed, 0 NACKed, 0 stuck, 1 catching up, 1 not read yet (10 Envoys)');
    expect(lines.find((line) => line.startsWith('sample-1'))).toMatch(/reading$/);
  });

  it('uses colour on a terminal and none without it', () => {
    const objects = [nacked('sample-0', 'bad')];
    expect(renderLiveView(snapshot(objects), { width: 80, isTTY: true }).join('\n')).toContain(`${ESC}[31m`);
    expect(renderLiveView(snapshot(objects), { width: 80, isTTY: true, colour: false }).join('\n')).not.toContain(ESC);
  });
});

describe('PlainProgress (not a terminal)', () => {
  it('prints one plain summary line per change, at most one per interval, "all programmed" at once', () => {
    const plain = new PlainProgress(2000);
    const at = (elapsedMs: number, objects: ObjectProgress[], extra: Partial<LiveSnapshot> = {}) => plain.update(snapshot(objects, { elapsedMs, ...extra }));
    expect(at(0, [], { listed: false })).toEqual(['reading the objects in namespace default… [+0.0s]']);
    expect(at(100, [], { listed: false })).toEqual([]);
    expect(at(500, [catchingUp('a'), catchingUp('b')])).toEqual([]); // changed, but within 2 s of the last line
    expect(at(2100, [catchingUp('a'), catchingUp('b')])).toEqual(['progress: 0/2 programmed, 0 NACKed, 0 stuck, 2 catching up (10 Envoys) [+2.1s]']);
    expect(at(3100, [catchingUp('a'), catchingUp('b')])).toEqual([]); // unchanged
    // A NACK: the summary and a line naming the object, the Envoy and its message.
    expect(at(4200, [nacked('a', 'cluster x: bad lb policy'), catchingUp('b')])).toEqual([
      'progress: 0/2 programmed, 1 NACKed, 0 stuck, 1 catching up (10 Envoys) [+4.2s]',
      '  default/a generation 2: NACK by envoy-1: cluster x: bad lb policy  EnvoyProgrammed=False',
    ]);
    expect(at(4300, [programmed('a'), programmed('b')])).toEqual(['all programmed: 2/2 objects programmed into every Envoy (10 Envoys) [+4.3s]']);
    for (const line of [...at(9000, [stuck('a', ['envoy-3']), programmed('b')])]) expect(line).not.toContain(ESC);
  });
});
