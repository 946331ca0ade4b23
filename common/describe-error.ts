// One line for an error in a log field or a stream's status message: its name and message, or the
// thrown value as text (the gateway's log lines and the relay's refusals use it alike).

export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
