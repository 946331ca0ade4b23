// The functions' one configuration table (functions/lib/config.ts): defaults, per-variable errors,
// slices that fail only on their own variables, empty values, and that every variable the table
// knows is one serverless.yml or the docs name (so names cannot drift).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  AGGREGATE_SETTINGS,
  CONDITION_RESYNC_SETTINGS,
  FunctionsConfig,
  FunctionsConfigError,
  HANDOFF_SETTINGS,
  KUBE_ACCESS_SETTINGS,
  QUERY_SETTINGS,
  STATUS_SETTINGS,
  type FunctionsVariable,
} from '../../../functions/lib/config';

describe('FunctionsConfig', () => {
  it('applies the documented defaults', () => {
    const config = FunctionsConfig.fromEnv({ TABLE_NAME: 'events' });
    expect(config.slice(AGGREGATE_SETTINGS)).toEqual({ TABLE_NAME: 'events', ENVOY_TTL_MS: 300_000, ACK_TIMEOUT_MS: 30_000, AGGREGATE_SHARDS: 16, REQUIRED_TYPE_URLS: [], PROGRESS_EVALUATION: true });
    expect(config.slice(HANDOFF_SETTINGS)).toEqual({
      STATUS_HANDOFF: true,
      STATUS_HANDOFF_CONCURRENCY: 16,
      STATUS_HANDOFF_TIMEOUT_MS: 2000,
      ENVOY_TTL_MS: 300_000,
      CONDITION_TYPE: 'EnvoyProgrammed',
      STATUS_WRITE_ON_MESSAGE_CHANGE: false,
      STATUS_MESSAGE_REFRESH_MS: 10_000,
    });
    expect(config.slice(CONDITION_RESYNC_SETTINGS)).toMatchObject({ RESYNC_MAX_OBJECTS: 500, RESYNC_MAX_SCANNED_ITEMS: 50_000, DELETED_OBJECT_RETENTION_MS: 3_600_000 });
    expect(config.slice(QUERY_SETTINGS)).toEqual({ TABLE_NAME: 'events', ENVOY_TTL_MS: 300_000, ACK_TIMEOUT_MS: 30_000, QUERY_MAX_FLEET_SCAN: 20_000, QUERY_NAMESPACES: undefined, PROGRESS_EVALUATION: true, REQUIRED_TYPE_URLS: [] });
    expect(config.slice(['TRACKED_KINDS', 'DECISION_REFRESH_MS'])).toEqual({ TRACKED_KINDS: undefined, DECISION_REFRESH_MS: 0 });
  });

  it('parses values into their types', () => {
    const config = FunctionsConfig.fromEnv({
      STATUS_HANDOFF: 'false',
      STATUS_WRITE_ON_MESSAGE_CHANGE: 'true',
      REQUIRED_TYPE_URLS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster, type.googleapis.com/envoy.config.listener.v3.Listener',
      TRACKED_KINDS: '[{"group":"example.com","version":"v1","kind":"Widget","plural":"widgets"}]',
    });
    expect(config.slice(['STATUS_HANDOFF', 'STATUS_WRITE_ON_MESSAGE_CHANGE'])).toEqual({ STATUS_HANDOFF: false, STATUS_WRITE_ON_MESSAGE_CHANGE: true });
    expect(config.slice(['REQUIRED_TYPE_URLS']).REQUIRED_TYPE_URLS).toEqual(['type.googleapis.com/envoy.config.cluster.v3.Cluster', 'type.googleapis.com/envoy.config.listener.v3.Listener']);
    expect(config.slice(['TRACKED_KINDS']).TRACKED_KINDS).toEqual([{ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true }]);
  });

  it('names every bad variable of a slice, and only a slice that reads it fails', () => {
    const config = FunctionsConfig.fromEnv({ TABLE_NAME: 'events', STATUS_HANDOFF_TIMEOUT_MS: '0', CONDITION_TYPE: 'has spaces', TRACKED_KINDS: '[{' });
    let error: unknown;
    try {
      config.slice(HANDOFF_SETTINGS);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FunctionsConfigError);
    expect((error as FunctionsConfigError).problems.map((p) => p.variable)).toEqual(['STATUS_HANDOFF_TIMEOUT_MS', 'CONDITION_TYPE']);
    expect((error as Error).message).toMatch(/^invalid configuration: STATUS_HANDOFF_TIMEOUT_MS: .*; CONDITION_TYPE: a condition type is CamelCase/);
    expect(() => config.slice(['TRACKED_KINDS'])).toThrow(/TRACKED_KINDS: TRACKED_KINDS is not JSON/);
    // The aggregates and the query do not read those variables.
    expect(config.slice(AGGREGATE_SETTINGS).TABLE_NAME).toBe('events');
    expect(config.slice(QUERY_SETTINGS).TABLE_NAME).toBe('events');
    expect(() => FunctionsConfig.fromEnv({ REQUIRED_TYPE_URLS: 'type.googleapis.com/a#b' }).slice(AGGREGATE_SETTINGS)).toThrow(/TABLE_NAME: not set; REQUIRED_TYPE_URLS: REQUIRED_TYPE_URLS has an invalid type URL/);
  });

  it('reads empty values as unset, except where the query function asks for them as given', () => {
    const env = { TABLE_NAME: 'events', ENVOY_TTL_MS: '', QUERY_NAMESPACES: '', TRACKED_KINDS: '' };
    const config = FunctionsConfig.fromEnv(env);
    expect(config.isSet('TRACKED_KINDS')).toBe(false);
    expect(config.isSet('TABLE_NAME')).toBe(true);
    expect(config.slice(['ENVOY_TTL_MS']).ENVOY_TTL_MS).toBe(300_000);
    const asGiven = FunctionsConfig.fromEnv(env, { emptyIsUnset: false });
    expect(asGiven.slice(['QUERY_NAMESPACES']).QUERY_NAMESPACES).toBe('');
    expect(() => asGiven.slice(QUERY_SETTINGS)).toThrow(/ENVOY_TTL_MS/);
  });

  it('knows only variables that serverless.yml or the docs (FUNCTIONS.md, CONVERGENCE.md) name', () => {
    const root = join(__dirname, '..', '..', '..');
    const named = readFileSync(join(root, 'serverless.yml'), 'utf8') + readFileSync(join(root, 'docs', 'FUNCTIONS.md'), 'utf8') + readFileSync(join(root, 'docs', 'CONVERGENCE.md'), 'utf8');
    const table: FunctionsVariable[] = [
      ...AGGREGATE_SETTINGS,
      ...STATUS_SETTINGS,
      ...HANDOFF_SETTINGS,
      ...CONDITION_RESYNC_SETTINGS,
      ...QUERY_SETTINGS,
      ...KUBE_ACCESS_SETTINGS,
      'TRACKED_KINDS',
      'DECISION_REFRESH_MS',
    ];
    expect(table.filter((name) => !named.includes(name))).toEqual([]);
  });
});
