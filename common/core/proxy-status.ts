// A fleet view like `istioctl proxy-status`: per Envoy and type, is it running what its gateway
// currently serves? For the query function; pure.
import { isUnresolvedNack, type EnvoyState } from './envoy-record';
import type { LineageState } from './lineage-state';
import { currentVersion } from './type-history';

/**
 * SYNCED: ACKed the lineage's current version. NACKED: rejected something newer than it runs.
 * STALE: a response is out and unanswered. NOT_SENT: behind, with nothing in flight. UNKNOWN: the
 * lineage is not known to the caller (so "current" is not known).
 */
export type TypeSyncStatus = 'SYNCED' | 'NACKED' | 'STALE' | 'NOT_SENT' | 'UNKNOWN';

export interface TypeSyncReport {
  typeUrl: string;
  status: TypeSyncStatus;
  acked?: number;
  current?: number;
  nackMessage?: string;
  /** SYNCED on the word of the lineage's PROGRESS item, not of the Envoy's own (older) state. */
  fromProgress?: true;
}

/**
 * What the Envoy's lineage's PROGRESS item says of it (progress-member-view.ts): programmed through at
 * least this seq of `lineage`. On the fleet-size path a state is written only when its class changes,
 * so its ACKed versions can be waves behind; programmed through S means every subscribed type is ACKed
 * at or past its version at S (programmed-through.ts), so a type whose current version on that lineage
 * is at most S runs it.
 */
export interface ProgressVouch {
  lineage: string;
  programmedThroughAtLeast: number;
}

export function typeSyncReports(envoy: EnvoyState, lineages: ReadonlyMap<string, LineageState>, vouch?: ProgressVouch): TypeSyncReport[] {
  const reports: TypeSyncReport[] = [];
  for (const [typeUrl, type] of Object.entries(envoy.types)) {
    if (!type.subscribed) continue;
    const lineage = lineages.get(type.lineage);
    const current = lineage === undefined ? undefined : currentVersion(lineage.typeHistory[typeUrl]) ?? 0;
    const base = { typeUrl, ...(type.acked === undefined ? {} : { acked: type.acked }), ...(current === undefined ? {} : { current }) };
    let report: TypeSyncReport;
    if (isUnresolvedNack(type.nack, type.acked)) report = { ...base, status: 'NACKED', nackMessage: type.nack.message };
    else if (current === undefined) report = { ...base, status: 'UNKNOWN' };
    else if (type.acked !== undefined && type.acked >= current) report = { ...base, status: 'SYNCED' };
    else if (vouch !== undefined && vouch.lineage === type.lineage && current <= vouch.programmedThroughAtLeast) report = { ...base, status: 'SYNCED', fromProgress: true };
    else if (type.pending !== undefined) report = { ...base, status: 'STALE' };
    else report = { ...base, status: 'NOT_SENT' };
    reports.push(report);
  }
  return reports.sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : a.typeUrl > b.typeUrl ? 1 : 0));
}
