// A reference implementation of the core's EventStore port in memory, written from the port's
// documented contract (common/core/ports.ts). It exists to pin that contract down in executable form
// (event-store-contract.ts) and to let pure-logic unit tests run without DynamoDB. It is not a stand-in
// for the real store in integration tests.
import {
  dedupeEvents,
  fromCarriedEvent,
  type Condition,
  type ConditionalWriteResult,
  type EnvoyEvent,
  type EnvoyState,
  type EventLogBatch,
  type EventStore,
  type PutEventLogsResult,
  type ItemKey,
  type ItemRead,
  type LineageState,
  type LineageWatermark,
  type ObjectGeneration,
  type ObjectRef,
  type Page,
  type PageRequest,
  type PutEventsResult,
} from '../../../common/core';
import { envoyStateKey, lineageStateKey, objectGenerationKey, parseItem, toEnvoyEventItem, toEnvoyEventLogItem, toEnvoyStateItem, toLineageStateItem, toObjectGenerationItem, envoyEventFromItem, envoyStateFromItem, lineageStateFromItem, objectGenerationFromItem, envoyPartitionKey, envoyEventSkPrefix, objectPartitionKey, GENERATION_SK_PREFIX, type ScanRequest, type TableItem } from '../../../common/store';

type Raw = Record<string, unknown>;

export class InMemoryEventStore implements EventStore {
  /** pk → sk → raw item (JSON copies, as a table would hold them). */
  private readonly table = new Map<string, Map<string, Raw>>();

  /** Test seam: store anything, e.g. a corrupt item. */
  putRaw(raw: Raw & ItemKey): void {
    let partition = this.table.get(raw.pk);
    if (partition === undefined) this.table.set(raw.pk, (partition = new Map()));
    partition.set(raw.sk, JSON.parse(JSON.stringify(raw)) as Raw);
  }

  private getRaw(key: ItemKey): Raw | undefined {
    const raw = this.table.get(key.pk)?.get(key.sk);
    return raw === undefined ? undefined : (JSON.parse(JSON.stringify(raw)) as Raw);
  }

  private read<T>(key: ItemKey, kind: TableItem['kind'], strip: (item: never) => T): ItemRead<T> {
    const raw = this.getRaw(key);
    if (raw === undefined) return { status: 'missing' };
    const parsed = parseItem(raw);
    if (!parsed.ok || parsed.item.kind !== kind) {
      const rev = typeof raw.rev === 'number' ? raw.rev : undefined;
      return { status: 'corrupt', error: parsed.ok ? `expected ${kind}, found ${parsed.item.kind}` : parsed.error, ...(rev === undefined ? {} : { rev }) };
    }
    return { status: 'found', value: strip(parsed.item as never) };
  }

  private page<T>(raws: Raw[], request: PageRequest, accept: (item: TableItem) => T | undefined): Page<T> {
    const start = request.cursor === undefined ? 0 : Number(request.cursor);
    const limit = request.limit ?? 100;
    const slice = raws.slice(start, start + limit);
    const page: Page<T> = { items: [], corrupt: [] };
    for (const raw of slice) {
      const parsed = parseItem(raw);
      if (!parsed.ok) page.corrupt.push({ ...(parsed.key === undefined ? {} : { key: parsed.key }), error: parsed.error });
      else {
        const value = accept(parsed.item);
        if (value !== undefined) page.items.push(value);
      }
    }
    if (start + limit < raws.length) page.nextCursor = String(start + limit);
    return page;
  }

  private partition(pk: string, prefix: string, descending: boolean): Raw[] {
    const entries = [...(this.table.get(pk)?.entries() ?? [])].filter(([sk]) => sk.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (descending) entries.reverse();
    return entries.map(([, raw]) => raw);
  }

  private putIfRev(item: TableItem & { rev: number }, expectedRev: number | undefined): boolean {
    const stored = this.getRaw(item);
    const ok = expectedRev === undefined ? stored === undefined : stored !== undefined && stored.rev === expectedRev;
    if (ok) this.putRaw(item);
    return ok;
  }

  async putEvents(events: readonly EnvoyEvent[]): Promise<PutEventsResult> {
    for (const event of events) this.putRaw(toEnvoyEventItem(event));
    return { written: events.length, failed: [] };
  }

  async putEventLogs(batches: readonly EventLogBatch[]): Promise<PutEventLogsResult> {
    for (const batch of batches) this.putRaw(toEnvoyEventLogItem(batch.nodeId, batch.lineage, batch.events));
    return { written: batches.length, failed: [] };
  }

  async getEnvoyState(nodeId: string): Promise<ItemRead<EnvoyState>> {
    return this.read(envoyStateKey(nodeId), 'EnvoyState', envoyStateFromItem);
  }

  async updateEnvoyState(state: EnvoyState, expectedRev: number | undefined): Promise<ConditionalWriteResult<EnvoyState>> {
    const { unlogged, ...rest } = state;
    // No events carried: no attribute (as the DynamoDB store writes it).
    if (this.putIfRev(toEnvoyStateItem(unlogged === undefined || unlogged.length === 0 ? rest : state), expectedRev)) return { ok: true };
    return { ok: false, reason: 'conflict', current: await this.getEnvoyState(state.nodeId) };
  }

  async listEnvoyEvents(nodeId: string, options: PageRequest & { lineage?: string; descending?: boolean } = {}): Promise<Page<EnvoyEvent>> {
    const raws = this.partition(envoyPartitionKey(nodeId), envoyEventSkPrefix(options.lineage), options.descending === true);
    const descending = options.descending === true;
    const page = this.page(raws, options, (item): EnvoyEvent[] | undefined =>
      item.kind === 'EnvoyEvent' ? [envoyEventFromItem(item)] : item.kind === 'EnvoyEventLog' ? item.events.map((event) => fromCarriedEvent(nodeId, event)) : undefined,
    );
    const events = page.items.flat();
    // The events the STATE still carries: on the first page when descending, on the last otherwise (ports.ts).
    if (descending ? options.cursor === undefined : page.nextCursor === undefined) {
      const state = await this.getEnvoyState(nodeId);
      if (state.status === 'found') {
        for (const event of state.value.unlogged ?? []) if (options.lineage === undefined || event.l === options.lineage) events.push(fromCarriedEvent(nodeId, event));
      }
    }
    const result: Page<EnvoyEvent> = { items: dedupeEvents(events, descending), corrupt: page.corrupt };
    if (page.nextCursor !== undefined) result.nextCursor = page.nextCursor;
    return result;
  }

  async listEnvoyStates(options: PageRequest & { group?: string } = {}): Promise<Page<EnvoyState>> {
    const raws = [...this.table.values()].flatMap((partition) => [...partition.values()]).filter((raw) => raw.kind === 'EnvoyState');
    return this.page(raws, options, (item) => (item.kind === 'EnvoyState' && (options.group === undefined || item.group === options.group) ? envoyStateFromItem(item) : undefined));
  }

  private generation(ref: ObjectRef, generation: number, at: number): ObjectGeneration {
    const read = this.read(objectGenerationKey(ref, generation), 'ObjectGeneration', objectGenerationFromItem);
    return read.status === 'found' ? read.value : { object: ref, generation, watermarks: {}, firstSeenAt: at };
  }

  async putWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): Promise<'written' | 'alreadySet'> {
    const current = this.generation(ref, generation, watermark.at);
    if (current.watermarks[lineage] !== undefined) return 'alreadySet';
    this.putRaw(toObjectGenerationItem({ ...current, watermarks: { ...current.watermarks, [lineage]: watermark } }));
    return 'written';
  }

  async markNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): Promise<void> {
    this.putRaw(toObjectGenerationItem({ ...this.generation(ref, generation, at), notObservable: reason }));
  }

  async markRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): Promise<void> {
    this.putRaw(toObjectGenerationItem({ ...this.generation(ref, generation, at), rejectedByController: message }));
  }

  async getObjectGeneration(ref: ObjectRef, generation: number): Promise<ItemRead<ObjectGeneration>> {
    return this.read(objectGenerationKey(ref, generation), 'ObjectGeneration', objectGenerationFromItem);
  }

  async listObjectGenerations(ref: ObjectRef, options: PageRequest & { descending?: boolean } = {}): Promise<Page<ObjectGeneration>> {
    const raws = this.partition(objectPartitionKey(ref), GENERATION_SK_PREFIX, options.descending === true);
    return this.page(raws, options, (item) => (item.kind === 'ObjectGeneration' ? objectGenerationFromItem(item) : undefined));
  }

  async recordCondition(ref: ObjectRef, generation: number, condition: Condition, programmedAt?: number, writtenAt?: number): Promise<void> {
    const current = this.generation(ref, generation, programmedAt ?? 0);
    const record: ObjectGeneration = { ...current, lastCondition: condition, ...(writtenAt === undefined ? {} : { conditionWrittenAt: writtenAt }) };
    if (current.programmedAt === undefined && programmedAt !== undefined) record.programmedAt = programmedAt;
    this.putRaw(toObjectGenerationItem(record));
  }

  async getLineageState(lineage: string): Promise<ItemRead<LineageState>> {
    return this.read(lineageStateKey(lineage), 'LineageState', lineageStateFromItem);
  }

  async putLineageState(state: LineageState, expectedRev: number | undefined): Promise<ConditionalWriteResult<LineageState>> {
    if (this.putIfRev(toLineageStateItem(state), expectedRev)) return { ok: true };
    return { ok: false, reason: 'conflict', current: await this.getLineageState(state.lineage) };
  }

  async scanItems(request: ScanRequest = {}): Promise<Page<TableItem>> {
    const raws = [...this.table.values()].flatMap((partition) => [...partition.values()]);
    return this.page(raws, request, (item) => (request.kind === undefined || item.kind === request.kind ? item : undefined));
  }
}
