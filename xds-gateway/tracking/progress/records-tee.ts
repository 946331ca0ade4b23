// What the tracker and the watermark sources hand the recorder, handed to the PROGRESS publisher as
// well (--progress): the publisher sees exactly the states and watermarks the recorder is asked to
// store, in the same order, from the same synchronous callbacks. With a StateDemotion
// (--state-writes class-changes) the recorder is handed only the states it says to write, and any
// state of a node whose earlier state it still holds unwritten (the newer one shares that write);
// the publisher still sees every one.
import type { EnvoyEvent, EnvoyState, LineageState, LineageWatermark, NamesHoldRelief, ObjectRef } from '../../../common/core';
import type { EnvoyRecords, ObjectRecords } from '../recorder';
import type { ProgressPublisher } from './progress-publisher';
import type { StateDemotion } from './state-demotion';

export function recordsWithProgress(
  recorder: EnvoyRecords & ObjectRecords & { hasQueuedEnvoyState(nodeId: string): boolean },
  publisher: ProgressPublisher,
  demotion?: { filter: StateDemotion; now: () => number },
): EnvoyRecords & ObjectRecords {
  return {
    enqueueEvent: (event: EnvoyEvent) => recorder.enqueueEvent(event),
    enqueueEnvoyState: (state: EnvoyState, relief?: NamesHoldRelief) => {
      // The publisher's summary of the state serves the demotion's class key too (one per state, not two).
      const summary = publisher.noteEnvoyState(state, relief);
      if (demotion === undefined || demotion.filter.admit(state, demotion.now(), recorder.hasQueuedEnvoyState(state.nodeId), summary)) recorder.enqueueEnvoyState(state);
    },
    enqueueLineageState: (state: LineageState) => recorder.enqueueLineageState(state),
    forgetEnvoy: (nodeId: string) => {
      const forgotten = recorder.forgetEnvoy(nodeId);
      if (forgotten) {
        publisher.forgetEnvoy(nodeId);
        demotion?.filter.forget(nodeId);
      }
      return forgotten;
    },
    enqueueWatermark: (ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark) => {
      recorder.enqueueWatermark(ref, generation, lineage, watermark);
      publisher.noteWatermark(lineage, watermark);
    },
    enqueueNotObservable: (ref: ObjectRef, generation: number, reason: string, at: number) => recorder.enqueueNotObservable(ref, generation, reason, at),
    enqueueRejectedByController: (ref: ObjectRef, generation: number, message: string, at: number) => recorder.enqueueRejectedByController(ref, generation, message, at),
  };
}
