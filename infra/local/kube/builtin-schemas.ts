// Structural schemas for the built-in types, so `fieldValidation=Strict` (what kubectl sends)
// rejects unknown fields for them as the real apiserver does. Field lists follow
// k8s.io/api core/v1 Namespace, coordination/v1 Lease and apiextensions/v1 CRD.
import type { JsonObject } from './json';

const string: JsonObject = { type: 'string' };
const integer: JsonObject = { type: 'integer' };
const boolean: JsonObject = { type: 'boolean' };
const stringList: JsonObject = { type: 'array', items: string };
const anything: JsonObject = { 'x-kubernetes-preserve-unknown-fields': true };

const condition: JsonObject = {
  type: 'object',
  properties: { type: string, status: string, lastTransitionTime: string, lastUpdateTime: string, observedGeneration: integer, reason: string, message: string },
};

export const NAMESPACE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    spec: { type: 'object', properties: { finalizers: stringList } },
    status: { type: 'object', properties: { phase: string, conditions: { type: 'array', items: condition } } },
  },
};

export const LEASE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        holderIdentity: string,
        leaseDurationSeconds: integer,
        acquireTime: string,
        renewTime: string,
        leaseTransitions: integer,
        strategy: string,
        preferredHolder: string,
      },
    },
  },
};

const names: JsonObject = {
  type: 'object',
  properties: { plural: string, singular: string, kind: string, listKind: string, shortNames: stringList, categories: stringList },
};

export const CUSTOM_RESOURCE_DEFINITION_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        group: string,
        names,
        scope: string,
        preserveUnknownFields: boolean,
        conversion: anything,
        versions: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              name: string,
              served: boolean,
              storage: boolean,
              deprecated: boolean,
              deprecationWarning: string,
              // JSONSchemaProps is recursive and open-ended: kept as sent.
              schema: { type: 'object', properties: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
              subresources: { type: 'object', properties: { status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, scale: anything } },
              additionalPrinterColumns: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
              selectableFields: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          },
        },
      },
    },
    status: {
      type: 'object',
      properties: { conditions: { type: 'array', items: condition }, acceptedNames: names, storedVersions: stringList },
    },
  },
};

// The kinds an ingress controller reads (Contour: docs/CONTOUR.md). Field lists follow the Go
// types of k8s.io/api v0.34 (core/v1, discovery/v1, networking/v1); like the apiserver's strict
// decoder, a field these schemas do not name is dropped (a 400 with fieldValidation=Strict).
const int32 = integer;
const stringMap: JsonObject = { type: 'object', additionalProperties: string };
const intOrString: JsonObject = { 'x-kubernetes-int-or-string': true };
const objectList = (properties: JsonObject, required: string[] = []): JsonObject => ({
  type: 'array',
  items: { type: 'object', properties, ...(required.length > 0 ? { required } : {}) },
});
const objectReference: JsonObject = {
  type: 'object',
  properties: { kind: string, namespace: string, name: string, uid: string, apiVersion: string, resourceVersion: string, fieldPath: string },
};
const metaCondition: JsonObject = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: { type: string, status: string, observedGeneration: integer, lastTransitionTime: string, reason: string, message: string },
};
const portStatus = objectList({ port: int32, protocol: string, error: string }, ['port', 'protocol']);

export const SERVICE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        ports: objectList({ name: string, protocol: string, appProtocol: string, port: int32, targetPort: intOrString, nodePort: int32 }, ['port']),
        selector: stringMap,
        clusterIP: string,
        clusterIPs: stringList,
        type: string,
        externalIPs: stringList,
        sessionAffinity: string,
        loadBalancerIP: string,
        loadBalancerSourceRanges: stringList,
        externalName: string,
        externalTrafficPolicy: string,
        healthCheckNodePort: int32,
        publishNotReadyAddresses: boolean,
        sessionAffinityConfig: { type: 'object', properties: { clientIP: { type: 'object', properties: { timeoutSeconds: int32 } } } },
        ipFamilies: stringList,
        ipFamilyPolicy: string,
        allocateLoadBalancerNodePorts: boolean,
        loadBalancerClass: string,
        internalTrafficPolicy: string,
        trafficDistribution: string,
      },
    },
    status: {
      type: 'object',
      properties: {
        loadBalancer: { type: 'object', properties: { ingress: objectList({ ip: string, hostname: string, ipMode: string, ports: portStatus }) } },
        conditions: { type: 'array', items: metaCondition },
      },
    },
  },
};

export const SECRET_SCHEMA: JsonObject = {
  type: 'object',
  properties: { immutable: boolean, data: stringMap, stringData: stringMap, type: string },
};

export const CONFIG_MAP_SCHEMA: JsonObject = {
  type: 'object',
  properties: { immutable: boolean, data: stringMap, binaryData: stringMap },
};

export const ENDPOINT_SLICE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    addressType: string,
    endpoints: objectList(
      {
        addresses: stringList,
        conditions: { type: 'object', properties: { ready: boolean, serving: boolean, terminating: boolean } },
        hostname: string,
        targetRef: objectReference,
        deprecatedTopology: stringMap,
        nodeName: string,
        zone: string,
        hints: {
          type: 'object',
          properties: { forZones: objectList({ name: string }, ['name']), forNodes: objectList({ name: string }, ['name']) },
        },
      },
      ['addresses'],
    ),
    ports: objectList({ name: string, protocol: string, port: int32, appProtocol: string }),
  },
};

const ingressBackend: JsonObject = {
  type: 'object',
  properties: {
    service: {
      type: 'object',
      required: ['name'],
      properties: { name: string, port: { type: 'object', properties: { name: string, number: int32 } } },
    },
    resource: { type: 'object', required: ['kind', 'name'], properties: { apiGroup: string, kind: string, name: string } },
  },
};

export const INGRESS_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        ingressClassName: string,
        defaultBackend: ingressBackend,
        tls: objectList({ hosts: stringList, secretName: string }),
        rules: objectList({
          host: string,
          http: { type: 'object', required: ['paths'], properties: { paths: objectList({ path: string, pathType: string, backend: ingressBackend }, ['pathType', 'backend']) } },
        }),
      },
    },
    status: {
      type: 'object',
      properties: {
        loadBalancer: { type: 'object', properties: { ingress: objectList({ ip: string, hostname: string, ports: portStatus }) } },
      },
    },
  },
};

export const EVENT_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    involvedObject: objectReference,
    reason: string,
    message: string,
    source: { type: 'object', properties: { component: string, host: string } },
    firstTimestamp: { type: 'string', nullable: true },
    lastTimestamp: { type: 'string', nullable: true },
    count: int32,
    type: string,
    eventTime: { type: 'string', nullable: true },
    series: { type: 'object', properties: { count: int32, lastObservedTime: string } },
    action: string,
    related: objectReference,
    reportingComponent: string,
    reportingInstance: string,
  },
};
