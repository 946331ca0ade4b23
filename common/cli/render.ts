// Text output of the CLI: aligned tables, durations, and colour only when writing to a terminal
// (and NO_COLOR unset, https://no-color.org), so piped output and CI logs stay plain.
import type { BlockerView, EnvoySummary, ObjectView } from './query-client';

export interface Style {
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  bold(text: string): string;
  dim(text: string): string;
}

const ansi = (code: number) => (text: string) => `\u001b[${code}m${text}\u001b[0m`;
export const COLOUR: Style = { red: ansi(31), green: ansi(32), yellow: ansi(33), bold: ansi(1), dim: ansi(2) };
export const PLAIN: Style = { red: (t) => t, green: (t) => t, yellow: (t) => t, bold: (t) => t, dim: (t) => t };

export function styleFor(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): Style {
  return stream.isTTY === true && (env['NO_COLOR'] ?? '') === '' ? COLOUR : PLAIN;
}

/** SGR escape sequences (colours), which take no room on screen. */
const ANSI_SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

export function table(header: string[], rows: string[][]): string {
  // Widths from the visible text (colour codes do not take room).
  const visible = (cell: string) => cell.replace(ANSI_SGR, '').length;
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => visible(row[column] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat((widths[column] ?? 0) - visible(cell))))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function ago(at: number | undefined, now: number): string {
  if (at === undefined) return '-';
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${seconds % 60}s`;
  return `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
}

/** One line per blocker: who, why, and the detail that lets someone act (types, Envoy's message, since). */
export function describeBlocker(blocker: BlockerView, now: number): string {
  switch (blocker.reason) {
    case 'nacked':
      return `${blocker.nodeId}: NACKED ${blocker.nacks.map((nack) => `${nack.type}: ${nack.message}`).join('; ')}`;
    case 'stuck':
      return `${blocker.nodeId}: STUCK on ${blocker.types.join(',')} (no ACK/NACK for ${ago(blocker.since, now)})`;
    case 'noWatermark':
      return `${blocker.nodeId}: NO WATERMARK yet for its lineage ${blocker.lineages.join(',')} (its gateway has not seen this generation)`;
    case 'pending':
      return `${blocker.nodeId}: PENDING ${blocker.types.join(',')} not yet ACKed at this generation`;
  }
}

export function paintState(state: string, style: Style): string {
  if (state === 'Programmed' || state === 'True') return style.green(state);
  if (state === 'Rejected' || state === 'Stuck' || state === 'False') return style.red(state);
  return style.yellow(state);
}

export function renderObject(view: ObjectView, style: Style, now: number): string {
  const condition = view.condition;
  const lines = [
    `${style.bold(`${view.object.kind}.${view.object.group} ${view.object.namespace}/${view.object.name}`)}  generation ${view.generation}`,
    condition === null
      ? `  condition: ${style.yellow('not written yet')}`
      : `  condition: ${condition.type}=${paintState(condition.status, style)} reason=${condition.reason} observedGeneration=${condition.observedGeneration ?? '-'}\n             ${condition.message}`,
    `  envoys:    ${view.live.programmed}/${view.live.total} programmed (${paintState(view.live.state, style)})${view.programmedAt === null ? '' : `, programmed ${ago(view.programmedAt, now)} ago`}`,
  ];
  if (view.live.blockers.length > 0) {
    lines.push('  blocking:');
    for (const blocker of view.live.blockers) {
      const text = describeBlocker(blocker, now);
      lines.push(`    ${blocker.reason === 'nacked' || blocker.reason === 'stuck' ? style.red(text) : text}`);
    }
    if (view.live.blockersNotListed > 0) lines.push(`    … and ${view.live.blockersNotListed} more`);
  }
  if (view.live.fleetTruncated) lines.push(style.yellow('  (fleet scan truncated: counts cover part of the fleet)'));
  return lines.join('\n');
}

/** Like `istioctl proxy-status`: one row per Envoy, one column per xDS type. */
export function renderProxyStatus(envoys: EnvoySummary[], style: Style): string {
  const types = [...new Set(envoys.flatMap((envoy) => envoy.types.map((t) => t.type)))].sort();
  const paint = (status: string) => (status === 'SYNCED' ? style.green(status) : status === 'NACKED' ? style.red(status) : status === 'STALE' ? style.yellow(status) : status);
  const rows = envoys.map((envoy) => [
    envoy.nodeId,
    envoy.cluster,
    envoy.gateway?.instanceId ?? '-',
    ...types.map((type) => paint(envoy.types.find((t) => t.type === type)?.status ?? '-')),
    envoy.live ? envoy.status : style.dim(envoy.status),
  ]);
  return table(['NAME', 'CLUSTER', 'GATEWAY', ...types, 'STATUS'], rows);
}

export function renderEnvoys(envoys: EnvoySummary[], style: Style, now: number): string {
  const rows = envoys.map((envoy) => [
    envoy.nodeId,
    envoy.group,
    envoy.lineage,
    envoy.live ? envoy.status : style.dim(`${envoy.status} (expired)`),
    envoy.programmedThrough === null ? '-' : String(envoy.programmedThrough),
    envoy.types.map((t) => `${t.type}:${t.acked ?? '-'}/${t.current ?? '-'}`).join(' '),
    ago(envoy.lastSeenAt, now),
  ]);
  return table(['NODE', 'GROUP', 'LINEAGE', 'STATUS', 'PROGRAMMED-THROUGH', 'ACKED/CURRENT', 'LAST-SEEN'], rows);
}
