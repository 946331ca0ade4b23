// Per replica: which rebuild produced which versions, and which object generations each type's
// content reflected at that version. This is the ground truth a checker compares the gateway's
// watermarks against ("version V of type T is the first to contain X@G").
import { TYPE_SHORT_NAMES, type ResourceTypeUrl } from '../../../common/xds/type-urls';

export type TypeShortName = (typeof TYPE_SHORT_NAMES)[ResourceTypeUrl];

export interface RebuildObject {
  /** `group/kind/namespace/name` (no generation). */
  object: string;
  generation: number;
  valid: boolean;
}

export interface RebuildRecord {
  replicaId: string;
  /** 1, 2, 3… per replica. */
  seq: number;
  /** Milliseconds since the epoch when the snapshot was set. */
  at: number;
  versions: Record<TypeShortName, string>;
  /** Types whose version changed in this rebuild. */
  changedTypes: TypeShortName[];
  /** Per type: `group/kind/namespace/name@generation` of every object reflected in that type's content. */
  contained: Record<TypeShortName, string[]>;
  /** Every HTTPProxy and HTTPRoute the rebuild read, valid (HTTPRoute: served) or not. */
  objects: RebuildObject[];
}

/**
 * Bounded: keeps the latest `capacity` records (each lists every contained object, so an unbounded log
 * of a large fleet's rebuilds would grow without limit in long runs). Queries see retained records only.
 */
export class RebuildLog {
  private readonly records: RebuildRecord[] = [];

  constructor(private readonly capacity = 10_000) {}

  append(record: RebuildRecord): void {
    this.records.push(record);
    if (this.records.length > this.capacity * 1.1) this.records.splice(0, this.records.length - this.capacity);
  }

  all(): readonly RebuildRecord[] {
    return this.records;
  }

  latest(): RebuildRecord | undefined {
    return this.records[this.records.length - 1];
  }

  /**
   * The first rebuild whose `type` content contains `object` at `generation` or later (a later generation
   * supersedes an earlier one), with that type's version. Undefined if none yet.
   */
  firstContaining(object: string, generation: number, type: TypeShortName): { seq: number; version: string } | undefined {
    for (const record of this.records) {
      const hit = record.contained[type].some((source) => {
        const at = source.lastIndexOf('@');
        return source.slice(0, at) === object && Number(source.slice(at + 1)) >= generation;
      });
      if (hit) return { seq: record.seq, version: record.versions[type] };
    }
    return undefined;
  }

  /** The rebuild that last processed `object` at exactly `generation` (valid or not). */
  processed(object: string, generation: number): RebuildRecord | undefined {
    return this.records.find((r) => r.objects.some((o) => o.object === object && o.generation === generation));
  }
}
