// Shared fixtures for the control-plane integration tests.
import pino from 'pino';
import type { XdsEvent } from '../../../infra/local/control-plane/xds-events';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { eventually as pollEventually } from '../../support/eventually';

/** Quiet logger unless LOG_LEVEL is set. */
export const testLogger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

export function proxy(
  name: string,
  fqdn: string,
  services: Array<{ name: string; port: number; weight?: number }>,
  extra: { namespace?: string; prefix?: string; annotations?: Record<string, string>; tlsSecret?: string } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      virtualhost: { fqdn, ...(extra.tlsSecret ? { tls: { secretName: extra.tlsSecret } } : {}) },
      routes: [{ conditions: extra.prefix ? [{ prefix: extra.prefix }] : [], services }],
    },
  };
}

export function endpoints(name: string, ip: string, port: number, namespace = 'default'): Record<string, unknown> {
  return { metadata: { name, namespace }, subsets: [{ addresses: [{ ip }], ports: [{ port }] }] };
}

/** Polls `predicate` until true (generous timeout; the tests never assert on speed). */
export function eventually<T>(
  probe: () => T | undefined | false,
  description: string,
  timeoutMs = 20_000,
): Promise<T> {
  return pollEventually(probe, description, { timeoutMs, intervalMs: 20 });
}

export { sleep } from '../../support/eventually';

export function eventsOf(controlPlane: ControlPlane, filter: (event: XdsEvent) => boolean): XdsEvent[] {
  return controlPlane.xdsEvents.all().filter(filter);
}
