// The HTTPProxy CustomResourceDefinition subset this control plane reads (projectcontour.io/v1),
// with the status subresource so spec changes alone bump metadata.generation. The spec schema is
// deliberately loose (preserve-unknown-fields): validation errors are reported as Valid=False by the
// control plane, as Contour does, rather than refused by the API server.
import { HTTPPROXY_GROUP, HTTPPROXY_PLURAL } from './model';

export const HTTPPROXY_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${HTTPPROXY_PLURAL}.${HTTPPROXY_GROUP}` },
  spec: {
    group: HTTPPROXY_GROUP,
    names: { plural: HTTPPROXY_PLURAL, singular: 'httpproxy', kind: 'HTTPProxy', listKind: 'HTTPProxyList', shortNames: ['proxy', 'proxies'] },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
} as const;
