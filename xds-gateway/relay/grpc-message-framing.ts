// Responses framed once, however many streams they go to.
//
// grpc-js frames every message a server sends: it asks the method's serializer for the message's
// bytes, allocates a new buffer of 5 + their length, writes the gRPC length prefix (a compressed-flag
// byte, 0: grpc-js servers do not compress responses, and the length as 4 bytes big-endian) and copies
// the bytes in. The relay's SotW responses are shared by many streams (response-encoding.ts hands the
// same encoded response to every stream at the same nonce), so in a fleet-wide push at 1,000 Envoys
// that was 1,000 allocations and copies of the same ~360 KB per type and change, and the external
// memory they churned drove V8's collector: in a gateway profile at 1,000 × 1,000 (docs/bench) the copy
// and its allocation were 11% of the gateway's CPU during a change and the collector 22%.
//
// So the encoder builds each response with its prefix already in front (`framedConcat`), and the
// server's framing step hands out that framed buffer as it is when the serializer returned one of
// these messages. Any other message is framed here the same way grpc-js does. HTTP/2 writes do not
// modify what they send, so one framed buffer may be in flight on many streams at once.
//
// grpc-js has no public hook for this: its framing step is the `serializeMessage` method of
// BaseServerInterceptingCall (grpc-js 1.14, pinned by the lockfile), replaced once per process by
// `installPreframedResponses`. Where that method is not found (another grpc-js) nothing is replaced
// and grpc-js frames every message itself: slower, not wrong (`installPreframedResponses` says which).
import * as serverInterceptors from '@grpc/grpc-js/build/src/server-interceptors';

/** gRPC's length prefix: a compressed-flag byte and a 4-byte big-endian length (gRPC over HTTP/2, Length-Prefixed-Message). */
const PREFIX_BYTES = 5;

/** The framed buffer of each message built by framedConcat, by the message (a view into it). */
const framedByMessage = new WeakMap<Uint8Array, Buffer>();

/**
 * The concatenation of `parts`, as a view into a buffer that also holds its gRPC prefix. Sent by a
 * server whose framing step is installed, that buffer goes out as is, on every stream it is sent to.
 */
export function framedConcat(parts: readonly Uint8Array[]): Buffer {
  const framed = frame(parts);
  const message = framed.subarray(PREFIX_BYTES);
  framedByMessage.set(message, framed);
  return message;
}

/** `message` with its gRPC prefix: the buffer framedConcat built it in, or a new one. */
export function framedMessage(message: Uint8Array): Buffer {
  return framedByMessage.get(message) ?? frame([message]);
}

/** A new buffer: the prefix (not compressed; the parts' total length, big-endian), then the parts. */
function frame(parts: readonly Uint8Array[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const framed = Buffer.allocUnsafe(PREFIX_BYTES + length);
  framed.writeUInt8(0, 0);
  framed.writeUInt32BE(length, 1);
  let at = PREFIX_BYTES;
  for (const part of parts) {
    framed.set(part, at);
    at += part.length;
  }
  return framed;
}

interface FramingStep {
  serializeMessage(this: { handler: { serialize(value: unknown): Uint8Array } }, value: unknown): Buffer;
}

let installed: 'installed' | 'unavailable' | undefined;

/**
 * Makes every grpc-js server of this process send framedConcat's messages without copying them
 * (idempotent). 'unavailable' when this grpc-js frames elsewhere: responses are then copied per
 * stream as before.
 */
export function installPreframedResponses(): 'installed' | 'unavailable' {
  if (installed !== undefined) return installed;
  // The method is private in grpc-js's types: read the module as plain values.
  const prototype = (serverInterceptors as unknown as { BaseServerInterceptingCall?: { prototype?: Partial<FramingStep> } }).BaseServerInterceptingCall?.prototype;
  if (prototype === undefined || typeof prototype.serializeMessage !== 'function') {
    installed = 'unavailable';
    return installed;
  }
  prototype.serializeMessage = function serializeMessage(value) {
    return framedMessage(this.handler.serialize(value));
  };
  installed = 'installed';
  return installed;
}
