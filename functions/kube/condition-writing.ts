// The one status writer every function that writes our condition builds (status, convergence's
// handoff, resync's condition pass): the tracked kinds, the Kubernetes access named by the
// configuration, and the condition settings, put together the same way in each, so the three cannot
// come to address kinds or space message writes differently (docs/FUNCTIONS.md, "One writer").
import type { Logger } from 'pino';

import { CONDITION_SETTINGS, type FunctionsConfig } from '../lib/config';
import { createKubeAccess, kubeAccessConfigFromEnv, type KubeAccess } from './access';
import { StatusWriter } from './status-writer';
import type { TrackedKind } from '../../common/tracked-kinds';
import { TrackedKinds } from './tracked-kinds';

export interface ConditionWriting {
  writer: StatusWriter;
  kinds: TrackedKinds;
  /** CONDITION_TYPE: our condition's type where the kind names none. */
  conditionType: string;
  /** STATUS_WRITE_ON_MESSAGE_CHANGE. */
  writeOnMessageChange: boolean;
}

export interface ConditionWritingOptions {
  /** Replaces the Kubernetes access built from the configuration (tests). */
  access?: KubeAccess;
  now: () => number;
  /** See StatusWriterOptions (convergence's handoff makes one attempt: the status function retries). */
  maxServerErrorAttempts?: number;
}

/** Throws on invalid condition settings or Kubernetes access, naming the variables. */
export function conditionWritingFromConfig(config: FunctionsConfig, trackedKinds: readonly TrackedKind[], logger: Logger, options: ConditionWritingOptions): ConditionWriting {
  const settings = config.slice(CONDITION_SETTINGS);
  const kinds = new TrackedKinds(trackedKinds);
  // Built once per container (EKS tokens are renewed inside).
  const access = options.access ?? createKubeAccess(kubeAccessConfigFromEnv(config));
  const writeOnMessageChange = settings.STATUS_WRITE_ON_MESSAGE_CHANGE;
  const attempts = options.maxServerErrorAttempts === undefined ? {} : { maxServerErrorAttempts: options.maxServerErrorAttempts };
  const writer = new StatusWriter({ access, kinds, logger, now: options.now, writeOnMessageChange, ...attempts });
  return { writer, kinds, conditionType: settings.CONDITION_TYPE, writeOnMessageChange };
}
