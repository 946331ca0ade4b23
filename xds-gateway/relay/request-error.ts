// The error that refuses or ends one downstream stream with a gRPC status. Its own file because both
// the streams (downstream-common.ts) and the node groups they join (relay-group.ts) raise it, and the
// streams import the groups: defined in either, it would close an import cycle.
import type * as grpc from '@grpc/grpc-js';

export class RequestError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
    /** Already logged where it was raised (relay.ts refusals, throttled): ending the stream logs at debug only. */
    readonly logged = false,
  ) {
    super(message);
  }
}
