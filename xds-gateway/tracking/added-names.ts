// The names behind one Envoy's added-names holds, per type. The core's NamesChange holds a type in
// bulk: from the first request that adds names until the ACK of a response sent after the last one
// (core applyNamesAdded, applySent, applyAck). For the names-hold relief (name-owners.ts) the tracker
// needs which names are still unserved, by the same rule applied per name: a name added before the
// latest response sent is served when that response is ACKed (an ACK answers the latest response:
// core classifyRequest), one added after it is not.
export class AddedNames {
  /** Per type: names added since the latest response sent (`unsent`) and before it (`sent`), or 'unknown' (the type went wildcard). */
  private readonly types = new Map<string, { unsent: Set<string>; sent: Set<string> } | 'unknown'>();
  private changes = 0;

  /** Moves with every change of what `held` answers (callers keep answers computed from it). */
  get version(): number {
    return this.changes;
  }

  /** A request added `names` to the type's subscription ('all': it became wildcard). */
  added(typeUrl: string, names: readonly string[] | 'all'): void {
    this.changes++;
    const known = this.types.get(typeUrl);
    if (names === 'all' || known === 'unknown') {
      this.types.set(typeUrl, 'unknown');
      return;
    }
    const entry = known ?? { unsent: new Set<string>(), sent: new Set<string>() };
    for (const name of names) entry.unsent.add(name);
    this.types.set(typeUrl, entry);
  }

  /** A response was sent on the type: it carries every name added so far. */
  responseSent(typeUrl: string): void {
    this.move(typeUrl, 'unsent', 'sent');
  }

  /** The Envoy ACKed the latest response on the type: the names it carried are served. */
  acked(typeUrl: string): void {
    this.move(typeUrl, 'sent', undefined);
  }

  /** The type's subscription began again on a new stream: a response sent on the old one counts for nothing. */
  restarted(typeUrl: string): void {
    this.move(typeUrl, 'sent', 'unsent');
  }

  /** Moves the type's names from one set to the other (`to` undefined: they are served, dropped). */
  private move(typeUrl: string, from: 'sent' | 'unsent', to: 'sent' | 'unsent' | undefined): void {
    const entry = this.types.get(typeUrl);
    if (entry === undefined || entry === 'unknown' || entry[from].size === 0) return;
    this.changes++;
    if (to !== undefined) for (const name of entry[from]) entry[to].add(name);
    entry[from].clear();
  }

  /** The names of the type not yet served, or 'unknown'; undefined when none were recorded. */
  held(typeUrl: string): readonly string[] | 'unknown' | undefined {
    const entry = this.types.get(typeUrl);
    if (entry === undefined || entry === 'unknown') return entry;
    return [...entry.sent, ...entry.unsent];
  }

  /** Keeps only the types `stillHeld` says hold added names (the core state's NamesChange, not a reference hold). */
  retain(stillHeld: (typeUrl: string) => boolean): void {
    for (const typeUrl of this.types.keys()) {
      if (stillHeld(typeUrl)) continue;
      this.types.delete(typeUrl);
      this.changes++;
    }
  }

  get empty(): boolean {
    return this.types.size === 0;
  }
}
