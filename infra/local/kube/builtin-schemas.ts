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
