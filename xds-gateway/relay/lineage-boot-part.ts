// The boot part of the lineages one gateway process creates (`<instanceId>.<bootPart>.<groupId>`,
// common/core version.ts makeLineage): its boot id for a group's first lineage, the boot id with a
// counter suffix for every later one (a moved, freed or re-targeted group). Both directions live here
// so the process can tell its own lineages from any other writer's (ownsLineage).
import { lineageParts } from '../../common/core';

/** The boot part of a group's lineage: `bootId` for its first, `<bootId>-l<epoch>` after that. */
export function lineageBootPart(bootId: string, epoch: number | undefined): string {
  if (epoch === undefined) return bootId;
  const suffix = `-l${epoch}`;
  return `${bootId.slice(0, 63 - suffix.length)}${suffix}`;
}

/**
 * Whether `lineage` is one this process (instance `instanceId`, boot `bootId`) created. Only such a
 * lineage's connections are known to this process for certain: another boot of the same instance
 * is another process.
 */
export function ownsLineage(lineage: string, instanceId: string, bootId: string): boolean {
  const parts = lineageParts(lineage);
  if (parts === undefined || parts.instanceId !== instanceId) return false;
  const bootPart = parts.bootId;
  if (bootPart === bootId) return true;
  const epoch = /-l([0-9]+)$/.exec(bootPart)?.[1];
  return epoch !== undefined && bootPart === lineageBootPart(bootId, Number(epoch));
}
