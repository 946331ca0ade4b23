// Errors the store adapter throws for caller mistakes (not infrastructure failures): a caller should
// not retry these, and an HTTP edge maps them to 4xx.

/** A record or request that fails validation before anything is written or read. */
export class InvalidStoreInputError extends Error {
  override readonly name = 'InvalidStoreInputError';
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** The first few zod issues as one line: `path: message; ...`. */
export function describeZodIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join('.') || '(record)'}: ${issue.message}`)
    .join('; ');
}

/**
 * A store call that failed because of what was asked, so the same call can never succeed: our own
 * validation (InvalidStoreInputError), or DynamoDB's (ValidationException: an item over 400 KB, a key
 * over its size limit). Callers drop such a write with a log line and a metric; retrying it would
 * block everything queued behind it (the recorder) for ever.
 */
export function isPermanentStoreError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'InvalidStoreInputError' || error.name === 'ValidationException');
}
