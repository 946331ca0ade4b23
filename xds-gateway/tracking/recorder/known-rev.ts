// What the recorder knows of a stored item's rev, for its conditional writes (ports.ts: a write is
// conditional on the rev it replaces; a conflict answers with the item as stored).
import type { ItemRead } from '../../../common/core';

export interface KnownRev<T> {
  /** The rev stored by our last successful write or read; undefined: unknown (write as if absent). */
  rev: number | undefined;
  stored?: T;
}

/** The rev (and item) a conflicting write found stored. */
export function readToRev<T extends { rev: number }>(read: ItemRead<T>): KnownRev<T> {
  switch (read.status) {
    case 'found':
      return { rev: read.value.rev, stored: read.value };
    case 'missing':
      return { rev: undefined };
    case 'corrupt':
      // Replace the corrupt item (the store logged it with its key).
      return { rev: read.rev };
  }
}
