// The live view of `npm start`: each tracked object with a bar of Envoys programmed at its latest
// generation (metadata.generation from Kubernetes, so a fresh change shows as catching up), NACKs and
// stuck Envoys highlighted, a summary line, and the start banner kept on screen. It reads the same
// query API as the CLI, through the CLI's client.
//
// Three outputs, all drawn by pure functions of a LiveSnapshot (renderLiveView, PlainProgress):
// - a terminal: a region redrawn in place (banner, summary, rows; never taller than the terminal,
//   no line wider than it), worst objects first once there are many;
// - not a terminal (`npm start | tee log`): plain progress lines, one per change of the summary, at
//   most one every PLAIN_MIN_INTERVAL_MS (the final "all programmed" at once), no escape codes;
// - --no-ui (CI): those summary lines plus one plain line per object whenever it changes.
//
// Reading: one list call gives every object's generation; object views are read a few at a time,
// never-read and unsettled objects first, settled ones again every REFRESH_SETTLED_MS only. Each
// object query scans the whole fleet's states (functions/query/views.ts), so at 200 Envoys × 50
// objects a full pass takes tens of seconds: the view shows what it has as it arrives instead of
// waiting for the pass (docs/OPERATIONS.md, "The live view").
import { QueryApiError, QueryClient, type ObjectView } from '../../../common/cli/query-client';
import { COLOUR, PLAIN, type Style } from '../../../common/cli/render';
import { forEachConcurrently } from '../../../common/worker-pool';

export interface ObjectProgress {
  name: string;
  /** metadata.generation in Kubernetes. */
  generation: number | undefined;
  /** What the query API says about that generation (undefined: no gateway saw it yet, or not read yet). */
  view: ObjectView | undefined;
}

/** An object as listed in Kubernetes. */
export interface ListedObject {
  name: string;
  generation: number | undefined;
}

/** What the view knows at one moment: the input of every renderer. */
export interface LiveSnapshot {
  namespace: string;
  /** Every listed object, in list order. */
  objects: ObjectProgress[];
  /** Names of listed objects whose view has not been read yet (the first pass is under way). */
  unread: string[];
  /** False until the first list of objects answered. */
  listed: boolean;
  /** The last poll's error, if it failed. */
  error?: string;
  /** Since the view started. */
  elapsedMs: number;
}

export type Verdict = 'rejected' | 'stuck' | 'progressing' | 'unread' | 'unknown' | 'programmed';

/** Worst first: the order of rows once there are WORST_FIRST_FROM objects or more than fit. */
const VERDICT_RANK: Record<Verdict, number> = { rejected: 0, stuck: 1, unknown: 2, progressing: 3, unread: 4, programmed: 5 };

/** From this many objects on, rows are ordered worst first (below it, by name). */
export const WORST_FIRST_FROM = 50;
/** Off a terminal, summary lines at most this often (a change waits; "all programmed" does not). */
export const PLAIN_MIN_INTERVAL_MS = 2000;
/** A programmed object's view is read again this often (unsettled ones every poll). */
export const REFRESH_SETTLED_MS = 5000;
/** Object views read at once: enough to fill the query function's time, few enough to leave the system its CPU. */
export const READ_CONCURRENCY = 4;

/** Programmed: the condition in Kubernetes says True at the current generation (what `kubectl wait` waits for). */
export function isProgrammed(progress: ObjectProgress): boolean {
  return progress.view !== undefined && progress.view.generation === progress.generation && progress.view.condition?.status === 'True';
}

export function verdictOf(progress: ObjectProgress, unread: boolean): Verdict {
  if (progress.generation === undefined) return 'unknown';
  const view = progress.view;
  if (view === undefined) return unread ? 'unread' : 'progressing';
  if (view.live.state === 'Rejected' || view.live.state === 'Invalid' || view.live.blockers.some((b) => b.reason === 'nacked')) return 'rejected';
  if (view.live.state === 'Stuck' || view.live.blockers.some((b) => b.reason === 'stuck')) return 'stuck';
  return isProgrammed(progress) ? 'programmed' : 'progressing';
}

/** `envoy-3`, or `12 Envoys (envoy-3, envoy-4, …)`: the count first, so a cut keeps it. */
function nodeList(ids: string[], shown: number, notListed: boolean): string {
  if (ids.length === 1 && !notListed) return ids[0] ?? '';
  return `${ids.length}${notListed ? '+' : ''} Envoys (${ids.slice(0, shown).join(', ')}${ids.length > shown || notListed ? ', …' : ''})`;
}

/**
 * The state word and the note of a row: what is blocking first, in the words an operator acts on
 * (which Envoys NACKed and Envoy's message, which are stuck), then the condition in Kubernetes.
 */
export function describeProgress(progress: ObjectProgress, style: Style): { state: string; note: string; blocking: string } {
  const view = progress.view;
  if (progress.generation === undefined) return { state: style.yellow('Unknown'), note: 'not in Kubernetes', blocking: '' };
  if (view === undefined) return { state: style.yellow('CatchingUp'), note: `generation ${progress.generation} not seen by the gateway yet`, blocking: '' };
  const nacked = view.live.blockers.filter((b) => b.reason === 'nacked');
  const stuck = view.live.blockers.filter((b) => b.reason === 'stuck');
  const notes: string[] = [];
  const notListed = view.live.blockersNotListed > 0;
  if (nacked.length > 0) {
    const first = nacked[0];
    const message = first?.reason === 'nacked' ? (first.nacks[0]?.message ?? '') : '';
    notes.push(style.red(`NACK by ${nodeList(nacked.map((b) => b.nodeId), 2, notListed)}: ${message}`));
  }
  if (stuck.length > 0) notes.push(style.red(`stuck: ${nodeList(stuck.map((b) => b.nodeId), 3, notListed)}`));
  // Nothing wrong yet, but who is still to answer (or whose gateway has not seen this generation).
  const pending = view.live.blockers.filter((b) => b.reason === 'pending' || b.reason === 'noWatermark');
  if (nacked.length === 0 && stuck.length === 0 && pending.length > 0) notes.push(`waiting for ${nodeList(pending.map((b) => b.nodeId), 3, notListed)}`);
  const condition = view.condition;
  const written = condition === null ? 'condition not written yet' : `${condition.type}=${condition.status}`;
  const state = view.live.state === 'Programmed' ? style.green(view.live.state) : view.live.state === 'Rejected' || view.live.state === 'Stuck' || view.live.state === 'Invalid' ? style.red(view.live.state) : style.yellow(view.live.state);
  // What blocks first: on a narrow terminal the condition (which only repeats the verdict) is cut.
  return { state, note: [...notes, written].join('  '), blocking: notes.join('  ') };
}

/** Counts behind the summary line. */
export interface LiveSummary {
  objects: number;
  programmed: number;
  rejected: number;
  stuck: number;
  /** Not programmed yet, nothing wrong known (includes objects not read yet). */
  progressing: number;
  unread: number;
  /** Largest fleet any object's view counted. */
  envoys: number;
  allProgrammed: boolean;
}

export function summarize(snapshot: LiveSnapshot): LiveSummary {
  const unread = new Set(snapshot.unread);
  const counts = { programmed: 0, rejected: 0, stuck: 0, progressing: 0 };
  let envoys = 0;
  for (const object of snapshot.objects) {
    const verdict = verdictOf(object, unread.has(object.name));
    if (verdict === 'programmed' || verdict === 'rejected' || verdict === 'stuck') counts[verdict] += 1;
    else counts.progressing += 1;
    envoys = Math.max(envoys, object.view?.live.total ?? 0);
  }
  const objects = snapshot.objects.length;
  return { objects, ...counts, unread: snapshot.objects.filter((o) => unread.has(o.name)).length, envoys, allProgrammed: objects > 0 && counts.programmed === objects };
}

/** The summary line, without colour and without time (so it changes only when the counts do). */
export function summaryLine(snapshot: LiveSnapshot): string {
  if (!snapshot.listed) return `reading the objects in namespace ${snapshot.namespace}…`;
  const s = summarize(snapshot);
  if (s.objects === 0) return `no objects in namespace ${snapshot.namespace} yet`;
  const envoys = s.envoys > 0 ? ` (${s.envoys} Envoys)` : '';
  if (s.allProgrammed) return `all programmed: ${s.objects}/${s.objects} objects programmed into every Envoy${envoys}`;
  const parts = [`${s.programmed}/${s.objects} programmed`, `${s.rejected} NACKed`, `${s.stuck} stuck`, `${s.progressing} catching up`];
  if (s.unread > 0) parts.push(`${s.unread} not read yet`);
  return `progress: ${parts.join(', ')}${envoys}`;
}

// ---------------------------------------------------------------------------------------------
// Terminal layout. Everything is laid out on plain text (one code point = one column; Envoy text
// reaches us through displaySafe, so no control characters) and painted afterwards, so colour
// never counts towards a width and a cut never splits an escape sequence.

/** A line of the start banner; essential lines (env.sh, the token) stay when the terminal is short. */
export interface BannerLine {
  text: string;
  essential?: boolean;
}

export interface Screen {
  /** Terminal columns (`process.stdout.columns`). */
  width: number;
  /** Terminal rows; undefined: no limit. */
  height?: number;
  isTTY: boolean;
  banner?: BannerLine[];
  /** Colour (a terminal with NO_COLOR unset); default: colour on a TTY. */
  colour?: boolean;
}

function length(text: string): number {
  return Array.from(text).length;
}

/** `text` cut to `width` columns, ending in '…' when cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  return `${chars.slice(0, width - 1).join('')}…`;
}

/** A name cut in the middle, so both its start and its distinguishing end (`-42`) stay. */
export function truncateMiddle(text: string, width: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  if (width <= 3) return truncate(text, width);
  const tail = Math.floor((width - 1) / 2);
  const head = width - 1 - tail;
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - tail).join('')}`;
}

/** `text` in lines of at most `width` columns, later lines indented by `indent`; breaks at spaces when it can. */
export function wrap(text: string, width: number, indent: number): string[] {
  const lines: string[] = [];
  let rest = Array.from(text);
  let room = width;
  while (rest.length > room && room > 0) {
    let cut = rest.lastIndexOf(' ', room);
    if (cut <= 0) cut = room;
    lines.push(rest.slice(0, cut).join('').trimEnd());
    rest = Array.from(rest.slice(cut).join('').trimStart());
    room = width - indent;
  }
  lines.push(rest.join(''));
  return lines.map((line, index) => (index === 0 ? line : `${' '.repeat(indent)}${line}`));
}

/** Natural order: sample-2 before sample-10. */
const byName = new Intl.Collator('en', { numeric: true }).compare;

interface Row {
  progress: ObjectProgress;
  verdict: Verdict;
  fraction: number;
}

function orderRows(snapshot: LiveSnapshot, worstFirst: boolean): Row[] {
  const unread = new Set(snapshot.unread);
  const rows = snapshot.objects.map((progress) => {
    const total = progress.view?.live.total ?? 0;
    return { progress, verdict: verdictOf(progress, unread.has(progress.name)), fraction: total === 0 ? 0 : (progress.view?.live.programmed ?? 0) / total };
  });
  return rows.sort((a, b) => (worstFirst ? VERDICT_RANK[a.verdict] - VERDICT_RANK[b.verdict] || a.fraction - b.fraction : 0) || byName(a.progress.name, b.progress.name));
}

function barWidth(width: number): number {
  if (width >= 110) return 20;
  if (width >= 90) return 12;
  if (width >= 70) return 8;
  return 0;
}

function stateWord(row: Row): string {
  if (row.verdict === 'unread') return 'reading';
  if (row.verdict === 'unknown') return 'Unknown';
  return row.progress.view?.live.state ?? 'CatchingUp';
}

function paintVerdict(verdict: Verdict, style: Style): (text: string) => string {
  if (verdict === 'programmed') return style.green;
  if (verdict === 'rejected' || verdict === 'stuck') return style.red;
  if (verdict === 'unread') return style.dim;
  return style.yellow;
}

/** Column widths shared by every row of a frame, so the columns line up. */
interface Layout {
  width: number;
  name: number;
  gen: number;
  /** Bar cells (0: no bar). */
  bar: number;
  /** Count column width (0: no count). */
  count: number;
  state: number;
}

function countText(progress: ObjectProgress): string {
  return `${progress.view?.live.programmed ?? 0}/${progress.view?.live.total ?? 0}`;
}

/**
 * The columns for `rows` on `width` columns: the name up to 30% of the width (cut in the middle
 * beyond), the bar only from 70 columns, the count from 45, so the name and the state always fit.
 */
function layoutFor(rows: Row[], width: number): Layout {
  const longest = (texts: string[], cap: number) => Math.min(cap, Math.max(0, ...texts.map(length)));
  return {
    width,
    name: Math.min(longest(rows.map((row) => row.progress.name), Number.POSITIVE_INFINITY), Math.max(12, Math.floor(width * 0.3))),
    gen: longest(rows.map((row) => `g${row.progress.generation ?? '-'}`), 8),
    bar: barWidth(width),
    count: width >= 45 ? longest(rows.map((row) => countText(row.progress)), 13) : 0,
    state: longest(rows.map(stateWord), 14),
  };
}

/** Below this many columns beside the head, a note starts on the next line. */
const MIN_NOTE_ROOM = 12;

/**
 * One object: `name g<gen> [bar] p/t  State  note`. The name and the state always show (the name
 * cut in the middle if it must be); a NACKed or stuck object's note (what blocks, then the
 * condition) wraps onto up to `noteLines` lines, indented; any other note is cut to fit.
 */
function objectLines(row: Row, layout: Layout, style: Style, noteLines: number): string[] {
  const { progress } = row;
  const { width } = layout;
  const name = truncateMiddle(progress.name, layout.name).padEnd(layout.name);
  const gen = `g${progress.generation ?? '-'}`.padEnd(layout.gen);
  const total = progress.view?.live.total ?? 0;
  const state = truncate(stateWord(row), layout.state);
  const described = row.verdict === 'unread' ? { note: '', blocking: '' } : describeProgress(progress, PLAIN);
  const paint = paintVerdict(row.verdict, style);
  const filled = total === 0 ? 0 : Math.round(((progress.view?.live.programmed ?? 0) / total) * layout.bar);
  const barText = layout.bar > 0 ? ` [${paint('█'.repeat(filled))}${style.dim('░'.repeat(layout.bar - filled))}]` : '';
  const count = layout.count > 0 ? ` ${countText(progress).padStart(layout.count)}` : '';
  const headWidth = layout.name + 1 + layout.gen + (layout.bar > 0 ? layout.bar + 3 : 0) + (layout.count > 0 ? layout.count + 1 : 0) + 2 + layout.state;
  if (headWidth > width) {
    // Too narrow even for name + state: name and state alone, the name cut to fit.
    const shortName = truncateMiddle(progress.name, Math.max(1, width - length(state) - 1));
    return [`${style.bold(shortName)} ${paint(truncate(state, width - length(shortName) - 1))}`];
  }
  const note = described.note;
  const head = `${style.bold(name)} ${gen}${barText}${count}  ${paint(state)}${note === '' ? '' : ' '.repeat(layout.state - length(state))}`;
  const noteRoom = width - headWidth - 2;
  const problem = row.verdict === 'rejected' || row.verdict === 'stuck';
  if (note === '') return [head];
  if (length(note) <= noteRoom || !problem || noteLines <= 1) return noteRoom <= 0 ? [head] : [`${head}  ${paintNote(truncate(note, noteRoom), problem, style)}`];
  // Wrapped: what blocks (the condition only repeats the verdict), beside the head if there is room
  // there, the rest indented under the name; at most noteLines lines, the last one cut.
  const indent = 4;
  const first = noteRoom >= MIN_NOTE_ROOM ? (wrap(described.blocking, noteRoom, 0)[0] ?? '') : '';
  const rest = Array.from(described.blocking).slice(length(first)).join('').trimStart();
  const more = wrap(rest, width - indent, 0);
  const shown = rest === '' ? [] : more.slice(0, noteLines - 1);
  if (more.length > shown.length && shown.length > 0) shown[shown.length - 1] = truncate(`${shown[shown.length - 1] ?? ''} ${more.slice(shown.length).join(' ')}`, width - indent);
  return [first === '' ? head : `${head}  ${paintNote(first, problem, style)}`, ...shown.map((line) => `${' '.repeat(indent)}${paintNote(line, problem, style)}`)];
}

function paintNote(text: string, problem: boolean, style: Style): string {
  return problem ? style.red(text) : text;
}

/** The whole banner shows only if this many object rows still fit below it. */
const BANNER_YIELDS_TO_ROWS = 8;

/** The banner: all of it in `fullRows`, else its essential lines in `essentialRows` (each line wrapped, never cut). */
function bannerLines(banner: BannerLine[], width: number, fullRows: number, essentialRows: number): string[] {
  const all = banner.flatMap((line) => wrap(line.text, width, 4));
  if (all.length <= fullRows) return all;
  const essential = banner.filter((line) => line.essential === true).flatMap((line) => wrap(line.text, width, 4));
  return essential.slice(0, Math.max(0, essentialRows));
}

/**
 * The lines to show for `snapshot` on `screen`. On a terminal: the banner, the summary and the
 * object rows, at most `height - 1` lines (the region is redrawn in place, so it must never scroll),
 * none wider than `width - 1` (a character in the last column makes some terminals wrap). Off a
 * terminal: the summary line alone, plain (PlainProgress decides when to print it).
 */
export function renderLiveView(snapshot: LiveSnapshot, screen: Screen): string[] {
  const summary = summaryLine(snapshot);
  const error = snapshot.error === undefined ? '' : `  (last poll failed: ${snapshot.error})`;
  if (!screen.isTTY) return [`${summary}${error}`];
  const style = screen.colour ?? true ? COLOUR : PLAIN;
  const width = Math.max(20, screen.width - 1);
  const height = screen.height === undefined ? Number.POSITIVE_INFINITY : Math.max(3, screen.height - 1);
  const s = summarize(snapshot);
  // The summary and a few rows first; the whole banner only if it leaves them room, else its essential lines.
  const wantedRows = Math.min(snapshot.objects.length, BANNER_YIELDS_TO_ROWS) + (snapshot.objects.length > BANNER_YIELDS_TO_ROWS ? 1 : 0);
  const banner = bannerLines(screen.banner ?? [], width, height - 2 - Math.max(1, wantedRows), height - 3);
  const top = banner.length > 0 ? [...banner, ''] : [];
  const paintSummary = s.allProgrammed ? style.green : s.rejected + s.stuck > 0 ? style.red : style.yellow;
  const lines = [...top, ...wrap(`${summary}${error}`, width, 2).map((line) => style.bold(paintSummary(line)))];
  let room = height - lines.length;
  const rows = orderRows(snapshot, snapshot.objects.length >= WORST_FIRST_FROM || snapshot.objects.length > room);
  if (rows.length === 0 || room <= 0) return lines.slice(0, Number.isFinite(height) ? height : undefined);
  const layout = layoutFor(rows, width);
  let shown = 0;
  for (const [index, row] of rows.entries()) {
    // While rows remain after this one, one line stays free for the "… more" line.
    const reserve = index < rows.length - 1 ? 1 : 0;
    const usable = room - reserve;
    // A NACK's message is what the reader acts on: its row may wrap even if that hides other rows;
    // other notes wrap only onto lines the remaining rows do not need.
    const spare = room - (rows.length - index);
    const noteLines = 1 + Math.max(0, Math.min(2, row.verdict === 'rejected' ? usable - 1 : spare));
    const drawn = objectLines(row, layout, style, noteLines);
    if (drawn.length > usable) break;
    lines.push(...drawn);
    room -= drawn.length;
    shown += 1;
  }
  if (shown < rows.length) {
    const hidden = rows.slice(shown);
    const programmed = hidden.filter((row) => row.verdict === 'programmed').length;
    lines.push(style.dim(truncate(`… ${hidden.length} more objects not shown (${programmed === hidden.length ? 'all programmed' : `${programmed} programmed, ${hidden.length - programmed} not yet`})`, width)));
  }
  return lines;
}

/**
 * Off a terminal: which lines to print now. A summary line when the summary changed (at most one
 * every `minIntervalMs`, except the first and "all programmed", printed at once), each with the
 * elapsed time; with it, one line per object that has newly become NACKed or stuck (the news a log
 * reader needs), at most five.
 */
export class PlainProgress {
  private printed: string | undefined;
  private printedAt = Number.NEGATIVE_INFINITY;
  private readonly problems = new Map<string, string>();

  constructor(private readonly minIntervalMs = PLAIN_MIN_INTERVAL_MS) {}

  update(snapshot: LiveSnapshot): string[] {
    const [summary = ''] = renderLiveView(snapshot, { width: Number.POSITIVE_INFINITY, isTTY: false });
    if (summary === this.printed) return [];
    const urgent = this.printed === undefined || summarize(snapshot).allProgrammed;
    if (!urgent && snapshot.elapsedMs - this.printedAt < this.minIntervalMs) return [];
    this.printed = summary;
    this.printedAt = snapshot.elapsedMs;
    const lines = [`${summary} [+${(snapshot.elapsedMs / 1000).toFixed(1)}s]`];
    const unread = new Set(snapshot.unread);
    const news: string[] = [];
    const listed = new Set<string>();
    for (const object of snapshot.objects) {
      listed.add(object.name);
      const verdict = verdictOf(object, unread.has(object.name));
      if (verdict !== 'rejected' && verdict !== 'stuck') {
        this.problems.delete(object.name);
        continue;
      }
      const line = `  ${snapshot.namespace}/${object.name} generation ${object.generation ?? '-'}: ${describeProgress(object, PLAIN).note}`;
      if (this.problems.get(object.name) !== line) news.push(line);
      this.problems.set(object.name, line);
    }
    for (const name of this.problems.keys()) if (!listed.has(name)) this.problems.delete(name);
    lines.push(...news.slice(0, 5).map((line) => truncate(line, 400)));
    if (news.length > 5) lines.push(`  … and ${news.length - 5} more objects with NACKs or stuck Envoys`);
    return lines;
  }
}

/** The per-object line of --no-ui, printed whenever it changes. */
export function objectLine(namespace: string, progress: ObjectProgress): string {
  const { state, note } = describeProgress(progress, PLAIN);
  return `object ${namespace}/${progress.name} generation ${progress.generation ?? '-'}: ${progress.view?.live.programmed ?? 0}/${progress.view?.live.total ?? 0} Envoys ${state} ${note}`;
}

// ---------------------------------------------------------------------------------------------
// Reading and drawing.

export interface LiveViewOptions {
  queryUrl: string;
  queryToken: string;
  namespace: string;
  /** Objects to show, with their generations; re-read each poll so new ones appear. */
  listObjects: () => Promise<ListedObject[]>;
  /** 'ui': redrawn on a terminal, plain progress lines otherwise; 'lines': --no-ui, for CI. */
  mode: 'ui' | 'lines';
  out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  /** Pause between polls. */
  pollMs: number;
  /** Drawn at the top of the terminal region (ui mode on a terminal). */
  banner?: BannerLine[];
  /** Colour on a terminal (NO_COLOR unset). */
  colour?: boolean;
  /** Called after each poll in which every listed object was read (start.ts reports "PROGRAMMED" with it). */
  onPoll?: (objects: ObjectProgress[]) => void;
  now?: () => number;
}

export interface LiveView {
  /** Stops polling; on a terminal the last frame stays, with the cursor below it. */
  stop(): Promise<void>;
}

/** Names and generations of the HTTPProxies in a namespace, in one list call to the API server. */
export async function listHttpProxies(kubeUrl: string, namespace: string): Promise<ListedObject[]> {
  const response = await fetch(`${kubeUrl}/apis/projectcontour.io/v1/namespaces/${encodeURIComponent(namespace)}/httpproxies`);
  if (!response.ok) throw new Error(`listing HTTPProxies answered HTTP ${response.status}`);
  const body = (await response.json()) as { items?: Array<{ metadata?: { name?: unknown; generation?: unknown } }> };
  return (body.items ?? [])
    .map((item) => ({ name: typeof item.metadata?.name === 'string' ? item.metadata.name : '', generation: typeof item.metadata?.generation === 'number' ? item.metadata.generation : undefined }))
    .filter((object) => object.name !== '')
    .sort((a, b) => byName(a.name, b.name));
}

interface Known {
  generation: number | undefined;
  view: ObjectView | undefined;
  /** When the view was last read (undefined: never, for this generation). */
  readAt: number | undefined;
}

const ERASE_LINE = '\u001b[2K';
const ERASE_BELOW = '\u001b[J';
const cursorUp = (lines: number): string => (lines > 0 ? `\u001b[${lines}A\r` : '\r');
const HIDE_CURSOR = '\u001b[?25l';
const SHOW_CURSOR = '\u001b[?25h';
/** Redraws on a terminal at most this often (each object read arriving asks for one). */
const FRAME_MS = 200;

export function startLiveView(options: LiveViewOptions): LiveView {
  const client = new QueryClient({ url: options.queryUrl, token: options.queryToken, timeoutMs: 10_000 });
  const now = options.now ?? Date.now;
  const startedAt = now();
  const tty = options.mode === 'ui' && options.out.isTTY === true;
  const known = new Map<string, Known>();
  let order: string[] = [];
  let listed = false;
  let error: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let frameTimer: NodeJS.Timeout | undefined;
  let drawnLines = 0;
  let lastFrameAt = Number.NEGATIVE_INFINITY;
  const plain = new PlainProgress();
  const lastObjectLines = new Map<string, string>();

  const snapshot = (): LiveSnapshot => ({
    namespace: options.namespace,
    objects: order.map((name) => ({ name, generation: known.get(name)?.generation, view: known.get(name)?.view })),
    unread: order.filter((name) => known.get(name)?.readAt === undefined),
    listed,
    ...(error === undefined ? {} : { error }),
    elapsedMs: now() - startedAt,
  });

  const draw = (): void => {
    lastFrameAt = now();
    const current = snapshot();
    if (tty) {
      const lines = renderLiveView(current, { width: options.out.columns ?? 80, ...(options.out.rows === undefined ? {} : { height: options.out.rows }), isTTY: true, banner: options.banner ?? [], colour: options.colour ?? true });
      options.out.write(`${drawnLines === 0 ? HIDE_CURSOR : cursorUp(drawnLines)}${lines.map((line) => `${ERASE_LINE}${line}\n`).join('')}${ERASE_BELOW}`);
      drawnLines = lines.length;
      return;
    }
    if (options.mode === 'lines') {
      for (const object of current.objects) {
        if (current.unread.includes(object.name)) continue;
        const line = objectLine(options.namespace, object);
        if (lastObjectLines.get(object.name) !== line) options.out.write(`${line}\n`);
        lastObjectLines.set(object.name, line);
      }
    }
    const lines = plain.update(current);
    if (lines.length > 0) options.out.write(`${lines.join('\n')}\n`);
  };
  /** A redraw soon (terminal: at most every FRAME_MS; off a terminal PlainProgress limits the rate). */
  const requestDraw = (): void => {
    if (stopped || frameTimer !== undefined) return;
    const wait = Math.max(0, lastFrameAt + FRAME_MS - now());
    frameTimer = setTimeout(() => {
      frameTimer = undefined;
      if (!stopped) draw();
    }, wait);
  };

  const read = async (name: string): Promise<void> => {
    const entry = known.get(name);
    if (entry === undefined) return;
    const generation = entry.generation;
    let view: ObjectView | undefined;
    if (generation !== undefined) {
      try {
        view = await client.object({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: options.namespace, name }, generation);
      } catch (caught) {
        if (!(caught instanceof QueryApiError)) throw caught;
        error = caught.message;
        return;
      }
    }
    // The object may have changed generation while it was read: that answer is for the old one.
    const current = known.get(name);
    if (current === undefined || current.generation !== generation) return;
    current.view = view;
    current.readAt = now();
    requestDraw();
  };

  const poll = async (): Promise<void> => {
    const objects = await options.listObjects();
    listed = true;
    error = undefined;
    const names = new Set(objects.map((object) => object.name));
    for (const name of known.keys()) if (!names.has(name)) known.delete(name);
    for (const object of objects) {
      const entry = known.get(object.name);
      if (entry === undefined || entry.generation !== object.generation) known.set(object.name, { generation: object.generation, view: undefined, readAt: undefined });
    }
    order = objects.map((object) => object.name);
    requestDraw();
    // Never read first, then unsettled ones (worst first), then settled ones due for a refresh.
    const at = now();
    const due = order
      .map((name) => ({ name, entry: known.get(name) as Known }))
      .filter(({ name, entry }) => entry.readAt === undefined || !isProgrammed({ name, ...entry }) || at - entry.readAt >= REFRESH_SETTLED_MS)
      .sort((a, b) => rank(a.entry) - rank(b.entry))
      .map(({ name }) => name);
    await forEachConcurrently(due, READ_CONCURRENCY, async (name) => {
      if (!stopped) await read(name);
    });
    // Drawn now, not at the next frame: what onPoll reports (start.ts's PROGRAMMED) is on screen first.
    if (frameTimer !== undefined) clearTimeout(frameTimer);
    frameTimer = undefined;
    if (stopped) return;
    draw();
    const current = snapshot();
    if (current.unread.length === 0) options.onPoll?.(current.objects);
  };
  let running: Promise<void> = Promise.resolve();
  const loop = (): void => {
    running = poll()
      .catch((caught: unknown) => {
        error = caught instanceof Error ? caught.message : String(caught);
      })
      .finally(() => {
        if (stopped) return;
        requestDraw();
        timer = setTimeout(loop, options.pollMs);
      });
  };
  // Something on screen at once, before the first list answers.
  draw();
  loop();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      if (frameTimer !== undefined) clearTimeout(frameTimer);
      await running;
      if (tty) {
        draw();
        options.out.write(SHOW_CURSOR);
      }
    },
  };
}

function rank(entry: Known): number {
  if (entry.readAt === undefined) return 0;
  const state = entry.view?.live.state;
  return state === 'Programmed' ? 2 : 1;
}
