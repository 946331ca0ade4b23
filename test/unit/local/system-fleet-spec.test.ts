// The local system's fleet as data (infra/local/system/fleet.ts systemFleetSpec) with several gateways:
// each role's Envoys split into contiguous ranges, one group per gateway, as even as the count allows,
// with the node ids of the one-gateway fleet (the truth checker and tests pick Envoys by them).
import { nodeFromTemplate, type FleetSpec } from '../../../infra/local/envoys/fleet-spec';
import { systemFleetSpec } from '../../../infra/local/system/fleet';

const GATEWAYS = ['127.0.0.1:1001', '127.0.0.1:1002', '127.0.0.1:1003'];

function nodeIds(spec: FleetSpec): string[] {
  return spec.groups.flatMap((group) => Array.from({ length: group.count }, (_, k) => nodeFromTemplate(group.node, group.firstIndex + k).id));
}

describe('systemFleetSpec with several gateways', () => {
  const one = systemFleetSpec({ gatewayAddresses: GATEWAYS.slice(0, 1), envoys: 11, nackRate: 0.2, slowEnvoys: 2, slowAckMs: 100 });
  const three = systemFleetSpec({ gatewayAddresses: GATEWAYS, envoys: 11, nackRate: 0.2, slowEnvoys: 2, slowAckMs: 100 });

  it('keeps the node ids and roles of the one-gateway fleet', () => {
    expect(nodeIds(three).sort()).toEqual(nodeIds(one).sort());
    expect(new Set(nodeIds(three)).size).toBe(11);
    for (const role of ['nacking', 'slow', 'normal']) {
      const count = (spec: FleetSpec): number => spec.groups.filter((group) => group.role === role).reduce((sum, group) => sum + group.count, 0);
      expect(count(three)).toBe(count(one));
    }
  });

  it('gives every gateway a share as even as the counts allow', () => {
    expect(one.groups.every((group) => group.target === undefined)).toBe(true);
    const perGateway = GATEWAYS.map((target) => three.groups.filter((group) => group.target === target).reduce((sum, group) => sum + group.count, 0));
    expect(perGateway.reduce((a, b) => a + b, 0)).toBe(11);
    expect(Math.max(...perGateway) - Math.min(...perGateway)).toBeLessThanOrEqual(3);
    for (const role of ['nacking', 'slow', 'normal']) {
      const counts = three.groups.filter((group) => group.role === role).map((group) => group.count);
      expect(counts).toHaveLength(3);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
  });

  it('refuses a fleet with no gateway to connect to', () => {
    expect(() => systemFleetSpec({ gatewayAddresses: [], envoys: 1, nackRate: 0, slowEnvoys: 0, slowAckMs: 0 })).toThrow(/gateway address/);
  });
});
