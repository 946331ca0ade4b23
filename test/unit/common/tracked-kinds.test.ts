// The one TRACKED_KINDS entry schema (common/tracked-kinds.ts) and the two readers built on it: the
// gateway's (xds-gateway/tracking/tracked-kinds.ts, needs `signal`) and the status writer's
// (functions/kube/tracked-kinds.ts, needs a CRD group and version). Each accepts what it accepted
// before the schema was shared, and a bad entry is rejected with a message naming the field.
import { describeTrackedKindIssues, TrackedKindSchema } from '../../../common/tracked-kinds';
import { parseTrackedKinds } from '../../../functions/kube/tracked-kinds';
import { HTTPPROXY_KIND, HTTPROUTE_KIND, TrackedKindsSchema as GatewayTrackedKindsSchema } from '../../../xds-gateway/tracking/tracked-kinds';

const widget = { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets' };

function issues(value: unknown): string {
  const parsed = TrackedKindSchema.safeParse(value);
  return parsed.success ? 'accepted' : describeTrackedKindIssues(parsed.error);
}

describe('TrackedKindSchema (shared)', () => {
  it('accepts the status writer\'s entries and the gateway\'s, and one entry carrying both sides\' fields', () => {
    expect(TrackedKindSchema.parse(widget)).toEqual({ ...widget, namespaced: true });
    expect(TrackedKindSchema.parse({ ...widget, namespaced: false, conditionType: 'xds-programmed.dev/Programmed', placement: 'parents' })).toMatchObject({ namespaced: false, placement: 'parents' });
    expect(TrackedKindSchema.parse(HTTPPROXY_KIND)).toEqual(HTTPPROXY_KIND);
    expect(TrackedKindSchema.parse(HTTPROUTE_KIND)).toEqual(HTTPROUTE_KIND);
    const both = { ...widget, namespaced: false, conditionType: 'Ready', signal: { type: 'none', reason: 'no observedGeneration' } };
    expect(TrackedKindSchema.parse(both)).toEqual(both);
    // The core group and unusual versions are the gateway's to watch (kindPath handles "").
    expect(TrackedKindSchema.parse({ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', signal: { type: 'none' } })).toMatchObject({ group: '' });
    // A `condition` signal defaults its condition type to Valid, as before.
    expect(TrackedKindSchema.parse({ ...widget, signal: { type: 'condition' } }).signal).toEqual({ type: 'condition', conditionType: 'Valid' });
  });

  it.each([
    [{ ...widget, kind: '1Widget' }, 'kind: a kind is CamelCase'],
    [{ ...widget, plural: 'Widgets' }, 'plural: a plural is a lowercase DNS label'],
    [{ ...widget, version: '' }, 'version:'],
    [{ ...widget, conditionType: 'has spaces' }, 'conditionType: a condition type is CamelCase'],
    [{ ...widget, placement: 'spec' }, 'placement:'],
    [{ ...widget, namespaced: 'yes' }, 'namespaced:'],
    [{ ...widget, signal: { type: 'maybe' } }, 'signal.type:'],
    [{ version: 'v1', kind: 'Widget', plural: 'widgets' }, 'group:'],
  ])('rejects %j naming the field (%s)', (entry, message) => {
    expect(issues(entry)).toContain(message);
  });
});

describe('the gateway\'s reading of TRACKED_KINDS', () => {
  it('accepts entries with a signal, keeps them as given, and an empty list', () => {
    const kinds = [{ ...widget, signal: { type: 'none' } }, HTTPPROXY_KIND];
    expect(GatewayTrackedKindsSchema.parse(kinds)).toEqual([{ ...widget, namespaced: true, signal: { type: 'none' } }, HTTPPROXY_KIND]);
    expect(GatewayTrackedKindsSchema.parse([])).toEqual([]);
  });

  it('rejects an entry without a signal, naming it', () => {
    const parsed = GatewayTrackedKindsSchema.safeParse([widget]);
    expect(parsed.success).toBe(false);
    if (!parsed.success) expect(describeTrackedKindIssues(parsed.error)).toMatch(/^0\.signal: /);
  });
});

describe('the status writer\'s reading of TRACKED_KINDS', () => {
  it('accepts entries without a signal (namespaced by default) and the gateway\'s presets', () => {
    expect(parseTrackedKinds(JSON.stringify([widget]))).toEqual([{ ...widget, namespaced: true }]);
    expect(parseTrackedKinds(JSON.stringify([HTTPPROXY_KIND, HTTPROUTE_KIND]))).toEqual([HTTPPROXY_KIND, HTTPROUTE_KIND]);
  });

  it.each([
    [undefined, /TRACKED_KINDS is not set/],
    ['[{', /TRACKED_KINDS is not JSON/],
    ['[]', /TRACKED_KINDS must name at least one kind/],
    [JSON.stringify([{ ...widget, version: '1' }]), /TRACKED_KINDS is invalid: 0\.version: versions look like v1/],
    [JSON.stringify([widget, { ...widget, group: '' }]), /TRACKED_KINDS is invalid: 1\.group: .*custom resource groups are DNS subdomains/],
    [JSON.stringify([{ ...widget, group: 'Example.COM' }]), /0\.group: custom resource groups are DNS subdomains/],
    [JSON.stringify([{ ...widget, plural: 'Widgets' }]), /0\.plural: a plural is a lowercase DNS label/],
  ])('rejects %s', (json, message) => {
    expect(() => parseTrackedKinds(json)).toThrow(message);
  });
});
