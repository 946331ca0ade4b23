// The message refresh interval, read from the environment by both functions that act on it: the
// status function (a stream record whose only change is the message) and convergence's handoff (its
// sweep of not-True generations whose message went stale with no record to carry the change). One
// rule, so the two cannot space writes differently.
import { z } from 'zod';
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../common/core/status-update';

export const messageRefreshSettingsShape = {
  /**
   * A not-True condition's message (counts, blockers) is rewritten at most this often per object
   * generation, and at least this often while it is out of date (plus the sweep's delay). 0: never
   * (message-only changes are not written, as before the refresh rule).
   */
  STATUS_MESSAGE_REFRESH_MS: z.coerce.number().int().min(0).max(3_600_000).default(DEFAULT_MESSAGE_REFRESH_MS),
};
