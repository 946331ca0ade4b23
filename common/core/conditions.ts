// The Kubernetes condition we write (metav1.Condition) and how it is merged into an object's status.
// Conditions are a list map keyed by `type`: we replace only ours and leave every other condition as
// it was (Contour and others keep their own conditions there). `lastTransitionTime` is "the last time
// the condition transitioned from one status to another" (metav1.Condition), so it changes only when
// status flips, not when reason or message change.
import { isNackBlocker, type Blocker, type BlockingNack } from './blocker';
import { BLOCKER_VERDICT, type Convergence } from './convergence';
import type { Condition, ConditionStatus } from './metav1-condition';
import { truncateUtf8 } from './truncate';
import { shortTypeName } from './type-urls';
import { displaySafe } from './untrusted-text';

export const DEFAULT_CONDITION_TYPE = 'EnvoyProgrammed';

/**
 * Gateway API routes (HTTPRoute, GRPCRoute) have no top-level `status.conditions`: conditions live in
 * `status.parents[]`, one entry per parent and controller, and custom condition types must be
 * domain-prefixed (GEP-1364). Our verdict goes in entries of our own, under this controllerName,
 * one per `spec.parentRefs` entry, with this condition type (docs/CONVERGENCE.md, "Gateway API routes").
 */
export const STATUS_CONTROLLER_NAME = 'xds-programmed.dev/status';
export const GATEWAY_API_CONDITION_TYPE = 'xds-programmed.dev/Programmed';
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

/** A condition before it is merged (lastTransitionTime is decided by setCondition). */
export type ConditionDraft = Omit<Condition, 'lastTransitionTime'>;

export interface BuildConditionOptions {
  type?: string;
  /** How many blockers to name before "and N more". */
  maxListed?: number;
  /** Cap per quoted Envoy message, UTF-8 bytes. */
  maxQuotedMessageBytes?: number;
}

/** metav1.Condition message limit. */
export const MAX_CONDITION_MESSAGE_LENGTH = 32768;

function formatSeconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))}s`;
}

// The node id and the NACK text are the Envoy's own words (untrusted-text.ts): shown with unsafe
// characters replaced, and the NACK text capped, so no Envoy can forge a line of the message, reorder
// it on screen or push the rest of it past the limit.
function describeBlocker(blocker: Blocker, now: number | undefined, maxQuoted: number): string {
  const types = (typeUrls: string[]): string => typeUrls.map(shortTypeName).join(', ');
  const envoy = displaySafe(blocker.nodeId);
  switch (blocker.reason) {
    case 'nacked':
      return blocker.nacks
        .map((nack) => `${envoy} rejected ${shortTypeName(nack.typeUrl)}: ${truncateUtf8(displaySafe(nack.message), maxQuoted)}`)
        .join('; ');
    case 'blocked':
      // Not this object's rejection: say whose and which resource, and quote the Envoy so the other
      // object's owner can act. "<envoy> rejected <type> …: <message>", as for a rejection of ours.
      return blocker.nacks
        .map((nack) => `${envoy} rejected ${shortTypeName(nack.typeUrl)} of ${(nack.objects ?? []).map(describeObjectKey).join(', ')}${rejectedResources(nack)}, not of this object: ${truncateUtf8(displaySafe(nack.message), maxQuoted)}`)
        .join('; ');
    case 'stuck': {
      // A reference hold waits on the Envoy's request, not its answer: say so, or the reader looks
      // for a missing ACK the Envoy already sent.
      const unrequested = blocker.unrequested ?? [];
      const unanswered = blocker.typeUrls.filter((typeUrl) => !unrequested.includes(typeUrl));
      const waits = [
        ...(unanswered.length > 0 ? [`has not answered ${types(unanswered)}`] : []),
        ...(unrequested.length > 0 ? [`has not asked for the ${types(unrequested)} names its accepted config references`] : []),
      ];
      return `${envoy} ${waits.join(' and ')}${now === undefined ? '' : ` for ${formatSeconds(now - blocker.since)}`}`;
    }
    case 'noWatermark':
      return `${envoy} (its gateway has not yet mapped this generation)`;
    case 'pending':
      return blocker.typeUrls.length > 0 ? `${envoy} (${types(blocker.typeUrls)})` : `${envoy} (no subscriptions yet)`;
  }
}

/** " (resource a, b)" for a NACK whose blame lists resources (names the control plane chose: made display-safe). */
function rejectedResources(nack: BlockingNack): string {
  const resources = nack.resources ?? [];
  if (resources.length === 0) return '';
  return ` (${resources.length === 1 ? 'resource' : 'resources'} ${resources.map(displaySafe).join(', ')})`;
}

/** `group/Kind/namespace/name` as a reader names it: `Kind namespace/name`. */
function describeObjectKey(key: string): string {
  const [, kind, namespace, name] = key.split('/');
  if (kind === undefined || name === undefined) return displaySafe(key);
  return `${kind} ${namespace === '' || namespace === undefined ? '' : `${namespace}/`}${name}`;
}

/**
 * The condition for a convergence result, with a message a human can act on, e.g.
 * "4/5 Envoys programmed at generation 7; envoy-c rejected RDS: <message>; waiting for envoy-b (RDS)".
 * Pass `now` to say for how long stuck Envoys have been silent.
 */
export function buildCondition(convergence: Convergence, options: BuildConditionOptions = {}, now?: number): ConditionDraft {
  const type = options.type ?? DEFAULT_CONDITION_TYPE;
  const maxListed = Math.max(1, options.maxListed ?? 5);
  const maxQuoted = options.maxQuotedMessageBytes ?? 1024;
  const { generation, programmed, total } = convergence;
  const base = { type, observedGeneration: generation };
  const draft = (status: ConditionStatus, reason: string, message: string): ConditionDraft => ({
    ...base,
    status,
    reason,
    message: truncateUtf8(message, MAX_CONDITION_MESSAGE_LENGTH),
  });
  switch (convergence.state) {
    case 'GenerationNotObservable':
      return draft('Unknown', 'GenerationNotObservable', `cannot tell when generation ${generation} reaches Envoys: ${convergence.notObservableReason ?? 'no signal for this kind'}`);
    case 'Invalid':
      // The controller's words, like an Envoy's NACK text: made display-safe and capped.
      return draft('False', 'Invalid', `the controller rejected generation ${generation}: ${truncateUtf8(displaySafe(convergence.controllerMessage ?? 'no message'), maxQuoted)}`);
    case 'NoEnvoys':
      return draft('Unknown', 'NoEnvoys', `no live Envoys are connected, so whether generation ${generation} is programmed cannot be known`);
    case 'Programmed':
      return draft('True', 'Programmed', `${programmed}/${total} Envoys programmed at generation ${generation}`);
    default: {
      const listed = convergence.blockers.slice(0, maxListed);
      const parts: string[] = [`${programmed}/${total} Envoys programmed at generation ${generation}`];
      // Rejections first, then stuck Envoys, then the ones merely waited for: the blockers that alone
      // leave a generation Pending (BLOCKER_VERDICT).
      const rejected = listed.filter(isNackBlocker).map((b) => describeBlocker(b, now, maxQuoted));
      const stuck = listed.filter((b) => b.reason === 'stuck').map((b) => describeBlocker(b, now, maxQuoted));
      const waiting = listed.filter((b) => BLOCKER_VERDICT[b.reason] === 'Pending').map((b) => describeBlocker(b, now, maxQuoted));
      parts.push(...rejected, ...stuck);
      if (waiting.length > 0) parts.push(`waiting for ${waiting.join(', ')}`);
      const more = convergence.blockers.length - listed.length;
      if (more > 0) parts.push(`and ${more} more`);
      const reason = convergence.state === 'Rejected' ? 'Rejected' : convergence.state === 'Blocked' ? 'BlockedByOtherObject' : convergence.state === 'Stuck' ? 'Stuck' : 'Pending';
      return draft('False', reason, parts.join('; '));
    }
  }
}

/** RFC 3339 with milliseconds, as Kubernetes accepts for metav1.Time. */
export function formatTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/**
 * Merges `condition` into `conditions` by type: replaces ours in place (or appends it), keeps
 * lastTransitionTime unless the status flipped, and returns every other condition unchanged.
 */
export function setCondition(conditions: readonly Condition[], condition: ConditionDraft | Condition, now: number): Condition[] {
  const index = conditions.findIndex((existing) => existing.type === condition.type);
  const existing = index >= 0 ? conditions[index] : undefined;
  const lastTransitionTime = existing !== undefined && existing.status === condition.status ? existing.lastTransitionTime : formatTime(now);
  const merged: Condition = {
    type: condition.type,
    status: condition.status,
    observedGeneration: condition.observedGeneration,
    lastTransitionTime,
    reason: condition.reason,
    message: condition.message,
  };
  if (index < 0) return [...conditions, merged];
  return conditions.map((other, i) => (i === index ? merged : other));
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

/**
 * Whether writing `next` over `previous` changes anything a reader acts on. With `includeMessage`
 * false, message-only changes (e.g. "3/5" → "4/5") do not count: that keeps Kubernetes writes per
 * generation O(1) in fleet size (invariant 4); the status writer chooses.
 */
export function conditionChanged(
  previous: ConditionDraft | Condition | undefined,
  next: ConditionDraft | Condition,
  options: { includeMessage?: boolean } = {},
): boolean {
  if (previous === undefined) return true;
  return (
    previous.type !== next.type ||
    previous.status !== next.status ||
    previous.reason !== next.reason ||
    previous.observedGeneration !== next.observedGeneration ||
    ((options.includeMessage ?? true) && previous.message !== next.message)
  );
}
