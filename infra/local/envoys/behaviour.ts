// How a simulated Envoy reacts to config. A behaviour object is plain data and is shared by
// reference between Envoys that behave alike (the fleet default is one object for all), so it
// costs nothing per Envoy. Change a single Envoy's behaviour with `SimEnvoy.setBehaviour`.
import { z } from 'zod';

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
}

export const DEFAULT_BEHAVIOUR: SimBehaviour = Object.freeze({ ackDelayMs: 0, nackRules: [], hang: false });

/** `google.rpc.Code.INVALID_ARGUMENT`: what Envoy puts in `error_detail.code` for rejected config. */
export const NACK_STATUS_CODE = 3;

/**
 * The NACK message for a response carrying `resourceNames` of `typeUrl`, or undefined to ACK.
 * The first matching rule wins; the message names the offending resource like Envoy does.
 */
export function nackMessageFor(
  rules: readonly NackRule[],
  typeUrl: string,
  resourceNames: readonly string[],
): string | undefined {
  for (const rule of rules) {
    if (rule.typeUrl !== undefined && rule.typeUrl !== typeUrl) continue;
    for (const name of resourceNames) {
      // A fresh lastIndex each time: a /g rule must not skip matches between calls.
      rule.resourceName.lastIndex = 0;
      if (rule.resourceName.test(name)) return `${rule.message} (resource ${name})`;
    }
  }
  return undefined;
}

/** Behaviour as it arrives from a CLI flag or JSON file: validated, regexes as strings. */
export const simBehaviourConfigSchema = z.object({
  ackDelayMs: z.number().int().min(0).max(3_600_000).default(0),
  hang: z.boolean().default(false),
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
