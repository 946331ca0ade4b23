// Kubernetes object metadata as the reference control plane validates it, for every kind it reads
// (model.ts: HTTPProxy, Endpoints, Secrets; gateway-api.ts: HTTPRoute). Its own file so that the two
// models share it without importing each other.
import { z } from 'zod';

export const kubeName = z.string().min(1).max(253);

export const objectMetadataSchema = z.object({
  name: kubeName,
  namespace: kubeName,
  generation: z.number().int().min(1).optional(),
  resourceVersion: z.string().optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  uid: z.string().optional(),
});
