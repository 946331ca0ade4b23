// Which namespaces' objects the query function may show (QUERY_NAMESPACES). The function URL is
// AWS_IAM-authenticated, so by default (unset or "*") every caller allowed to invoke it sees every
// namespace, like a cluster-wide reader. With a list, object views outside it answer exactly as a
// missing object does (404), so a caller cannot even learn which objects exist elsewhere; and the
// fleet views are off, because Envoy data is not per namespace (a NACK message may quote another
// namespace's route or cluster names).
import { z } from 'zod';

/** `undefined`: every namespace. Otherwise the allowed namespaces; `''` is a cluster-scoped object. */
export type NamespaceScope = ReadonlySet<string> | undefined;

// A Kubernetes namespace name is an RFC 1123 label (at most 63 characters); `_` names the empty
// namespace of cluster-scoped kinds, as in the object paths.
const namespaceEntry = z.string().regex(/^(_|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/, 'QUERY_NAMESPACES entries are namespace names (RFC 1123 labels) or _ for cluster-scoped objects');

export function parseNamespaceScope(raw: string | undefined): NamespaceScope {
  const trimmed = raw?.trim() ?? '';
  if (trimmed === '' || trimmed === '*') return undefined;
  const entries = trimmed.split(',').map((entry) => entry.trim()).filter((entry) => entry.length > 0);
  return new Set(entries.map((entry) => namespaceEntry.parse(entry)).map((entry) => (entry === '_' ? '' : entry)));
}

export function namespaceAllowed(scope: NamespaceScope, namespace: string): boolean {
  return scope === undefined || scope.has(namespace);
}
