// Gateway versions (docs/ARCHITECTURE.md, "Core model"). Upstream versions are not orderable (Contour
// sends a UUID per rebuild), so the gateway stamps its own: one counter per lineage, shared by all
// types. A lineage is one gateway process lifetime serving one node group, so a version can never be
// confused across instances or restarts, and versions of different lineages are never compared.
import { parsedError, parsedOk, type Parsed } from './result';

/** `<instanceId>.<bootId>.<groupId>`, each part `[a-z0-9-]{1,63}`. */
export type Lineage = string;

export interface GatewayVersion {
  lineage: Lineage;
  /** Position in the lineage's single counter; a non-negative safe integer. */
  seq: number;
}

export const VERSION_PREFIX = 'xp1';

const LINEAGE_PART = '[a-z0-9-]{1,63}';
const LINEAGE_PATTERN = `${LINEAGE_PART}\\.${LINEAGE_PART}\\.${LINEAGE_PART}`;
const LINEAGE_RE = new RegExp(`^${LINEAGE_PATTERN}$`);
const LINEAGE_PART_RE = new RegExp(`^${LINEAGE_PART}$`);
// Strict decimal: no sign, no leading zeros, so each version has exactly one spelling.
const VERSION_RE = new RegExp(`^${VERSION_PREFIX}:(${LINEAGE_PATTERN}):(0|[1-9][0-9]{0,15})$`);

export function isValidLineage(lineage: string): boolean {
  return LINEAGE_RE.test(lineage);
}

export function isValidSeq(seq: number): boolean {
  return Number.isSafeInteger(seq) && seq >= 0;
}

/** Builds a lineage from its parts; fails (never throws) if a part is not `[a-z0-9-]{1,63}`. */
export function makeLineage(instanceId: string, bootId: string, groupId: string): Parsed<Lineage> {
  for (const [name, part] of [['instanceId', instanceId], ['bootId', bootId], ['groupId', groupId]] as const) {
    if (!LINEAGE_PART_RE.test(part)) {
      return parsedError(`lineage ${name} ${JSON.stringify(part)} must match [a-z0-9-]{1,63}`);
    }
  }
  return parsedOk(`${instanceId}.${bootId}.${groupId}`);
}

/** The parts makeLineage joined, or undefined for a string that is not a lineage. */
export function lineageParts(lineage: string): { instanceId: string; bootId: string; groupId: string } | undefined {
  if (!isValidLineage(lineage)) return undefined;
  const [instanceId = '', bootId = '', groupId = ''] = lineage.split('.');
  return { instanceId, bootId, groupId };
}

/** `xp1:<lineage>:<seq>`. Throws only on a programming error (invalid lineage or seq). */
export function encodeVersion(version: GatewayVersion): string {
  if (!isValidLineage(version.lineage)) throw new Error(`invalid lineage ${JSON.stringify(version.lineage)}`);
  if (!isValidSeq(version.seq)) throw new Error(`invalid seq ${String(version.seq)}`);
  return `${VERSION_PREFIX}:${version.lineage}:${version.seq}`;
}

/**
 * Parses a version string an Envoy echoed back. Anything else (empty, an upstream UUID, another
 * format, out-of-range numbers) is a failure with a reason, never an exception: Envoys send back
 * whatever they last accepted, including versions from before they were moved behind the gateway.
 */
export function parseVersion(text: string): Parsed<GatewayVersion> {
  if (text.length === 0) return parsedError('empty version');
  const match = VERSION_RE.exec(text);
  if (match === null) {
    return parsedError(`not a gateway version (want ${VERSION_PREFIX}:<instance>.<boot>.<group>:<seq>): ${JSON.stringify(text.slice(0, 100))}`);
  }
  const seq = Number(match[2]);
  if (!isValidSeq(seq)) return parsedError(`version seq out of range: ${JSON.stringify(text.slice(0, 100))}`);
  return parsedOk({ lineage: match[1] as string, seq });
}

export type VersionOrder = -1 | 0 | 1 | 'incomparable';

/** Orders two versions of the same lineage; versions of different lineages are 'incomparable'. */
export function compareVersions(a: GatewayVersion, b: GatewayVersion): VersionOrder {
  if (a.lineage !== b.lineage) return 'incomparable';
  return a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0;
}
