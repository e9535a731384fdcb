// `@vouch/audit/witness`: keep a checkpoint of a log and prove later that the log only grew,
// from a live server (`witnessLog`, through `@vouch/audit/transport`) or a bundle (`witnessBundle`).
export type {
  WitnessBundleOptions,
  WitnessCheckpointView,
  WitnessLogOptions,
  WitnessOutcome,
  WitnessReport,
  WitnessStatus,
} from './witness';
export { logOfOrigin, witnessBundle, witnessLog } from './witness';
export type { WitnessAnswer, WitnessedCheckpoint, WitnessStateStore } from './witness-add-checkpoint';
export { addCheckpoint, memoryWitnessState } from './witness-add-checkpoint';
export type { WitnessFetch, WitnessResponse } from './witness-http';
export type { NextTrustedNote } from './witness-trusted-note';
export { nextTrustedNote } from './witness-trusted-note';
