// Small builders shared by the core unit tests.
import type { EnvoyState, TypeState } from '../../../common/core';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';

export const L1 = 'gw-a.boot1.edge';
export const L2 = 'gw-b.boot1.edge';
export const CDS = CDS_TYPE_URL;
export const EDS = EDS_TYPE_URL;
export const LDS = LDS_TYPE_URL;
export const RDS = RDS_TYPE_URL;

export const T0 = 1_700_000_000_000;

export function envoy(nodeId: string, types: Record<string, Partial<TypeState>>, overrides: Partial<EnvoyState> = {}): EnvoyState {
  const full: Record<string, TypeState> = {};
  for (const [typeUrl, type] of Object.entries(types)) full[typeUrl] = { lineage: L1, subscribed: true, ...type };
  return {
    nodeId,
    cluster: 'edge',
    group: 'edge',
    metadata: {},
    lineage: L1,
    status: 'CONNECTED',
    connectedAt: T0,
    lastSeenAt: T0,
    types: full,
    rev: 0,
    ...overrides,
  };
}
