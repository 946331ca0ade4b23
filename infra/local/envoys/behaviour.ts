// How a simulated Envoy reacts to config. A behaviour object is plain data and is shared by
// reference between Envoys that behave alike (the fleet default is one object for all), so it
// costs nothing per Envoy. Change a single Envoy's behaviour with `SimEnvoy.setBehaviour`.
import { z } from 'zod';
import { CLUSTER_TYPE_URL, LISTENER_TYPE_URL } from '../../../common/xds/type-urls';

export interface NackRule {
  /** Only responses of this type URL; undefined = any type. */
  typeUrl?: string;
  /** NACK a response when any resource name in it matches. */
  resourceName: RegExp;
  /** The `error_detail.message` to send (Envoy puts its validation error here). */
  message: string;
}

export interface SimBehaviour {
  /** Delay between receiving a response and sending its ACK/NACK (models config apply time). */
  readonly ackDelayMs: number;
  readonly nackRules: readonly NackRule[];
  /** Receive responses but never ACK or NACK them (a stuck Envoy with a live stream). */
  readonly hang: boolean;
  /** How a NACK's `error_detail.message` is worded (see `NackMessageFormat`); default 'rule'. */
  readonly nackMessageFormat?: NackMessageFormat;
}

/**
 * 'rule': `<rule message> (resource <name>)` per rejected resource, joined with ", " (the product's
 * tests and the local system quote this form). 'envoy': Envoy's own wording, CDS
 * `Error adding/updating cluster(s) <name>: <message>, <name2>: <message2>`, LDS
 * `Error adding/updating listener(s) <name>: <message>\n…`, other types the first failing
 * resource's message alone (Envoy's RDS/EDS errors carry no name prefix).
 */
export type NackMessageFormat = 'rule' | 'envoy';

export const DEFAULT_BEHAVIOUR: SimBehaviour = Object.freeze({ ackDelayMs: 0, nackRules: [], hang: false });

/** `google.rpc.Code.INVALID_ARGUMENT`: what Envoy puts in `error_detail.code` for rejected config. */
export const NACK_STATUS_CODE = 3;

/** One resource of a response that matched a NACK rule. */
export interface Rejection {
  /** Position among the resources checked (the requested ones, in response order). */
  index: number;
  name: string;
  /** The matching rule's message. */
  message: string;
}

/**
 * How Envoy applies a response it NACKs, per type. 'per-resource' (CDS, LDS): every resource is tried,
 * the valid ones are applied, each failing one keeps its previous version and is named in the message.
 * 'ordered' (RDS, EDS and the other per-watch types): resources are applied one after another and the
 * first failure stops the loop, so the ones before it are applied and it and the rest are not.
 */
export type NackScope = 'per-resource' | 'ordered';

export function nackScopeOf(typeUrl: string): NackScope {
  return typeUrl === CLUSTER_TYPE_URL || typeUrl === LISTENER_TYPE_URL ? 'per-resource' : 'ordered';
}

/**
 * The resources of `typeUrl` among `resourceNames` that a rule rejects, in order, each with the first
 * matching rule's message. An 'ordered' type stops at the first one, as Envoy stops there.
 */
export function rejectionsFor(rules: readonly NackRule[], typeUrl: string, resourceNames: readonly string[]): Rejection[] {
  const applicable = rules.filter((rule) => rule.typeUrl === undefined || rule.typeUrl === typeUrl);
  const rejections: Rejection[] = [];
  if (applicable.length === 0) return rejections;
  const firstOnly = nackScopeOf(typeUrl) === 'ordered';
  for (const [index, name] of resourceNames.entries()) {
    const rule = applicable.find((candidate) => {
      // A fresh lastIndex each time: a /g rule must not skip matches between calls.
      candidate.resourceName.lastIndex = 0;
      return candidate.resourceName.test(name);
    });
    if (rule === undefined) continue;
    rejections.push({ index, name, message: rule.message });
    if (firstOnly) break;
  }
  return rejections;
}

/** The `error_detail.message` naming `rejections` (non-empty) in `format`. */
export function nackMessageOf(typeUrl: string, rejections: readonly Rejection[], format: NackMessageFormat = 'rule'): string {
  if (format === 'rule') return rejections.map((r) => `${r.message} (resource ${r.name})`).join(', ');
  if (typeUrl === CLUSTER_TYPE_URL) return `Error adding/updating cluster(s) ${rejections.map((r) => `${r.name}: ${r.message}`).join(', ')}`;
  if (typeUrl === LISTENER_TYPE_URL) return `Error adding/updating listener(s) ${rejections.map((r) => `${r.name}: ${r.message}\n`).join('')}`;
  return rejections[0]?.message ?? '';
}

/**
 * The NACK message for a response carrying `resourceNames` of `typeUrl`, or undefined to ACK: every
 * rejected resource named, in the 'rule' format (see `rejectionsFor`, `nackMessageOf`).
 */
export function nackMessageFor(rules: readonly NackRule[], typeUrl: string, resourceNames: readonly string[]): string | undefined {
  const rejections = rejectionsFor(rules, typeUrl, resourceNames);
  return rejections.length === 0 ? undefined : nackMessageOf(typeUrl, rejections);
}

/** Behaviour as it arrives from a CLI flag or JSON file: validated, regexes as strings. */
export const simBehaviourConfigSchema = z.object({
  ackDelayMs: z.number().int().min(0).max(3_600_000).default(0),
  hang: z.boolean().default(false),
  nackMessageFormat: z.enum(['rule', 'envoy']).optional(),
  nackRules: z
    .array(
      z.object({
        typeUrl: z.string().optional(),
        resourceName: z.string().min(1),
        message: z.string().min(1),
      }),
    )
    .default([]),
});
export type SimBehaviourConfig = z.input<typeof simBehaviourConfigSchema>;

/** Parses untrusted behaviour config; throws a ZodError or a RegExp SyntaxError naming the field. */
export function parseBehaviour(input: unknown): SimBehaviour {
  const config = simBehaviourConfigSchema.parse(input);
  return Object.freeze({
    ackDelayMs: config.ackDelayMs,
    hang: config.hang,
    ...(config.nackMessageFormat === undefined ? {} : { nackMessageFormat: config.nackMessageFormat }),
    nackRules: config.nackRules.map((rule, index) => {
      let pattern: RegExp;
      try {
        pattern = new RegExp(rule.resourceName);
      } catch (error) {
        throw new Error(`nackRules[${index}].resourceName is not a valid regular expression: ${String(error)}`);
      }
      return { ...(rule.typeUrl !== undefined ? { typeUrl: rule.typeUrl } : {}), resourceName: pattern, message: rule.message };
    }),
  });
}
