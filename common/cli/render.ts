// Text output of the CLI: aligned tables, durations, and colour only when writing to a terminal
// (and NO_COLOR unset, https://no-color.org), so piped output and CI logs stay plain.
import type { BlockerView, EnvoyDetail, EnvoySummary, ObjectView } from './query-client';

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
    case 'blocked':
      return `${blocker.nodeId}: BLOCKED by ${blocker.nacks.map((nack) => `${nack.type} of ${(nack.objects ?? []).join(', ')}: ${nack.message}`).join('; ')}`;
    case 'stuck': {
      const unrequested = blocker.unrequested ?? [];
      const unanswered = blocker.types.filter((type) => !unrequested.includes(type));
      const waits = [
        ...(unanswered.length > 0 ? [`${unanswered.join(',')} (no ACK/NACK for ${ago(blocker.since, now)})`] : []),
        ...(unrequested.length > 0 ? [`${unrequested.join(',')} (names its config references not asked for, ${ago(blocker.since, now)})`] : []),
      ];
      return `${blocker.nodeId}: STUCK on ${waits.join('; ')}`;
    }
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

export function renderObject(view: ObjectView, style: Style, now: number, options: { wide?: boolean } = {}): string {
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
  if (options.wide === true) {
    // The passthrough fields of the query API's object view (functions/query/views.ts).
    const firstSeenAt = (view as { firstSeenAt?: unknown }).firstSeenAt;
    if (typeof firstSeenAt === 'number') lines.push(`  first seen: ${ago(firstSeenAt, now)} ago`);
    const watermarks = (view as { watermarks?: unknown }).watermarks;
    if (typeof watermarks === 'object' && watermarks !== null) {
      const entries = Object.entries(watermarks as Record<string, { seq?: unknown; at?: unknown }>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      lines.push(`  watermarks: ${entries.length === 0 ? '-' : ''}`);
      for (const [lineage, mark] of entries) lines.push(`    ${lineage} at version ${String(mark.seq)}${typeof mark.at === 'number' ? ` (${ago(mark.at, now)} ago)` : ''}`);
    }
  }
  return lines.join('\n');
}

/** Code-unit order (not the locale's): the same on every machine, like istioctl's sort by proxy id. */
export function byNodeId<T extends { nodeId: string }>(envoys: readonly T[]): T[] {
  return [...envoys].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
}

type TypeReport = EnvoySummary['types'][number];

/** The istioctl spelling of a type's sync state; an older query API without `sync` gives `status`. */
export function syncLabel(type: TypeReport): string {
  const sync = type.sync ?? type.status;
  return sync === 'NOT_SENT' ? 'NOT SENT' : sync;
}

function paintSync(label: string, style: Style): string {
  return label === 'SYNCED' ? style.green(label) : label === 'NACKED' ? style.red(label) : label === 'STALE' ? style.yellow(label) : label;
}

/**
 * An Envoy's programmedThrough as the fleet view knows it best: its STATE's, or, when its lineage's
 * PROGRESS item says more (the fleet-size path writes a STATE only on class changes), that, as `≥N`.
 */
function programmedThroughLabel(envoy: EnvoySummary): string {
  const bound = envoy.progress?.programmedThroughAtLeast;
  if (bound !== undefined && bound > (envoy.programmedThrough ?? -1)) return envoy.progress?.listed === true ? String(bound) : `≥${bound}`;
  return envoy.programmedThrough === null ? '-' : String(envoy.programmedThrough);
}

function progressNote(envoy: EnvoySummary, now: number): string {
  const progress = envoy.progress;
  if (progress === undefined || progress === null || progress.programmedThroughAtLeast <= (envoy.programmedThrough ?? -1)) return '';
  return ` in its stored state; ${progress.listed ? 'through' : 'at least through'} version ${progress.programmedThroughAtLeast} by its lineage's PROGRESS of ${ago(progress.asOf, now)} ago`;
}

/**
 * Like `istioctl proxy-status`: one row per Envoy sorted by node id, one column per xDS type
 * (SYNCED / NOT SENT / STALE / NACKED: sent against acknowledged), then its gateway, lineage and
 * the version it runs in full (programmed-through). `wide` adds the group, the version the gateway
 * currently serves, connected and last seen.
 */
export function renderProxyStatus(envoys: EnvoySummary[], style: Style, options: { wide?: boolean; now?: number } = {}): string {
  const types = [...new Set(envoys.flatMap((envoy) => envoy.types.map((t) => t.type)))].sort();
  const now = options.now ?? Date.now();
  const rows = byNodeId(envoys).map((envoy) => {
    const cells = [
      envoy.nodeId,
      envoy.cluster,
      ...types.map((type) => {
        const report = envoy.types.find((t) => t.type === type);
        return report === undefined ? '-' : paintSync(syncLabel(report), style);
      }),
      envoy.gateway?.instanceId ?? '-',
      envoy.lineage,
      programmedThroughLabel(envoy),
    ];
    if (options.wide === true) cells.push(envoy.group, envoy.gateway === null ? '-' : String(envoy.gateway.currentSeq), ago(envoy.connectedAt, now), ago(envoy.lastSeenAt, now));
    cells.push(envoy.live ? envoy.status : style.dim(envoy.status));
    return cells;
  });
  const header = ['NAME', 'CLUSTER', ...types, 'GATEWAY', 'LINEAGE', 'VERSION', ...(options.wide === true ? ['GROUP', 'CURRENT', 'CONNECTED', 'LAST-SEEN'] : []), 'STATUS'];
  return table(header, rows);
}

export function renderEnvoys(envoys: EnvoySummary[], style: Style, now: number, options: { wide?: boolean } = {}): string {
  const rows = byNodeId(envoys).map((envoy) => [
    envoy.nodeId,
    envoy.group,
    envoy.lineage,
    envoy.live ? envoy.status : style.dim(`${envoy.status} (expired)`),
    programmedThroughLabel(envoy),
    envoy.types.map((t) => `${t.type}:${t.acked ?? '-'}/${t.current ?? '-'}`).join(' '),
    ago(envoy.lastSeenAt, now),
    ...(options.wide === true ? [envoy.cluster, envoy.gateway?.instanceId ?? '-', ago(envoy.connectedAt, now), envoy.types.map((t) => `${t.type}=${syncLabel(t)}`).join(' ')] : []),
  ]);
  return table(['NODE', 'GROUP', 'LINEAGE', 'STATUS', 'PROGRAMMED-THROUGH', 'ACKED/CURRENT', 'LAST-SEEN', ...(options.wide === true ? ['CLUSTER', 'GATEWAY', 'CONNECTED', 'SYNC'] : [])], rows);
}

function at(epochMs: number, now: number): string {
  return `${new Date(epochMs).toISOString()} (${ago(epochMs, now)} ago)`;
}

/**
 * One Envoy, per type: its sync state, the last response sent (version, when, if still unanswered),
 * the version it ACKed, and its last NACK with the Envoy's message and time, then recent events.
 * Nonces are per stream and not recorded; the version `xp1:<lineage>:<seq>` names a response.
 */
export function renderEnvoyDetail(envoy: EnvoyDetail, style: Style, now: number): string {
  const gateway = envoy.gateway;
  const lines = [
    `${style.bold(envoy.nodeId)}  ${envoy.live ? envoy.status : style.dim(`${envoy.status} (expired)`)}  cluster ${envoy.cluster}  group ${envoy.group}`,
    `  lineage:    ${envoy.lineage}${gateway === null ? ' (its gateway has no lineage record)' : ` (gateway ${gateway.instanceId}, current version ${gateway.currentSeq}, heartbeat ${ago(gateway.heartbeatAt, now)} ago)`}`,
    `  programmed: ${envoy.programmedThrough === null ? 'no version in full yet' : `through version ${envoy.programmedThrough}`}${progressNote(envoy, now)}`,
    `  seen:       connected ${ago(envoy.connectedAt, now)} ago, last seen ${ago(envoy.lastSeenAt, now)} ago`,
    '',
  ];
  const rows = envoy.types.map((type) => [
    type.type,
    paintSync(syncLabel(type), style),
    type.sent === undefined || type.sent === null ? '-' : type.sent.version,
    type.sent?.at === undefined ? '-' : `${ago(type.sent.at, now)} ago`,
    type.ackedVersion ?? (type.sent === undefined || type.sent === null ? '-' : 'never acknowledged'),
    type.current === undefined ? '-' : String(type.current),
  ]);
  lines.push(...table(['TYPE', 'SYNC', 'SENT', 'UNANSWERED-FOR', 'ACKED', 'CURRENT'], rows).split('\n'));
  const nacks = envoy.types.filter((type) => type.lastNack !== undefined && type.lastNack !== null);
  if (nacks.length > 0) {
    lines.push('', 'last NACK:');
    for (const type of nacks) {
      const nack = type.lastNack;
      if (nack === undefined || nack === null) continue;
      const text = `  ${type.type} ${nack.version} at ${at(nack.at, now)}${nack.cleared ? ' (a later version was ACKed)' : ''}: ${nack.message}`;
      lines.push(nack.cleared ? text : style.red(text));
    }
  }
  if (envoy.recentEvents.length > 0) {
    lines.push('', 'recent events (newest first):');
    lines.push(
      ...table(
        ['AT', 'OUTCOME', 'TYPE', 'VERSION', 'MESSAGE'],
        envoy.recentEvents.map((event) => [new Date(event.at).toISOString(), event.outcome === 'ACK' ? event.outcome : style.red(event.outcome), event.type, `xp1:${event.lineage}:${event.seq}`, event.message ?? '']),
      )
        .split('\n')
        .map((line) => `  ${line}`),
    );
  }
  return lines.join('\n');
}
