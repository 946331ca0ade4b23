// Errors are answered as `kind: Status` objects, as the real apiserver does
// (k8s.io/apimachinery/pkg/api/errors): clients such as kubectl and client-go read `reason`
// and `code` to decide what to do (e.g. retry on Conflict, relist on Expired/Gone).
import type { JsonObject } from './json';

export type StatusReason =
  | 'BadRequest'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Gone'
  | 'Expired'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'InternalError'
  | 'NotImplemented'
  | 'Timeout'
  | 'Forbidden';

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason: string; message: string; field: string }[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toStatus(): JsonObject {
    return failureStatus(this.code, this.reason, this.message, this.details);
  }
}

export function failureStatus(code: number, reason: StatusReason, message: string, details?: StatusDetails): JsonObject {
  const status: JsonObject = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
  if (details) status['details'] = JSON.parse(JSON.stringify(details)) as JsonObject;
  return status;
}

/** Identifies a resource in error messages the way the apiserver does: `widgets.example.com "a"`. */
export interface QualifiedResource {
  group: string;
  plural: string;
  kind: string;
}

function qualified(resource: QualifiedResource): string {
  return resource.group === '' ? resource.plural : `${resource.plural}.${resource.group}`;
}

export const errors = {
  badRequest: (message: string): ApiError => new ApiError(400, 'BadRequest', message),
  notFound: (resource: QualifiedResource, name: string): ApiError =>
    new ApiError(404, 'NotFound', `${qualified(resource)} "${name}" not found`, {
      name,
      group: resource.group,
      kind: resource.plural,
    }),
  pathNotFound: (path: string): ApiError => new ApiError(404, 'NotFound', `the server could not find the requested resource (${path})`),
  alreadyExists: (resource: QualifiedResource, name: string): ApiError =>
    new ApiError(409, 'AlreadyExists', `${qualified(resource)} "${name}" already exists`, {
      name,
      group: resource.group,
      kind: resource.plural,
    }),
  conflict: (resource: QualifiedResource, name: string, why: string): ApiError =>
    new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(resource)} "${name}": ${why}`, {
      name,
      group: resource.group,
      kind: resource.plural,
    }),
  invalid: (resource: QualifiedResource, name: string, causes: { field: string; message: string }[]): ApiError =>
    new ApiError(
      422,
      'Invalid',
      `${resource.kind}${resource.group === '' ? '' : `.${resource.group}`} "${name}" is invalid: ${causes
        .map((cause) => `${cause.field}: ${cause.message}`)
        .join(', ')}`,
      {
        name,
        group: resource.group,
        kind: resource.kind,
        causes: causes.map((cause) => ({ reason: 'FieldValueInvalid', message: cause.message, field: cause.field })),
      },
    ),
  gone: (message: string): ApiError => new ApiError(410, 'Expired', message),
  methodNotAllowed: (message: string): ApiError => new ApiError(405, 'MethodNotAllowed', message),
  unsupportedMediaType: (message: string): ApiError => new ApiError(415, 'UnsupportedMediaType', message),
  tooLarge: (limitBytes: number): ApiError =>
    new ApiError(413, 'RequestEntityTooLarge', `the request body is larger than the limit of ${limitBytes} bytes`),
  notImplemented: (message: string): ApiError => new ApiError(501, 'NotImplemented', message),
};
