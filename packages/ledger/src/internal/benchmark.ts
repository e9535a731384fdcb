// Internal: for the benchmarks in `bench/` only. Not part of the public API, never used by a
// server, and free to change without notice.

/** Read Postgres events as COPY text (the default) or as the driver's rows, to measure the difference. */
export { setEventStreamVia } from '../event-store';
/** Turn off (and on) the check of each record read against its event, to measure what it costs. */
export { setRecordReadChecks } from '../records/record-reads';
