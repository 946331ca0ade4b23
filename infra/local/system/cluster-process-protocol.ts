// The messages between the local system and its cluster child (cluster-process.ts, the parent side;
// cluster-process-child.ts, the child): the Kubernetes API server and the reference control plane in a
// Node process of their own. JSON over the fork IPC channel, checked with zod on both sides.
import { z } from 'zod';

const leaseSchema = z.object({ leaseDurationSeconds: z.number().int().positive(), renewDeadlineMs: z.number().int().positive(), retryPeriodMs: z.number().int().positive() });

/** What the child starts: the parent's first message (a fleet of objects' Endpoints is too long for argv). */
export const clusterChildSpecSchema = z
  .object({
    kubePort: z.number().int().min(0),
    /** Each replica's xDS port, replica order (0: random); the parent's port layout decides them. */
    controlPlanePorts: z.array(z.number().int().min(0)),
    stateDir: z.string().min(1),
    replicas: z.number().int().min(1),
    lease: leaseSchema,
    endpoints: z.array(z.object({ service: z.string(), namespace: z.string(), ip: z.string(), port: z.number().int().positive() })),
    logLevel: z.string(),
  })
  .strict();
export type ClusterChildSpec = z.infer<typeof clusterChildSpecSchema>;

export const childMessageSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('ready'),
      kubeUrl: z.string(),
      kubeconfigPath: z.string(),
      /** xDS address per replica, replica order. */
      addresses: z.array(z.string()),
      /** The Lease identity per replica, replica order (the gateway's leader targets). */
      replicaIds: z.array(z.string()),
    })
    .strict(),
  z.object({ type: z.literal('failed'), error: z.string() }).strict(),
]);
export type ClusterChildMessage = z.infer<typeof childMessageSchema>;

export const parentMessageSchema = z.discriminatedUnion('type', [z.object({ type: z.literal('start'), spec: clusterChildSpecSchema }).strict(), z.object({ type: z.literal('close') }).strict()]);
export type ClusterParentMessage = z.infer<typeof parentMessageSchema>;
