// Exit codes of `xds-programmed`, stable for scripts (documented in docs/OPERATIONS.md).
export const EXIT = {
  /** status: printed. wait: the condition is True for the generation waited on. */
  ok: 0,
  /** wait: timed out while Envoys were still pending or stuck. */
  timeout: 1,
  /** Bad usage or input (unknown kind, bad flag). */
  usage: 2,
  /**
   * wait: timed out and at least one Envoy NACKed this generation (retrying will not help): with
   * --no-fail-fast, or when the condition had not said Rejected yet.
   */
  rejected: 3,
  /** The query API (or Kubernetes) could not be reached, refused us, or answered an error. */
  unavailable: 4,
  /** wait: the kind gives no signal that its controller processed a generation; it can never be True. */
  notObservable: 5,
  /**
   * status/wait: the object (or generation) is unknown to the gateways, Kubernetes has no such object,
   * or nothing matched --all / -l; envoys: no Envoy with that node id.
   */
  notFound: 6,
  /**
   * wait: the awaited generation's verdict is terminal (reason Rejected, or Invalid): returned as soon
   * as the condition says so instead of waiting out the timeout (`--no-fail-fast` keeps waiting).
   */
  terminal: 7,
} as const;
