// The fleet model shared by the property tests: a Simulation drives the core only through its
// transition functions while keeping its own account of what each Envoy really runs.
import fc from 'fast-check';
import {
  applyClassifiedRequest,
  applyConnect,
  applyDisconnect,
  applyExpire,
  applyHeartbeat,
  applySent,
  applySubscribe,
  buildCondition,
  classifyRequest,
  encodeVersion,
  recordSent,
  computeConvergence,
  newEnvoyState,
  shouldExpire,
  type Convergence,
  type EnvoyState,
  type LineageWatermark,
  type SentRecord,
  type Watermark,
  formatObjectRef,
  type NackBlame,
} from '../../../common/core';
import { CDS, EDS, L1, L2, LDS, RDS, T0 } from './fixtures';

export const TYPES = [CDS, EDS, LDS, RDS] as const;
export const LINEAGES = [L1, L2] as const;
export const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
/** Blames a modelled NACK may carry: none (everyone's), this object's, another object's. */
const BLAMES: ReadonlyArray<NackBlame | undefined> = [
  undefined,
  { basis: 'named', objects: [formatObjectRef(object)], resources: ['ns/svc-r/80'] },
  { basis: 'changed', objects: ['x.dev/Route/ns/other'], resources: ['ns/svc-other/80'] },
];
const GENERATION = 3;

export type Action =
  | { k: 'change'; lineage: number; type: number }
  | { k: 'mark'; lineage: number }
  | { k: 'send'; e: number; type: number }
  | { k: 'ack'; e: number; type: number; stale?: boolean }
  | { k: 'nack'; e: number; type: number; msg: number; stale?: boolean }
  | { k: 'disconnect'; e: number }
  | { k: 'reconnect'; e: number; restart: boolean; lineage: number }
  | { k: 'heartbeat'; e: number }
  | { k: 'addNames'; e: number; type: number }
  | { k: 'vanish'; e: number }
  | { k: 'expire' }
  | { k: 'tick'; dt: number };

const idx = fc.nat(20);
export const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.record({ k: fc.constant('change' as const), lineage: fc.nat(1), type: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ k: fc.constant('mark' as const), lineage: fc.nat(1) }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('send' as const), e: idx, type: idx }), weight: 5 },
  { arbitrary: fc.record({ k: fc.constant('ack' as const), e: idx, type: idx, stale: fc.boolean() }, { requiredKeys: ['k', 'e', 'type'] }), weight: 5 },
  { arbitrary: fc.record({ k: fc.constant('nack' as const), e: idx, type: idx, msg: fc.nat(5), stale: fc.boolean() }, { requiredKeys: ['k', 'e', 'type', 'msg'] }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('disconnect' as const), e: idx }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('reconnect' as const), e: idx, restart: fc.boolean(), lineage: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ k: fc.constant('heartbeat' as const), e: idx }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('addNames' as const), e: idx, type: idx }), weight: 2 },
  { arbitrary: fc.record({ k: fc.constant('vanish' as const), e: idx }), weight: 1 },
  { arbitrary: fc.constant({ k: 'expire' as const }), weight: 1 },
  { arbitrary: fc.record({ k: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 2 * policy.ttlMs }) }), weight: 2 },
);

export const fleetArb = fc.array(
  fc.record({
    lineage: fc.nat(1),
    types: fc.subarray([...TYPES], { minLength: 1 }),
  }),
  { minLength: 1, maxLength: 6 },
);

/** What the test itself knows about one Envoy, from the raw events only. */
export interface ModelEnvoy {
  nodeId: string;
  /** Lineage of the gateway the Envoy is (or was last) connected to; it may move on reconnect. */
  lineage: string;
  types: readonly string[];
  connected: boolean;
  expired: boolean;
  vanished: boolean;
  lastSeen: number;
  /** Version each type really runs (last ACKed since the Envoy's last restart), on its lineage. */
  running: Record<string, { lineage: string; seq: number } | undefined>;
  /** Latest response sent on the current stream and not yet answered. */
  outstanding: Record<string, number | undefined>;
  /** The gateway's per-stream record of responses sent, per type (nonces), as classifyRequest needs. */
  sentRecords: Record<string, SentRecord | undefined>;
  /** Names added to the type's subscription and not yet in an ACKed response (`sent`: a response went out since). */
  namesPending: Record<string, { sent: boolean } | undefined>;
  /** Outcome of the latest answered response on the type. */
  lastAnswer: Record<string, { outcome: 'ACK' } | { outcome: 'NACK'; message: string; elsewhere: boolean } | undefined>;
  /**
   * The type ACKed on its current lineage since it last moved there: what the gateway can vouch for
   * when the Envoy resumes with that version (core requests.ts servedThrough). Moving to another
   * lineage and back forgets it, so a resumed version is not taken on the Envoy's word alone.
   */
  ackedHere: Record<string, boolean>;
}

export class Simulation {
  now = T0;
  readonly seqs: Record<string, number> = {};
  readonly history: Record<string, Record<string, number>> = {}; // lineage → type → version (last change seq)
  readonly watermarks: Record<string, LineageWatermark> = {};
  readonly model: ModelEnvoy[] = [];
  readonly core = new Map<string, EnvoyState>();
  nonces = 0;

  constructor(fleet: { lineage: number; types: string[] }[]) {
    for (const lineage of LINEAGES) {
      this.seqs[lineage] = 0;
      this.history[lineage] = Object.fromEntries(TYPES.map((t) => [t, 0]));
    }
    fleet.forEach((spec, i) => {
      const lineage = LINEAGES[spec.lineage]!;
      const nodeId = `envoy-${i}`;
      this.model.push({
        nodeId, lineage, types: spec.types, connected: true, expired: false, vanished: false, lastSeen: this.now,
        running: {}, outstanding: {}, sentRecords: {}, namesPending: {}, lastAnswer: {}, ackedHere: {},
      });
      let state = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage, now: this.now });
      for (const typeUrl of spec.types) state = applySubscribe(state, { typeUrl, lineage, now: this.now });
      this.core.set(nodeId, state);
    });
  }

  private envoyAt(e: number): ModelEnvoy {
    return this.model[e % this.model.length]!;
  }

  private update(m: ModelEnvoy, f: (s: EnvoyState) => EnvoyState): void {
    this.core.set(m.nodeId, f(this.core.get(m.nodeId)!));
  }

  private seen(m: ModelEnvoy): void {
    m.lastSeen = this.now;
    m.expired = false;
  }

  currentVersion(lineage: string, typeUrl: string): number {
    return this.history[lineage]![typeUrl]!;
  }

  apply(action: Action): void {
    switch (action.k) {
      case 'change': {
        const lineage = LINEAGES[action.lineage]!;
        const seq = ++this.seqs[lineage]!;
        this.history[lineage]![TYPES[action.type]!] = seq;
        return;
      }
      case 'mark': {
        const lineage = LINEAGES[action.lineage]!;
        // First write wins: the watermark is the first version that reflects the generation.
        this.watermarks[lineage] ??= { seq: this.seqs[lineage]!, types: { ...this.history[lineage]! }, at: this.now };
        return;
      }
      case 'expire':
        for (const m of this.model) {
          const state = this.core.get(m.nodeId)!;
          if (shouldExpire(state, this.now, policy.ttlMs)) this.update(m, applyExpire);
          if (!m.expired && this.now - m.lastSeen > policy.ttlMs) m.expired = true;
        }
        return;
      case 'tick':
        this.now += action.dt;
        return;
      default:
        break;
    }
    const m = this.envoyAt(action.e);
    if (m.vanished) return;
    switch (action.k) {
      case 'vanish':
        m.vanished = true; // gone without a word: no disconnect, no more heartbeats
        return;
      case 'reconnect': {
        if (m.connected) return;
        m.connected = true;
        this.seen(m);
        // A restarted Envoy starts from nothing; otherwise names it added are still missing, and only a
        // response on the new stream can bring them.
        if (action.restart) {
          m.running = {};
          m.namesPending = {};
        } else {
          for (const typeUrl of Object.keys(m.namesPending)) if (m.namesPending[typeUrl] !== undefined) m.namesPending[typeUrl] = { sent: false };
        }
        // lineage 0/1 of the action: stay; 2: move to L1; 3: move to L2 (another gateway instance).
        const target = action.lineage < 2 ? m.lineage : LINEAGES[action.lineage - 2]!;
        if (target !== m.lineage) {
          m.lastAnswer = {}; // versions (and NACKs) of the old lineage mean nothing on the new one
          m.ackedHere = {};
        }
        if (action.restart) m.ackedHere = {};
        m.lineage = target;
        const now = this.now;
        this.update(m, (s) => {
          let next = applyConnect(s, { lineage: m.lineage, now });
          for (const typeUrl of m.types) {
            // SotW: the initial request's version_info is what the Envoy runs, whichever gateway sent it.
            const running = m.running[typeUrl];
            const versionInfo = running === undefined ? '' : encodeVersion(running);
            const request = classifyRequest({ protocol: 'sotw', typeUrl, responseNonce: '', versionInfo }, undefined);
            expect(request.kind).toBe('initial');
            next = applyClassifiedRequest(next, request, { typeUrl, lineage: m.lineage, now, eventRetentionMs: 3_600_000 }).state;
          }
          return next;
        });
        return;
      }
      default:
        break;
    }
    if (!m.connected) return;
    const now = this.now;
    switch (action.k) {
      case 'disconnect':
        m.connected = false;
        if (!m.expired) m.lastSeen = now;
        m.outstanding = {};
        m.sentRecords = {};
        this.update(m, (s) => applyDisconnect(s, now));
        return;
      case 'heartbeat':
        this.seen(m);
        this.update(m, (s) => applyHeartbeat(s, now));
        return;
      case 'send': {
        const typeUrl = m.types[action.type % m.types.length]!;
        const seq = this.currentVersion(m.lineage, typeUrl);
        m.outstanding[typeUrl] = seq;
        if (m.namesPending[typeUrl] !== undefined) m.namesPending[typeUrl] = { sent: true };
        m.sentRecords[typeUrl] = recordSent(m.sentRecords[typeUrl], { nonce: `nonce-${++this.nonces}`, version: encodeVersion({ lineage: m.lineage, seq }) });
        this.update(m, (s) => applySent(s, { typeUrl, version: { lineage: m.lineage, seq }, now }));
        return;
      }
      case 'ack':
      case 'nack': {
        const typeUrl = m.types[action.type % m.types.length]!;
        const record = m.sentRecords[typeUrl];
        const seq = m.outstanding[typeUrl];
        const running = m.running[typeUrl];
        // An Envoy does not reject the very config it already runs; a NACK is of something newer.
        const rejects = action.k === 'nack' && seq !== undefined && (running === undefined || running.lineage !== m.lineage || seq > running.seq);
        const message = `bad-config-${action.k === 'nack' ? action.msg : 0}-${m.nodeId}`;
        // A late answer to an older response: must be ignored for state (classifyRequest → stale).
        const older = record !== undefined && record.sent.length >= 2 ? record.sent[record.sent.length - 2]! : undefined;
        const stale = action.stale === true && older !== undefined;
        if (!stale && seq === undefined) return; // nothing to answer
        const nonce = stale ? older.nonce : record!.sent[record!.sent.length - 1]!.nonce;
        const lastGood = running === undefined ? '' : encodeVersion(running);
        const request = classifyRequest(
          { protocol: 'sotw', typeUrl, responseNonce: nonce, versionInfo: rejects || stale ? lastGood : encodeVersion({ lineage: m.lineage, seq: seq! }), errorDetail: rejects || (stale && action.k === 'nack') ? { code: 3, message } : undefined },
          record,
        );
        const outcome = applyClassifiedRequest(this.core.get(m.nodeId)!, request, { typeUrl, lineage: m.lineage, now, eventRetentionMs: 3_600_000 });
        // The gateway's attribution (nack-blame.ts), modelled by the message: none, this object, another.
        const blame = outcome.event?.outcome === 'NACK' ? BLAMES[(action.k === 'nack' ? action.msg : 0) % BLAMES.length] : undefined;
        const nackType = outcome.state.types[typeUrl];
        if (blame !== undefined && nackType?.nack !== undefined) {
          outcome.state = { ...outcome.state, types: { ...outcome.state.types, [typeUrl]: { ...nackType, nack: { ...nackType.nack, blame } } } };
        }
        this.core.set(m.nodeId, outcome.state);
        this.seen(m);
        if (stale) {
          expect(request.kind).toBe('stale');
          expect(outcome.event).toBeUndefined();
          return;
        }
        m.outstanding[typeUrl] = undefined;
        const version = { lineage: m.lineage, seq: seq! };
        if (rejects) {
          expect(outcome.event).toMatchObject({ outcome: 'NACK', seq: seq!, message });
          m.lastAnswer[typeUrl] = { outcome: 'NACK', message, elsewhere: blame !== undefined && !blame.objects.includes(formatObjectRef(object)) };
        } else {
          expect(outcome.event).toMatchObject({ outcome: 'ACK', seq: seq! });
          m.running[typeUrl] = version;
          m.ackedHere[typeUrl] = true;
          m.lastAnswer[typeUrl] = { outcome: 'ACK' };
          if (m.namesPending[typeUrl]?.sent === true) m.namesPending[typeUrl] = undefined;
        }
        return;
      }
      case 'addNames': {
        // SotW: the Envoy asks for more resource names (a new cluster's endpoints, a new route table).
        // Its request echoes the latest nonce; if that response is outstanding, this request ACKs it;
        // otherwise version_info is what it last accepted (after a NACK: not the latest version).
        const typeUrl = m.types[action.type % m.types.length]!;
        const record = m.sentRecords[typeUrl];
        const latest = record?.sent[record.sent.length - 1];
        if (latest === undefined) return;
        const outstanding = m.outstanding[typeUrl];
        if (outstanding !== undefined) {
          m.running[typeUrl] = { lineage: m.lineage, seq: outstanding };
          m.lastAnswer[typeUrl] = { outcome: 'ACK' };
          m.outstanding[typeUrl] = undefined;
        }
        const running = m.running[typeUrl];
        const request = classifyRequest({ protocol: 'sotw', typeUrl, responseNonce: latest.nonce, versionInfo: running === undefined ? '' : encodeVersion(running) }, record);
        const outcome = applyClassifiedRequest(this.core.get(m.nodeId)!, request, { typeUrl, lineage: m.lineage, now, eventRetentionMs: 3_600_000, namesAdded: true });
        this.core.set(m.nodeId, outcome.state);
        this.seen(m);
        m.namesPending[typeUrl] = { sent: false };
        return;
      }
    }
  }

  watermark(): Watermark {
    return { observable: true, lineages: { ...this.watermarks } };
  }

  convergence(): Convergence {
    return computeConvergence({ object, generation: GENERATION, watermark: this.watermark(), envoys: [...this.core.values()], now: this.now, policy });
  }

  // ---- the independent oracle

  isLive(m: ModelEnvoy): boolean {
    return !m.expired && this.now - m.lastSeen <= policy.ttlMs;
  }

  nackedTypes(m: ModelEnvoy): { typeUrl: string; message: string; elsewhere: boolean }[] {
    return m.types.flatMap((typeUrl) => {
      const answer = m.lastAnswer[typeUrl];
      return answer?.outcome === 'NACK' ? [{ typeUrl, message: answer.message, elsewhere: answer.elsewhere }] : [];
    });
  }

  /**
   * The truth: every subscribed type runs a version at or past the watermark of the lineage that
   * version came from, and no NACK is open.
   */
  reallyProgrammed(m: ModelEnvoy): boolean {
    if (this.nackedTypes(m).length > 0) return false;
    if (m.types.some((typeUrl) => m.namesPending[typeUrl] !== undefined)) return false;
    return m.types.every((typeUrl) => {
      const running = m.running[typeUrl];
      const mark = running === undefined ? undefined : this.watermarks[running.lineage];
      return running !== undefined && mark !== undefined && running.seq >= mark.types[typeUrl]!;
    });
  }

  /**
   * What the core may know: the same, but only versions of the lineage currently serving the Envoy
   * count (a version of another gateway instance cannot be ordered against this one's). Stricter than
   * the truth, never looser.
   */
  knowablyProgrammed(m: ModelEnvoy): boolean {
    return this.reallyProgrammed(m) && m.types.every((typeUrl) => m.running[typeUrl]?.lineage === m.lineage && m.ackedHere[typeUrl] === true);
  }

  checkInvariants(): void {
    const result = this.convergence();
    const live = this.model.filter((m) => this.isLive(m));
    const blocked = new Set(result.blockers.map((b) => b.nodeId));
    // The denominator is exactly the live Envoys.
    expect(result.total).toBe(live.length);
    if (live.length === 0) {
      expect(result.state).toBe('NoEnvoys');
      return;
    }
    for (const m of live) {
      const counted = !blocked.has(m.nodeId);
      // (1) Safety: counted programmed ⇒ really programmed.
      if (counted) expect(this.reallyProgrammed(m)).toBe(true);
      // Exactness: counted programmed ⇔ programmed by what the Envoy's current gateway can know.
      expect(counted).toBe(this.knowablyProgrammed(m));
      // (2) No NACK laundering: an unanswered-by-ACK NACK blocks, and its message is reported.
      const nacks = this.nackedTypes(m);
      if (nacks.length > 0) {
        const blocker = result.blockers.find((b) => b.nodeId === m.nodeId);
        // Attribution: blocked (not Rejected) exactly when every open NACK blames another object.
        expect(blocker?.reason).toBe(nacks.every((nack) => nack.elsewhere) ? 'blocked' : 'nacked');
        if (blocker?.reason === 'nacked' || blocker?.reason === 'blocked') {
          expect(blocker.nacks.map((n) => ({ typeUrl: n.typeUrl, message: n.message }))).toEqual(
            [...nacks].sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : 1)).map(({ typeUrl, message }) => ({ typeUrl, message })),
          );
        }
      }
    }
    const condition = buildCondition(result, { maxListed: 100 }, this.now);
    if (result.state === 'Programmed') {
      // (1) stated directly: every live Envoy really runs G on every subscribed type.
      for (const m of live) expect(this.reallyProgrammed(m)).toBe(true);
      expect(condition.status).toBe('True');
    } else {
      expect(condition.status).not.toBe('True');
    }
    for (const m of live) for (const nack of this.nackedTypes(m)) expect(condition.message).toContain(nack.message);
    if (result.state === 'Rejected') expect(result.blockers.some((b) => b.reason === 'nacked')).toBe(true);
  }

  /** No more faults: everyone still around reconnects, gets the latest config and ACKs it. */
  heal(): void {
    for (let lineage = 0; lineage < LINEAGES.length; lineage++) this.apply({ k: 'mark', lineage });
    this.model.forEach((m, e) => {
      if (m.vanished) return;
      this.apply({ k: 'reconnect', e, restart: false, lineage: 0 });
      m.types.forEach((_t, type) => {
        this.apply({ k: 'send', e, type });
        this.apply({ k: 'ack', e, type });
      });
    });
  }
}

// Hand-written scenarios run before the random ones (fast-check `examples`).
const one = (lineage: number, ...types: string[]): { lineage: number; types: string[] }[] => [{ lineage, types }];
export const SCENARIOS: [{ lineage: number; types: string[] }[], Action[]][] = [
  // ACK on L1, then the Envoy moves to gateway L2 without restarting: its L1 version cannot be
  // ordered against L2's watermark, so it must not count until it ACKs on L2.
  [one(0, CDS), [{ k: 'send', e: 0, type: 0 }, { k: 'ack', e: 0, type: 0 }, { k: 'mark', lineage: 1 }, { k: 'disconnect', e: 0 },
    { k: 'reconnect', e: 0, restart: false, lineage: 3 }]],
  // NACK, then a fixed version ACKed.
  [one(0, RDS), [{ k: 'mark', lineage: 0 }, { k: 'change', lineage: 0, type: 3 }, { k: 'send', e: 0, type: 0 }, { k: 'nack', e: 0, type: 0, msg: 1 },
    { k: 'change', lineage: 0, type: 3 }, { k: 'send', e: 0, type: 0 }, { k: 'ack', e: 0, type: 0 }]],
  // Envoy restart loses its config: an old ACK must not keep counting.
  [one(0, LDS), [{ k: 'send', e: 0, type: 0 }, { k: 'ack', e: 0, type: 0 }, { k: 'mark', lineage: 0 }, { k: 'disconnect', e: 0 },
    { k: 'reconnect', e: 0, restart: true, lineage: 0 }]],
  // NACK, then a resource_names change echoing the nonce without error_detail: must stay a NACK.
  [one(0, EDS), [{ k: 'mark', lineage: 0 }, { k: 'change', lineage: 0, type: 1 }, { k: 'send', e: 0, type: 0 }, { k: 'nack', e: 0, type: 0, msg: 2 },
    { k: 'addNames', e: 0, type: 0 }]],
  // New EDS names after the ACK: the old version does not include them until a new response is ACKed.
  [one(0, EDS), [{ k: 'send', e: 0, type: 0 }, { k: 'ack', e: 0, type: 0 }, { k: 'mark', lineage: 0 }, { k: 'addNames', e: 0, type: 0 },
    { k: 'send', e: 0, type: 0 }, { k: 'ack', e: 0, type: 0 }]],
  // A connected Envoy whose heartbeats stop expires, then comes back with an ACK.
  [[{ lineage: 0, types: [CDS] }, { lineage: 0, types: [CDS] }], [{ k: 'mark', lineage: 0 }, { k: 'send', e: 0, type: 0 }, { k: 'tick', dt: 61_000 },
    { k: 'expire' }, { k: 'ack', e: 0, type: 0 }, { k: 'vanish', e: 1 }]],
];

