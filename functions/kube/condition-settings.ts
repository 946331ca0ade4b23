// The status writer's settings, read from the environment by every function that writes our condition
// (status, convergence's handoff, resync): validated by one rule so they cannot drift apart.
import { z } from 'zod';
import { DEFAULT_CONDITION_TYPE } from '../../common/core';

/** A metav1.Condition type: CamelCase, optionally prefixed by a DNS domain and "/". */
export const conditionTypeSchema = z
  .string()
  .regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z][A-Za-z0-9_.-]{0,62}$/, 'a condition type is CamelCase, optionally prefixed by a DNS domain and "/"');

export const conditionSettingsShape = {
  CONDITION_TYPE: conditionTypeSchema.default(DEFAULT_CONDITION_TYPE),
  /** "true": also write when only the message changed (off: invariant 4 counts status changes only). */
  STATUS_WRITE_ON_MESSAGE_CHANGE: z.enum(['true', 'false']).default('false'),
};
