// The Lambda functions' configuration: every environment variable any of the five functions reads
// (docs/FUNCTIONS.md, "Configuration (environment)"; serverless.yml and the local system's
// infra/local/system/functions.ts set them) with its one rule and default, in one table. The
// environment is parsed once per container (`FunctionsConfig.fromEnv`); each part of a handler then
// takes the typed slice it needs (`config.slice(QUERY_SETTINGS)`), and a bad value is reported by
// variable name, every bad variable of the slice at once. A slice, not the whole table, is what a
// part fails on: convergence runs without the handoff when only the handoff's settings are wrong,
// and the query function does not care about TRACKED_KINDS.
//
// The table's client variables (AWS_REGION, DYNAMODB_ENDPOINT, …) are common/store's and read there;
// AWS_REGION appears here too because EKS token signing needs it.
import { z } from 'zod';

import { DEFAULT_CONDITION_TYPE, DEFAULT_SHARD_COUNT, isValidTypeUrl } from '../../common/core';
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../common/core/status-update';
import { conditionTypeSchema } from '../../common/tracked-kinds';
import type { TrackedKind } from '../../common/tracked-kinds';
import { parseTrackedKinds } from '../kube/tracked-kinds';

/**
 * Convergence's concurrency: the generations a batch evaluates at once (functions/lib/evaluate.ts;
 * each is a few small reads and at most one write) and, by default, the direct condition writes in
 * flight per container (functions/lib/status-handoff.ts), so a batch that decides that many
 * generations writes all their conditions in one round. 16: with 8, the ninth object of a ten-object
 * change waited a whole read-and-write round and a PATCH after the others (docs/bench/README.md);
 * DynamoDB and the SDK's 50 sockets take 16 small requests at once easily.
 */
export const CONVERGENCE_CONCURRENCY = 16;

const trueOrFalse = (fallback: 'true' | 'false') =>
  z
    .enum(['true', 'false'])
    .default(fallback)
    .transform((value) => value === 'true');

/**
 * Default of DECISION_REFRESH_MS: off, so a decision's counts are always current. The local system
 * turns it on (1000 ms): the condition never waits for it (verdict changes are written at once).
 */
export const DEFAULT_DECISION_REFRESH_MS = 0;

const VARIABLES = {
  // The table (common/store opens it; these functions also validate the name themselves).
  TABLE_NAME: z.string().min(3),
  // Convergence, expire, resync, query: the policy.
  ENVOY_TTL_MS: z.coerce.number().int().positive().default(300_000),
  ACK_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * The table clock's stall bound (core table-clock.ts): staleness stands still this long after the
   * expire function's last completed tick. Keep it above the expire schedule's interval, and it plus the
   * gateway's --envoy-heartbeat-ms below ENVOY_TTL_MS. Unset: core defaultStallMs (min(180 s, TTL / 2)).
   */
  EXPIRE_STALL_MS: z.coerce.number().int().positive().optional(),
  AGGREGATE_SHARDS: z.coerce.number().int().min(1).max(256).default(DEFAULT_SHARD_COUNT),
  REQUIRED_TYPE_URLS: z
    .string()
    .optional()
    .transform((value) => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0))
    .refine((urls) => urls.every(isValidTypeUrl), { message: 'REQUIRED_TYPE_URLS has an invalid type URL' }),
  /**
   * "true" (the default): decide from the gateways' PROGRESS items (the gateway's --progress, on by
   * default) instead of the aggregate shards (functions/lib/evaluate.ts; docs/CONVERGENCE.md,
   * "Deciding from PROGRESS"). Every gateway writing to the table must publish PROGRESS: a live
   * lineage without an item stays Pending, and its blocker says so. "false": the shard path, for
   * gateways run with --progress false.
   */
  PROGRESS_EVALUATION: trueOrFalse('true'),
  /** Count-only decision rewrites at most this often per generation (functions/lib/evaluate.ts). */
  DECISION_REFRESH_MS: z.coerce.number().int().min(0).max(600_000).default(DEFAULT_DECISION_REFRESH_MS),
  // The status writer (status, convergence's handoff, resync): one rule so they cannot drift apart.
  /** Parsed here so a bad list is reported like any other variable; unset: undefined (each function decides). */
  TRACKED_KINDS: z
    .string()
    .optional()
    .transform((json, ctx): TrackedKind[] | undefined => {
      if (json === undefined) return undefined;
      try {
        return parseTrackedKinds(json);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    }),
  CONDITION_TYPE: conditionTypeSchema.default(DEFAULT_CONDITION_TYPE),
  /** "true": also write when only the message changed (off: invariant 4 counts status changes only). */
  STATUS_WRITE_ON_MESSAGE_CHANGE: trueOrFalse('false'),
  /**
   * A not-True condition's message (counts, blockers) is rewritten at most this often per object
   * generation, and at least this often while it is out of date (plus the sweep's delay). 0: never.
   * Read by the status function and by convergence's handoff sweep: one rule, one spacing.
   */
  STATUS_MESSAGE_REFRESH_MS: z.coerce.number().int().min(0).max(3_600_000).default(DEFAULT_MESSAGE_REFRESH_MS),
  // Convergence's direct handoff (functions/lib/status-handoff.ts).
  STATUS_HANDOFF: trueOrFalse('true'),
  STATUS_HANDOFF_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(CONVERGENCE_CONCURRENCY),
  STATUS_HANDOFF_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(2000),
  // Resync's condition pass (functions/lib/resync-conditions.ts).
  RESYNC_MAX_OBJECTS: z.coerce.number().int().positive().default(500),
  RESYNC_MAX_SCANNED_ITEMS: z.coerce.number().int().positive().default(50_000),
  /** Deleted objects' items are kept this long before DynamoDB's TTL removes them. */
  DELETED_OBJECT_RETENTION_MS: z.coerce.number().int().positive().default(3_600_000),
  // The query function.
  QUERY_MAX_FLEET_SCAN: z.coerce.number().int().positive().default(20_000),
  /** Allow-list of namespaces (functions/query/namespaces.ts parses the list). */
  QUERY_NAMESPACES: z.string().optional(),
  // Kubernetes access (functions/kube/access.ts holds the rule that exactly one source is set).
  KUBECONFIG_YAML: z.string().min(1).optional(),
  KUBECONFIG_PATH: z.string().min(1).optional(),
  EKS_CLUSTER_NAME: z.string().regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'EKS cluster names are 1-100 of [A-Za-z0-9-_]').optional(),
  EKS_CLUSTER_ENDPOINT: z.url().optional(),
  /** Base64 PEM of the cluster CA, as `aws eks describe-cluster` prints certificateAuthority.data. */
  EKS_CLUSTER_CA: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).optional(),
};

export type FunctionsVariable = keyof typeof VARIABLES;
/** Every variable's parsed value (defaults applied). */
export type FunctionsSettings = { [K in FunctionsVariable]: z.output<(typeof VARIABLES)[K]> };

// The slices: what each part of the functions reads.
export const AGGREGATE_SETTINGS = ['TABLE_NAME', 'ENVOY_TTL_MS', 'ACK_TIMEOUT_MS', 'EXPIRE_STALL_MS', 'AGGREGATE_SHARDS', 'REQUIRED_TYPE_URLS', 'PROGRESS_EVALUATION'] as const;
export const DECISION_REFRESH_SETTINGS = ['DECISION_REFRESH_MS'] as const;
export const CONDITION_SETTINGS = ['CONDITION_TYPE', 'STATUS_WRITE_ON_MESSAGE_CHANGE'] as const;
export const STATUS_SETTINGS = [...CONDITION_SETTINGS, 'STATUS_MESSAGE_REFRESH_MS'] as const;
/** ENVOY_TTL_MS, EXPIRE_STALL_MS: which lineages the refresh sweep reads (the same defaults as the aggregates'). */
export const HANDOFF_SETTINGS = ['STATUS_HANDOFF', 'STATUS_HANDOFF_CONCURRENCY', 'STATUS_HANDOFF_TIMEOUT_MS', 'ENVOY_TTL_MS', 'EXPIRE_STALL_MS', ...STATUS_SETTINGS] as const;
export const CONDITION_RESYNC_SETTINGS = ['TABLE_NAME', ...CONDITION_SETTINGS, 'RESYNC_MAX_OBJECTS', 'RESYNC_MAX_SCANNED_ITEMS', 'DELETED_OBJECT_RETENTION_MS'] as const;
/** PROGRESS_EVALUATION, REQUIRED_TYPE_URLS: the object view's live detail is then the convergence function's evaluation from PROGRESS. */
export const QUERY_SETTINGS = ['TABLE_NAME', 'ENVOY_TTL_MS', 'ACK_TIMEOUT_MS', 'EXPIRE_STALL_MS', 'QUERY_MAX_FLEET_SCAN', 'QUERY_NAMESPACES', 'PROGRESS_EVALUATION', 'REQUIRED_TYPE_URLS'] as const;
export const KUBE_ACCESS_SETTINGS = ['KUBECONFIG_YAML', 'KUBECONFIG_PATH', 'EKS_CLUSTER_NAME', 'EKS_CLUSTER_ENDPOINT', 'EKS_CLUSTER_CA', 'AWS_REGION'] as const;

/** Invalid configuration: one line per bad variable, `NAME: what is wrong`. */
export class FunctionsConfigError extends Error {
  constructor(readonly problems: ReadonlyArray<{ variable: string; message: string }>) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join('; ')}`);
    this.name = 'FunctionsConfigError';
  }
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

export interface FunctionsConfigOptions {
  /**
   * Empty strings mean "not set" (default): serverless params left blank arrive as "". The query
   * function keeps them as given (an empty number is an error there), as it always has.
   */
  emptyIsUnset?: boolean;
}

/** `env` without the variables set to "" (serverless params left blank mean "not set"). */
export function withoutEmpty(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
}

export class FunctionsConfig {
  private constructor(
    /** The environment as given: common/store reads its own client variables from it. */
    readonly env: Record<string, string | undefined>,
    private readonly parsed: ReadonlyMap<FunctionsVariable, Parsed>,
    private readonly given: ReadonlySet<FunctionsVariable>,
  ) {}

  /** Parses every variable of the table from `env` (once per container: the handlers keep the result). */
  static fromEnv(env: Record<string, string | undefined>, options: FunctionsConfigOptions = {}): FunctionsConfig {
    const emptyIsUnset = options.emptyIsUnset ?? true;
    const parsed = new Map<FunctionsVariable, Parsed>();
    const given = new Set<FunctionsVariable>();
    for (const name of Object.keys(VARIABLES) as FunctionsVariable[]) {
      const raw = env[name];
      const value = raw === '' && emptyIsUnset ? undefined : raw;
      if (value !== undefined) given.add(name);
      const result = (VARIABLES[name] as z.ZodType).safeParse(value);
      const message = value === undefined ? 'not set' : result.success ? '' : result.error.issues.map((issue) => issue.message).join(', ');
      parsed.set(name, result.success ? { ok: true, value: result.data } : { ok: false, message });
    }
    return new FunctionsConfig(env, parsed, given);
  }

  /** Whether the variable was set (non-empty unless `emptyIsUnset` is off). */
  isSet(name: FunctionsVariable): boolean {
    return this.given.has(name);
  }

  /** The variables `names`, parsed; throws a FunctionsConfigError naming every invalid one among them. */
  slice<const K extends FunctionsVariable>(names: readonly K[]): Pick<FunctionsSettings, K> {
    const values: Partial<Record<FunctionsVariable, unknown>> = {};
    const problems: Array<{ variable: string; message: string }> = [];
    for (const name of new Set(names)) {
      const result = this.parsed.get(name);
      if (result === undefined) continue;
      if (result.ok) values[name] = result.value;
      else problems.push({ variable: name, message: result.message });
    }
    if (problems.length > 0) throw new FunctionsConfigError(problems);
    return values as Pick<FunctionsSettings, K>;
  }
}

/** `source` itself, or the configuration parsed from it (builders take either: tests pass plain records). */
export function functionsConfig(source: Record<string, string | undefined> | FunctionsConfig): FunctionsConfig {
  return source instanceof FunctionsConfig ? source : FunctionsConfig.fromEnv(source);
}
