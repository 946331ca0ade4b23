// One object's message refresh, step by step (docs/CONVERGENCE.md, "Freshness of the message"), on a
// RefreshWorld of 10 Envoys: Pending 0/10 written; 8 Envoys ACK at once (the stored decision says 8/10
// while the last write is younger than the interval); nothing follows but the gateway's heartbeat (the
// refresh sweep corrects the message); once a write is due, a 9th ACK; the last ACK (True). What was
// written at each step is what status-refresh.test.ts asserts; when it was written is what
// bench/message-refresh.ts prints (the project measures speed in benchmarks, never in tests).
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../../common/core/status-update';
import type { ObjectGeneration } from '../../../common/core';
import { waitFor, waitForDecision } from './convergence-support';
import { widget, type Condition, type RefreshWorld, type StatusWrite } from './status-refresh-support';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The condition's message ('' without one). */
export const messageOf = (condition: Condition | undefined): string => String(condition?.['message'] ?? '');

export interface MessageRefreshTimeline {
  /** The object's status writes when each step ended (the watch's view). */
  afterFirstWrite: StatusWrite[];
  /** 2 s after the decision said 8/10: what the interval held back. */
  heldBack: { writes: StatusWrite[]; message: string };
  /** Once the message said 8/10 (the sweep's write), and the object's generation item once it recorded that write. */
  afterRefresh: StatusWrite[];
  refreshedItem: ObjectGeneration | undefined;
  /** Once the message said 9/10 (the due change's write). */
  afterDueChange: StatusWrite[];
  /** Once True, the functions idle and a heartbeat later: every write. */
  final: StatusWrite[];
  /** The object's generation item then (the recorded condition and its write time). */
  item: ObjectGeneration | undefined;
  /** When the stored decision first said 8/10: the message was stale from then. */
  staleFrom: number;
  /** When the 9th Envoy ACKed (a write was due then). */
  dueAckedAt: number;
}

/** Runs the steps for a new object `name` (generation 1); `w` must have 10 Envoys. */
export async function runMessageRefreshTimeline(w: RefreshWorld, name: string, heartbeatMs: number): Promise<MessageRefreshTimeline> {
  const writesOf = (): StatusWrite[] => w.writes().filter((write) => write.name === name);
  const messageNow = async (): Promise<string> => messageOf(await w.conditionOf(name));
  await w.createWidget(name);
  await w.rebuild([name]);
  await waitFor('Pending 0/10 written', async () => ((await messageNow()).startsWith('0/10 Envoys') ? true : undefined));
  const afterFirstWrite = writesOf();

  // Eight Envoys ACK at once: the stored decision says 8/10 straight away…
  for (const envoy of w.envoys.slice(0, 8)) await envoy.ackAll(Date.now());
  await waitForDecision(w.world, widget(name), 1, (d) => d.programmed === 8, 'decision 8/10');
  const staleFrom = Date.now();
  // …while our last write is younger than the interval.
  await sleep(2000);
  const heldBack = { writes: writesOf(), message: await messageNow() };

  // No Envoy record comes any more (only the gateway's heartbeat): the sweep's turn.
  await waitFor('message corrected to 8/10', async () => ((await messageNow()).startsWith('8/10 Envoys') ? true : undefined), DEFAULT_MESSAGE_REFRESH_MS + heartbeatMs + 10_000);
  const afterRefresh = writesOf();
  // The item records a write after Kubernetes has it: the refreshed item is the one that records 8/10.
  const refreshedItem = await waitFor('the refresh recorded on the item', async () => {
    const item = await generationItem(w, name);
    return item?.lastCondition?.message.startsWith('8/10 Envoys') === true ? item : undefined;
  });

  // A change arriving once a write is due.
  const refreshAt = afterRefresh[afterRefresh.length - 1]?.at ?? Date.now();
  await sleep(Math.max(0, refreshAt + DEFAULT_MESSAGE_REFRESH_MS - Date.now()) + 200);
  const dueAckedAt = Date.now();
  await w.envoys[8]?.ackAll(dueAckedAt);
  await waitFor('message 9/10', async () => ((await messageNow()).startsWith('9/10 Envoys') ? true : undefined), 10_000);
  const afterDueChange = writesOf();

  // The last Envoy: True, and nothing after it.
  await w.envoys[9]?.ackAll(Date.now());
  await waitFor('True', async () => ((await w.conditionOf(name))?.['status'] === 'True' ? true : undefined));
  await w.idle();
  await sleep(heartbeatMs + 500);
  return { afterFirstWrite, heldBack, afterRefresh, refreshedItem, afterDueChange, final: writesOf(), item: await generationItem(w, name), staleFrom, dueAckedAt };
}

async function generationItem(w: RefreshWorld, name: string): Promise<ObjectGeneration | undefined> {
  const read = await w.world.store.getObjectGeneration(widget(name), 1);
  return read.status === 'found' ? read.value : undefined;
}
