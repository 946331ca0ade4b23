// The child-process side of startFleetProcess (./fleet-process.ts): a simulated Envoy fleet on its
// own event loop. Started with `node --import tsx` through child_process.fork; the protocol is in
// ./fleet-process-protocol.ts. Logs are pino JSON lines on stderr, which the parent forwards to its
// own logger. Why a process of its own: a fleet-wide SotW push at 1,000 Envoys × 1,000 objects is
// ~1 GB of responses to decode, and in production Envoys are other machines, not the gateway's loop.
import pino, { type Logger } from 'pino';
import { runAsForkedChild } from '../child-process';
import { ackCountFromTruth, configuredCountOf, connectedCountOf, lastAcksFromTruth, programmedAtFromTruth } from './fleet-queries';
import { childMessageSchema, parentMessageSchema, type ChildMessage, type FleetQuery } from './fleet-process-protocol';
import { buildFleet, routableOf, type BuiltFleet } from './fleet-spec';
import { tapFleetResponses, type ResponseContents } from '../../../test/truth/content';
import { fleetTrueWriteViolations } from '../../../test/truth/fleet-true-writes';

let built: BuiltFleet | undefined;
/** The provenance tap, when the parent asked for it at start. */
let contents: ResponseContents | undefined;
let logger: Logger = pino({ level: 'warn' }, pino.destination(2));
let exiting = false;

function send(message: ChildMessage): void {
  // Checked on the way out too, so a protocol drift fails here, loudly, not as a silent parent timeout.
  const checked = childMessageSchema.parse(message);
  if (process.connected) process.send?.(checked);
}

function answer(query: FleetQuery, fleet: BuiltFleet): unknown {
  const nodeIds = fleet.envoys.map((envoy) => envoy.id);
  switch (query.kind) {
    case 'connectedCount':
      return connectedCountOf(fleet.envoys);
    case 'configuredCount':
      return configuredCountOf(fleet.fleet.truth, nodeIds);
    case 'ackCount':
      return ackCountFromTruth(fleet.fleet.truth, nodeIds, query.since);
    case 'lastAcks':
      return lastAcksFromTruth(fleet.fleet.truth, nodeIds, query.names, query.since);
    case 'programmedAt':
      return programmedAtFromTruth(fleet.fleet.truth, nodeIds, query.targets, query.since);
    case 'routable':
      return routableOf(fleet, query.keys, query.nodeIds);
    case 'trueWrites':
      if (contents === undefined) throw new Error('trueWrites needs the content tap: start the fleet with tapContents');
      return fleetTrueWriteViolations(fleet, contents, query);
  }
}

function closeAndExit(code: number): void {
  if (exiting) return;
  exiting = true;
  try {
    built?.fleet.close();
  } catch (error) {
    logger.error({ err: error }, 'fleet child: close failed');
  }
  logger.flush();
  // Let cancelled streams' RST frames leave before the sockets go.
  setTimeout(() => process.exit(code), 50).unref();
}

function onMessage(raw: unknown): void {
  const parsed = parentMessageSchema.safeParse(raw);
  if (!parsed.success) {
    // A start the child cannot use is fatal (the parent rejects with this stderr); anything else is one bad message.
    if (!built && raw !== null && typeof raw === 'object' && 'type' in raw && raw.type === 'start') {
      process.stderr.write(`fleet child: invalid start message: ${parsed.error.issues.slice(0, 3).map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}\n`);
      process.exit(1);
    }
    logger.error({ issues: parsed.error.issues.slice(0, 5) }, 'fleet child: invalid message from parent, ignored');
    return;
  }
  const message = parsed.data;
  switch (message.type) {
    case 'start': {
      if (built) {
        logger.error('fleet child: second start message ignored');
        return;
      }
      const startedAt = Date.now();
      logger = pino({ level: message.logLevel, base: { component: 'fleet', pid: process.pid } }, pino.destination(2));
      // Streams capture the codec's decoder when they open, so the tap goes in before the fleet exists.
      if (message.tapContents === true) contents = tapFleetResponses();
      try {
        built = buildFleet(message.spec, logger);
      } catch (error) {
        process.stderr.write(`fleet child: invalid fleet spec: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      }
      built.fleet.connectAll();
      send({ type: 'started', envoys: built.envoys.length, startupMs: Date.now() - startedAt });
      return;
    }
    case 'query': {
      if (!built) {
        send({ type: 'reply', id: message.id, ok: false, error: 'fleet not started' });
        return;
      }
      try {
        send({ type: 'reply', id: message.id, ok: true, result: answer(message.query, built) });
      } catch (error) {
        logger.error({ err: error, query: message.query.kind }, 'fleet child: query failed');
        send({ type: 'reply', id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) });
      }
      return;
    }
    case 'close':
      closeAndExit(0);
      return;
  }
}

// No orphan keeps streams open against the gateway once the parent is gone.
runAsForkedChild('fleet child', { onMessage, closeAndExit });
