// A SotW client re-sends its whole subscription with every request: an Envoy's EDS request at 1,000
// clusters names 1,000 resources, ACK after ACK. Rebuilding a name set, sorting it into a key and
// re-checking references against it on every ACK made the gateway's work per ACK grow with the
// names (docs/bench/README.md, round 7). Both readers of a request (the relay's stream and the
// tracker) keep the array they last built from, and rebuild only when this says it changed. The
// relay's request decoding hands every request naming the same resources the same array
// (xds-gateway/relay/request-decoding.ts), so the usual ACK is answered by the identity check.

/** Whether `next` lists exactly the names of `previous`, in the same order (the usual ACK). */
export function sameRequestedNames(previous: readonly string[] | undefined, next: readonly string[]): boolean {
  if (previous === next) return true;
  if (previous === undefined || previous.length !== next.length) return false;
  for (let index = 0; index < next.length; index++) if (previous[index] !== next[index]) return false;
  return true;
}

/** A request's names as a subscription reads them: the names other than `*`, and whether `*` is among them. */
export interface RequestedNameSet {
  names: ReadonlySet<string>;
  star: boolean;
}

/**
 * Memoised per array: a list shared by many streams (every Envoy's EDS names, by the request decoding)
 * gets one set for all of them, built once, instead of one per stream and reader (1,000 names are
 * ~40 KB of set per copy). Weakly held: a list no request holds any more takes its set with it.
 */
const nameSets = new WeakMap<readonly string[], RequestedNameSet>();

export function requestedNameSet(requested: readonly string[]): RequestedNameSet {
  let set = nameSets.get(requested);
  if (set === undefined) {
    set = { names: new Set(requested.filter((name) => name !== '*')), star: requested.includes('*') };
    nameSets.set(requested, set);
  }
  return set;
}
