// Envoy error messages (NACK `error_detail.message`) can be arbitrarily long — a rejected route table
// may be quoted back in full. DynamoDB items are limited to 400 KB (including attribute names) and
// Kubernetes condition messages to 32768 characters, so we cap messages at a few KiB of UTF-8.

/** Default cap for stored Envoy messages, in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

/**
 * Returns `text` unchanged if it fits in `maxBytes` of UTF-8; otherwise a prefix cut on a code point
 * boundary followed by a marker saying how long the original was, the whole within `maxBytes`.
 */
export function truncateUtf8(text: string, maxBytes: number = MAX_MESSAGE_BYTES): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  const marker = `...[truncated, ${bytes.length} bytes]`; // ASCII: its byte length is its length
  const room = maxBytes - utf8Length(marker);
  if (room <= 0) return marker.slice(0, Math.max(0, maxBytes));
  let end = room;
  // UTF-8 continuation bytes are 0b10xxxxxx: back up to the start of a code point.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end)) + marker;
}
