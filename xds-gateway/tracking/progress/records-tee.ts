// What the tracker and the watermark sources hand the recorder, handed to the PROGRESS publisher as
// well (--progress): the publisher sees exactly the states and watermarks the recorder is asked to
// store, in the same order, from the same synchronous callbacks.
import type { EnvoyEvent, EnvoyState, LineageState, LineageWatermark, ObjectRef } from '../../../common/core';
import type { EnvoyRecords, ObjectRecords } from '../recorder';
import type { ProgressPublisher } from './progress-publisher';

export function recordsWithProgress(recorder: EnvoyRecords & ObjectRecords, publisher: ProgressPublisher): EnvoyRecords & ObjectRecords {
  return {
    enqueueEvent: (event: EnvoyEvent) => recorder.enqueueEvent(event),
    enqueueEnvoyState: (state: EnvoyState) => {
      recorder.enqueueEnvoyState(state);
      publisher.noteEnvoyState(state);
    },
    enqueueLineageState: (state: LineageState) => recorder.enqueueLineageState(state),
    forgetEnvoy: (nodeId: string) => {
      const forgotten = recorder.forgetEnvoy(nodeId);
      if (forgotten) publisher.forgetEnvoy(nodeId);
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
