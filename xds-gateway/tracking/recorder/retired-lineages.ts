// Lineages the relay retired (a group moved, or was freed when idle: docs/GATEWAY.md, "What a flood of
// node groups leaves behind"). What the recorder keeps per lineage goes once nothing of the lineage is
// queued; the lineage is then remembered as forgotten (bounded): a state that still arrived on one
// would be counted from zero and its LINEAGE item rewritten with a count that leaves the others out,
// so such a state is dropped instead (its Envoy's streams on that lineage are long gone).

/** Forgotten lineages remembered so that a late state on one is dropped, not counted from zero. */
const MAX_FORGOTTEN_LINEAGES = 10_000;

export class RetiredLineages {
  private readonly retired = new Set<string>();
  /** Most recent last. */
  private readonly forgotten = new Set<string>();

  retire(lineage: string): void {
    this.retired.add(lineage);
  }

  isForgotten(lineage: string): boolean {
    return this.forgotten.has(lineage);
  }

  /** Forgets (through `forget`) every retired lineage not in `busy()` (lineages with something queued). */
  forgetIdle(busy: () => ReadonlySet<string>, forget: (lineage: string) => void): void {
    if (this.retired.size === 0) return;
    const queued = busy();
    for (const lineage of [...this.retired]) {
      if (queued.has(lineage)) continue;
      this.retired.delete(lineage);
      forget(lineage);
      this.forgotten.add(lineage);
      if (this.forgotten.size > MAX_FORGOTTEN_LINEAGES) {
        const oldest = this.forgotten.values().next().value;
        if (oldest !== undefined) this.forgotten.delete(oldest);
      }
    }
  }
}
