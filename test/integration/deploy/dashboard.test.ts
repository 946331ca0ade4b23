// The Grafana dashboard (infra/grafana/xds-programmed.json) against a real gateway: every metric
// named in a panel's PromQL or a template variable's query is one the gateway's /metrics exports
// (a histogram's _bucket/_sum/_count included), and every metric of the gateway's own (all but
// prom-client's process and Node.js ones) is on some panel. The checker is shown to catch a panel
// naming a metric that does not exist.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { httpGet, startGatewayOnLocalSystem, type GatewayOnLocalSystem } from '../gateway/helpers';

const REPO_ROOT = join(__dirname, '..', '..', '..');
const DASHBOARD_PATH = join(REPO_ROOT, 'infra', 'grafana', 'xds-programmed.json');

const datasource = z.object({ type: z.literal('prometheus'), uid: z.literal('${datasource}') });
const panelSchema = z
  .object({
    id: z.number().int(),
    type: z.string(),
    title: z.string().min(1),
    gridPos: z.object({ h: z.number().int().positive(), w: z.number().int().positive().max(24), x: z.number().int().min(0).max(23), y: z.number().int().min(0) }),
    datasource: datasource.optional(),
    targets: z.array(z.object({ refId: z.string(), expr: z.string().min(1), datasource }).passthrough()).optional(),
  })
  .passthrough();
const dashboardSchema = z
  .object({
    uid: z.string(),
    title: z.string(),
    schemaVersion: z.number(),
    templating: z.object({ list: z.array(z.object({ name: z.string(), type: z.string(), query: z.union([z.string(), z.object({ query: z.string() }).passthrough()]).optional() }).passthrough()) }),
    panels: z.array(panelSchema),
  })
  .passthrough();
type Dashboard = z.infer<typeof dashboardSchema>;

const PROMQL_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'atan2', 'inf', 'nan']);

/**
 * Metric names in a PromQL expression: identifiers left once strings, label matchers `{…}`, ranges
 * `[…]` (and the Grafana variables in them) and grouping clauses `by (…)` are taken out, that are
 * neither keywords nor followed by `(` (functions and aggregations) nor part of a number or duration.
 */
export function metricNames(expr: string): string[] {
  const labelValues = /^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$/s.exec(expr);
  if (labelValues !== null) return metricNames(labelValues[1] ?? '');
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]')
    // Grouping clauses go whole, so `sum by (x) (…)` reads as the aggregation it is.
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of text.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const before = text[match.index - 1] ?? '';
    const after = text.slice(match.index + word.length).trimStart()[0] ?? '';
    if (PROMQL_KEYWORDS.has(word) || after === '(' || /[0-9.$]/.test(before)) continue;
    names.push(word);
  }
  return [...new Set(names)];
}

/** Every series name a Prometheus text exposition can have, from its `# TYPE` lines. */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = match;
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/** Every PromQL expression of the dashboard, with where it is. */
function expressions(dashboard: Dashboard): Array<{ where: string; expr: string }> {
  const found: Array<{ where: string; expr: string }> = [];
  for (const panel of dashboard.panels) for (const target of panel.targets ?? []) found.push({ where: `panel "${panel.title}" target ${target.refId}`, expr: target.expr });
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query' || variable.query === undefined) continue;
    found.push({ where: `variable $${variable.name}`, expr: typeof variable.query === 'string' ? variable.query : variable.query.query });
  }
  return found;
}

/** Metrics the dashboard names that the gateway does not export, as "where: name" lines. */
export function unknownMetrics(dashboard: Dashboard, exported: Set<string>): string[] {
  return expressions(dashboard).flatMap(({ where, expr }) => metricNames(expr).filter((name) => !exported.has(name)).map((name) => `${where}: ${name}`));
}

function loadDashboard(): Dashboard {
  return dashboardSchema.parse(JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')));
}

describe('metricNames (PromQL)', () => {
  it('finds metric names and nothing else', () => {
    expect(metricNames('sum by (operation) (rate(a_seconds_sum{job=~"$job", x="rate(b)"}[$__rate_interval])) / sum by (operation) (rate(a_seconds_count[5m]))')).toEqual(['a_seconds_sum', 'a_seconds_count']);
    expect(metricNames('histogram_quantile(0.99, sum by (le, group) (rate(c_bucket{g="1"}[1m])))')).toEqual(['c_bucket']);
    expect(metricNames('max(d) > 1e3 and on (instance) e offset 5m')).toEqual(['d', 'e']);
    expect(metricNames('f')).toEqual(['f']);
    expect(metricNames('label_values(g{job=~"$job"}, instance)')).toEqual(['g']);
  });
});

describe('the Grafana dashboard against a real gateway', () => {
  let system: GatewayOnLocalSystem;
  let exported: Set<string>;
  const dashboard = loadDashboard();

  beforeAll(async () => {
    // Process metrics on: the dashboard's CPU and memory panels read them.
    system = await startGatewayOnLocalSystem('dashboard-metrics', {}, { defaultMetrics: true });
    const scrape = await httpGet(system.gateway.opsPort, '/metrics');
    expect(scrape.status).toBe(200);
    exported = exportedNames(scrape.body);
  });

  afterAll(async () => {
    await system.close();
  });

  it('is well formed: unique panel ids, on the 24-column grid, every query on the Prometheus variable', () => {
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels) expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    expect(dashboard.templating.list.find((variable) => variable.name === 'datasource')?.type).toBe('datasource');
    expect(expressions(dashboard).length).toBeGreaterThan(20);
  });

  it('names only metrics the gateway exports', () => {
    // Every series name of ours carries the project's prefix, process metrics included.
    for (const name of exported) expect(name).toMatch(/^xds_programmed_gateway_/);
    expect(unknownMetrics(dashboard, exported)).toEqual([]);
  });

  it('shows every metric of the gateway\'s own', () => {
    const used = new Set(expressions(dashboard).flatMap(({ expr }) => metricNames(expr)).map((name) => name.replace(/_(bucket|sum|count)$/, '')));
    const own = [...exported].filter((name) => !/^xds_programmed_gateway_(process|nodejs)_/.test(name) && !/_(bucket|sum|count)$/.test(name));
    expect(own.length).toBeGreaterThan(20);
    expect(own.filter((name) => !used.has(name))).toEqual([]);
  });

  it('catches a panel naming a metric that does not exist', () => {
    const broken = structuredClone(dashboard);
    const panel = broken.panels.find((candidate) => (candidate.targets ?? []).length > 0);
    const target = panel?.targets?.[0];
    if (panel === undefined || target === undefined) throw new Error('no panel with a query');
    target.expr = 'sum(rate(xds_programmed_gateway_acks_total{job=~"$job"}[$__rate_interval])) / sum(xds_programmed_gateway_streams)';
    expect(unknownMetrics(broken, exported)).toEqual([`panel "${panel.title}" target ${target.refId}: xds_programmed_gateway_acks_total`]);
    // And the old names, from before the project-wide prefix.
    target.expr = 'xds_gateway_streams';
    expect(unknownMetrics(broken, exported)).toEqual([`panel "${panel.title}" target ${target.refId}: xds_gateway_streams`]);
  });
});
