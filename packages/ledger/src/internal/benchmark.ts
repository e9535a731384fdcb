// Internal: for the benchmarks in `bench/` only. Not part of the public API, never used by a
// server, and free to change without notice.

/** Turn off (and on) the check of each record read against its event, to measure what it costs. */
export { setRecordReadChecks } from '../records/record-reads';
