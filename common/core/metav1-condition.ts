// Kubernetes metav1.Condition, as the model stores the condition last written for a generation.
import { z } from 'zod';

export const ConditionStatusSchema = z.enum(['True', 'False', 'Unknown']);
export type ConditionStatus = z.infer<typeof ConditionStatusSchema>;

/** metav1.Condition; `reason` follows its validation pattern, `message` its 32768 limit. */
export const ConditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: ConditionStatusSchema,
  observedGeneration: z.number().int().nonnegative(),
  /** RFC 3339, as the Kubernetes API serialises metav1.Time. */
  lastTransitionTime: z.string().min(1),
  reason: z.string().max(1024).regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof ConditionSchema>;
