// `kind/name` as kubectl spells it → the object reference the query API uses. Known kinds by any of
// their kubectl names; any other kind as `Kind.group/name` (e.g. `Widget.example.com/w1`).
import type { ObjectRef } from '../core/identity';

export interface KindInfo {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

const KNOWN_KINDS: Array<KindInfo & { names: string[] }> = [
  { group: 'projectcontour.io', version: 'v1', kind: 'HTTPProxy', plural: 'httpproxies', namespaced: true, names: ['httpproxy', 'httpproxies', 'proxy', 'proxies', 'httpproxy.projectcontour.io', 'httpproxies.projectcontour.io'] },
  { group: 'gateway.networking.k8s.io', version: 'v1', kind: 'HTTPRoute', plural: 'httproutes', namespaced: true, names: ['httproute', 'httproutes', 'httproute.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io'] },
];

export interface ParsedRef {
  ref: ObjectRef;
  /** Known kinds carry what a Kubernetes lookup needs (plural, version). */
  kind?: KindInfo;
}

/** Parses `kind/name`; throws an Error whose message is fit for the user. */
export function parseObjectRef(text: string, namespace: string): ParsedRef {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1 || text.indexOf('/', slash + 1) !== -1) {
    throw new Error(`expected kind/name (e.g. httpproxy/web), got ${JSON.stringify(text)}`);
  }
  const kindText = text.slice(0, slash);
  const name = text.slice(slash + 1);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) throw new Error(`${JSON.stringify(name)} is not a Kubernetes object name`);
  const known = KNOWN_KINDS.find((kind) => kind.names.includes(kindText.toLowerCase()));
  if (known !== undefined) {
    const { names: _names, ...kind } = known;
    return { ref: { group: kind.group, kind: kind.kind, namespace: kind.namespaced ? namespace : '', name }, kind };
  }
  const dot = kindText.indexOf('.');
  if (dot > 0 && /^[A-Z][A-Za-z0-9]*$/.test(kindText.slice(0, dot))) {
    return { ref: { group: kindText.slice(dot + 1), kind: kindText.slice(0, dot), namespace, name } };
  }
  throw new Error(`unknown kind ${JSON.stringify(kindText)}: use httpproxy, httproute, or Kind.group (e.g. Widget.example.com/${name})`);
}

export function formatRef(ref: ObjectRef): string {
  return `${ref.kind}${ref.group === '' ? '' : `.${ref.group}`} ${ref.namespace === '' ? '' : `${ref.namespace}/`}${ref.name}`;
}
