// One object generation (docs/ARCHITECTURE.md, "Data"): its watermarks per lineage, whether it is
// observable at all, what the controller said of it, the condition last written and the stored
// convergence decision.
import { z } from 'zod';
import { validateObjectRef } from './identity';
import { ConditionSchema } from './metav1-condition';
import { epochMsSchema, generationSchema, lineageSchema, messageSchema, seqSchema, typeUrlSchema } from './record-fields';
import { DecisionSchema } from './stored-decision';

export const ObjectRefSchema = z
  .object({ group: z.string(), kind: z.string(), namespace: z.string(), name: z.string() })
  .superRefine((ref, ctx) => {
    const problem = validateObjectRef(ref);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * W(X, G) on one lineage: the lineage seq at which the gateway first served content reflecting X at G,
 * and each type's version current at that seq (a type absent here had no version yet: any ACK on
 * the lineage satisfies it).
 */
export const LineageWatermarkSchema = z.object({
  seq: seqSchema,
  types: z.record(typeUrlSchema, seqSchema),
  /** When the gateway recorded it. */
  at: epochMsSchema,
});
export type LineageWatermark = z.infer<typeof LineageWatermarkSchema>;

export const objectGenerationShape = {
  object: ObjectRefSchema,
  generation: generationSchema,
  /** One entry per lineage that has served this generation; each gateway writes its own. */
  watermarks: z.record(lineageSchema, LineageWatermarkSchema),
  /** Set when this kind gives no signal that the controller processed G: the reason why. */
  notObservable: messageSchema.optional(),
  /**
   * Set when the controller reported this generation processed but invalid (HTTPProxy `Valid=False`
   * at this observedGeneration): the controller's own message. Written once by the gateway; it makes
   * the generation's verdict Invalid whatever Envoys ACK (core watermarkOf).
   */
  rejectedByController: messageSchema.optional(),
  firstSeenAt: epochMsSchema,
  /** First time the condition was written True for this generation. */
  programmedAt: epochMsSchema.optional(),
  /** The condition last written to Kubernetes for this generation (to write only on change). */
  lastCondition: ConditionSchema.optional(),
  /**
   * When our condition was last written to Kubernetes for this generation: the message refresh rule
   * (common/core/status-update.ts) spaces message-only rewrites from it.
   */
  conditionWrittenAt: epochMsSchema.optional(),
  /** The convergence function's decision for this generation (common/core/decision.ts). */
  decision: DecisionSchema.optional(),
};
export const ObjectGenerationSchema = z.object(objectGenerationShape);
export type ObjectGeneration = z.infer<typeof ObjectGenerationSchema>;
