// startLocalSystem when a part cannot start: a gateway that cannot bind leaves the rest running and
// is reported as unavailable (Envoys then talk to the control plane directly); a failure of an
// essential part rejects, after closing what had started (its ports are free again).
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { portLayout, startLocalSystem } from '../../../infra/local/system';
import { eventually } from './helpers';

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

// The layout's ports are taken below the kernel's ephemeral range (Linux default 32768-60999): there,
// no other test's random listener or outgoing connection can take base + 1 between the system's
// close and the check that it is free again (that race made this suite flaky once the fleet, dynalite
// and the gateway ran in child processes with many connections of their own).
const LAYOUT_PORTS = { from: 20_000, to: 32_000 };

/** Occupies port P = base + offset (a component at that layout offset will ask for it); returns base. */
async function occupiedAt(offset: number): Promise<{ base: number; blocker: Server }> {
  for (let attempt = 0; ; attempt++) {
    const port = LAYOUT_PORTS.from + offset + Math.floor(Math.random() * (LAYOUT_PORTS.to - LAYOUT_PORTS.from - 20));
    try {
      return { base: port - offset, blocker: await occupy(port) };
    } catch (error) {
      if (attempt >= 50) throw error;
    }
  }
}

describe('local system with parts that cannot start', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('runs without the gateway and says why', async () => {
    const { base, blocker } = await occupiedAt(3);
    expect(portLayout(base).gatewayXds).toBe(base + 3);
    const dir = mkdtempSync(join(tmpdir(), 'xp-degraded-'));
    dirs.push(dir);
    try {
      const system = await startLocalSystem({ envoys: 2, grpcClients: 0, objects: 1, portBase: base, stateDir: dir }, { logger });
      try {
        expect(system.unavailable.map((part) => part.component)).toEqual(['gateway']);
        expect(system.unavailable[0]?.reason).toMatch(/EADDRINUSE|address already in use|bind|No address added/i);
        expect(system.endpoints.gatewayXds).toBeUndefined();
        expect(system.endpoints.queryUrl).toBe(`http://127.0.0.1:${base + 2}`);
        // The Envoys get their config straight from the control plane.
        await eventually(() => system.fleet.simEnvoys.every((envoy) => envoy.acceptedVersion('type.googleapis.com/envoy.config.cluster.v3.Cluster') !== undefined), 'Envoys configured by the control plane');
        const healthz = await fetch(`${system.endpoints.queryUrl}/healthz`, { headers: { authorization: `Bearer ${system.endpoints.queryToken}` } });
        expect(healthz.status).toBe(200);
      } finally {
        await system.close();
      }
    } finally {
      await close(blocker);
    }
  }, 120_000);

  it('rejects when Kubernetes cannot start, after closing DynamoDB (its port is free again)', async () => {
    const { base, blocker } = await occupiedAt(0);
    const dir = mkdtempSync(join(tmpdir(), 'xp-failed-'));
    dirs.push(dir);
    try {
      await expect(startLocalSystem({ envoys: 1, objects: 1, portBase: base, stateDir: dir }, { logger })).rejects.toThrow(/EADDRINUSE|address already in use/i);
      const reused = await occupy(base + 1);
      await close(reused);
    } finally {
      await close(blocker);
    }
  }, 120_000);
});
