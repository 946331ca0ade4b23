// Input model of the reference control plane: a subset of Contour's projectcontour.io/v1 HTTPProxy,
// Kubernetes core/v1 Endpoints, and TLS Secrets. Objects arrive as `unknown` from a RouteSource and
// are validated here (zod) at the edge: metadata problems reject the object (logged, skipped); spec
// problems keep the object and make it Valid=False, as Contour does.
import { z } from 'zod';
import type { HTTPRouteObject } from './gateway-api';
import { kubeName, objectMetadataSchema } from './object-metadata';

export const HTTPPROXY_GROUP = 'projectcontour.io';
export const HTTPPROXY_KIND = 'HTTPProxy';
export const HTTPPROXY_API_VERSION = 'projectcontour.io/v1';
export const HTTPPROXY_PLURAL = 'httpproxies';

/** Annotation that makes the translator emit a route configuration grpc-js-xds (and our simulated Envoys) NACK. */
export const FORCE_NACK_ANNOTATION = 'xds-programmed.dev/force-nack';

export interface ObjectKey {
  namespace: string;
  name: string;
}

export function objectKeyString(key: ObjectKey): string {
  return `${key.namespace}/${key.name}`;
}


/** An HTTPProxy as the control plane sees it: metadata validated, spec still unknown. */
export const httpProxyObjectSchema = z.object({
  metadata: objectMetadataSchema,
  spec: z.unknown(),
  status: z.unknown().optional(),
});
export type HTTPProxyObject = z.infer<typeof httpProxyObjectSchema>;

const portNumber = z.number().int().min(1).max(65535);

export const httpProxyServiceSchema = z.object({
  name: kubeName,
  port: portNumber,
  weight: z.number().int().min(0).optional(),
});

export const httpProxyConditionSchema = z.object({
  prefix: z.string().optional(),
});

export const httpProxyRouteSchema = z.object({
  conditions: z.array(httpProxyConditionSchema).optional(),
  services: z.array(httpProxyServiceSchema).min(1, 'a route needs at least one service'),
});

export const httpProxySpecSchema = z.object({
  virtualhost: z
    .object({
      fqdn: z.string().min(1),
      tls: z.object({ secretName: kubeName }).optional(),
    })
    .optional(),
  routes: z.array(httpProxyRouteSchema).optional(),
});
export type HTTPProxySpec = z.infer<typeof httpProxySpecSchema>;
export type HTTPProxyRoute = z.infer<typeof httpProxyRouteSchema>;

/** core/v1 Endpoints, only what we translate. `generation` is ours (Endpoints have none in Kubernetes; the Kubernetes source derives one). */
export const endpointsObjectSchema = z.object({
  metadata: objectMetadataSchema,
  subsets: z
    .array(
      z.object({
        addresses: z.array(z.object({ ip: z.string().min(1) })).optional(),
        ports: z.array(z.object({ name: z.string().optional(), port: portNumber })).optional(),
      }),
    )
    .optional(),
});
export type EndpointsObject = z.infer<typeof endpointsObjectSchema>;

/** A kubernetes.io/tls Secret reduced to its PEM strings. */
export const tlsSecretObjectSchema = z.object({
  metadata: objectMetadataSchema,
  certificateChain: z.string().min(1),
  privateKey: z.string().min(1),
});
export type TlsSecretObject = z.infer<typeof tlsSecretObjectSchema>;

/** Everything a rebuild reads. */
export interface RouteInputs {
  proxies: HTTPProxyObject[];
  endpoints: EndpointsObject[];
  secrets: TlsSecretObject[];
  /** Gateway API HTTPRoutes (gateway-api.ts); absent when the source has none to offer. */
  httpRoutes?: HTTPRouteObject[];
}
