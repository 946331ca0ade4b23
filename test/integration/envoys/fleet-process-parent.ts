// A parent process for fleet-process.test.ts: starts a fleet child against the address in argv[2],
// prints `{"childPid": n}` once the child runs, then waits to be killed (the test SIGKILLs it and
// checks that the orphaned child exits on its own when its IPC channel closes).
import pino from 'pino';
import { startFleetProcess } from '../../../infra/local/envoys/fleet-process';

const target = process.argv[2];
if (!target) throw new Error('usage: fleet-process-parent.ts <host:port>');
startFleetProcess({
  spec: { target, groups: [{ role: 'normal', count: 3, firstIndex: 0, transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster' }], node: { idPrefix: 'orphan-', cluster: 'ingress' } }] },
  logger: pino({ level: 'warn' }),
})
  .then((child) => {
    process.stdout.write(`${JSON.stringify({ childPid: child.pid })}\n`);
    setInterval(() => undefined, 60_000);
  })
  .catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
