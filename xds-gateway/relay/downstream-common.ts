// What SotW and Delta downstream streams share: the relay context they run in, request validation at
// the edge, and the stream's identity (node kept from the first request).
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isValidTypeUrl, type Clock, type EnvoyIdentity } from '../../common/core';
import type { ResourceTypeUrl, XdsNode } from '../../common/xds';
import type { RelayObserver } from './observer';
import type { RelayGroup } from './relay-group';
import type { RequestRateLimit } from './token-bucket';

export interface DownstreamLimits {
  /** Most resource names one request may carry (SotW names; Delta subscribe+unsubscribe+initial versions). */
  maxResourceNamesPerRequest: number;
  /** Longest resource name accepted. */
  maxResourceNameLength: number;
  /** Most distinct type URLs one ADS stream may subscribe to. */
  maxTypesPerStream: number;
  /** Per-stream request rate limit; undefined: unlimited. Over it the stream ends RESOURCE_EXHAUSTED. */
  requestRate: RequestRateLimit | undefined;
}

/** What the relay needs of a live downstream stream: end it, or pause/resume it (backpressure). */
export interface LiveStream {
  end(code: grpc.status, details: string): void;
  setPaused(paused: boolean): void;
}

export interface RelayContext {
  observer: RelayObserver;
  clock: Clock;
  logger: Logger;
  limits: DownstreamLimits;
  nextStreamId(): string;
  /** The group for this Envoy (created, with its lineage, on first sight). */
  groupFor(identity: EnvoyIdentity, node: XdsNode): RelayGroup;
  /** Registers a live stream so close() can end it and setPaused() reach it; returns the unregister function. */
  track(stream: LiveStream): () => void;
  /**
   * True while the gateway asked the relay to pause (RelayControl.setPaused): streams neither read
   * requests nor send responses, so no new pending/ACK work is created.
   */
  paused(): boolean;
}

export class RequestError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

// Fields we read from decoded requests. protobuf decoding already guarantees the types; the schema
// pins the shape we rely on (arrays of strings) so a future loader option change fails loudly here.
const errorDetailSchema = z.object({ code: z.number().optional(), message: z.string().optional() }).loose().nullable().optional();
export const sotwRequestSchema = z
  .object({
    version_info: z.string().optional(),
    resource_names: z.array(z.string()).optional(),
    type_url: z.string().optional(),
    response_nonce: z.string().optional(),
    error_detail: errorDetailSchema,
  })
  .loose();
export const deltaRequestSchema = z
  .object({
    type_url: z.string().optional(),
    resource_names_subscribe: z.array(z.string()).optional(),
    resource_names_unsubscribe: z.array(z.string()).optional(),
    initial_resource_versions: z.record(z.string(), z.string()).optional(),
    response_nonce: z.string().optional(),
    error_detail: errorDetailSchema,
  })
  .loose();

/** The type URL a request is about: required on ADS; on a per-type service it must match (or be empty). */
export function requestTypeUrl(service: 'ads' | ResourceTypeUrl, typeUrl: string | undefined): string {
  const requested = typeUrl ?? '';
  if (service === 'ads') {
    if (requested === '') throw new RequestError(grpc.status.INVALID_ARGUMENT, 'type_url is required on ADS streams');
  } else if (requested !== '' && requested !== service) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `type_url ${requested.slice(0, 300)} on the ${service} service`);
  }
  const effective = requested === '' ? service : requested;
  if (!isValidTypeUrl(effective)) throw new RequestError(grpc.status.INVALID_ARGUMENT, `invalid type_url ${JSON.stringify(effective.slice(0, 300))}`);
  return effective;
}

export function checkNames(names: readonly string[], limits: DownstreamLimits, what: string): void {
  if (names.length > limits.maxResourceNamesPerRequest) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `${what}: ${names.length} resource names exceed the limit of ${limits.maxResourceNamesPerRequest}`);
  }
  for (const name of names) {
    if (name.length > limits.maxResourceNameLength) {
      throw new RequestError(grpc.status.INVALID_ARGUMENT, `${what}: a resource name is longer than ${limits.maxResourceNameLength} characters`);
    }
  }
}

/** Calls an observer callback; a throwing observer is logged, never allowed to break the stream. */
export function notify(logger: Logger, name: string, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    logger.error({ err: error, callback: name }, 'relay: observer callback threw');
  }
}

/** Known ADS limit check: a stream may not fan out into unbounded per-type state. */
export function checkTypeCount(current: number, limits: DownstreamLimits): void {
  if (current >= limits.maxTypesPerStream) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `stream subscribes to more than ${limits.maxTypesPerStream} type URLs`);
  }
}

export function rateLimitError(limit: RequestRateLimit): RequestError {
  return new RequestError(grpc.status.RESOURCE_EXHAUSTED, `request rate above ${limit.ratePerSecond}/s (burst ${limit.burst}) on this stream`);
}

export interface StreamIdentity {
  streamId: string;
  identity: EnvoyIdentity;
  group: RelayGroup;
}
