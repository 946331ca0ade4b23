// A minimal CustomResourceDefinition for Gateway API HTTPRoutes (gateway.networking.k8s.io/v1),
// written for the local API server and this control plane, not the upstream one: namespaced, with
// the status subresource (so only spec changes bump metadata.generation and status is written
// through /status). The spec stays loose (preserve-unknown-fields) for the same reason as
// httpproxy-crd.ts: the control plane reports what it cannot use as Accepted=False. status.parents
// is declared (a list of objects) because writers check that the schema keeps it before writing
// their entries there (functions/kube/status-writer.ts), and the API server would prune it otherwise.
import { HTTPROUTE_CRD_NAME, HTTPROUTE_GROUP, HTTPROUTE_KIND, HTTPROUTE_PLURAL, HTTPROUTE_VERSION } from './gateway-api';

export const HTTPROUTE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: HTTPROUTE_CRD_NAME },
  spec: {
    group: HTTPROUTE_GROUP,
    names: { plural: HTTPROUTE_PLURAL, singular: 'httproute', kind: HTTPROUTE_KIND, listKind: 'HTTPRouteList', categories: ['gateway-api'] },
    scope: 'Namespaced',
    versions: [
      {
        name: HTTPROUTE_VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: {
                type: 'object',
                properties: {
                  parents: {
                    type: 'array',
                    items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
} as const;
