import { type ChainHead, type ChainReport, createChainChecker } from '@vouch/audit';
import type { Database } from './database';
import { streamEvents } from './event-store';
import { checkRecordTables } from './records/check-record-tables';

export interface VerifyChainOptions {
  log: string;
  /** A head the auditor trusts from earlier (`--expect-head SEQ:HASH`). */
  expectHead?: ChainHead;
  onProgress?: (checked: number) => void;
  signal?: AbortSignal;
  pageSize?: number;
}

/**
 * Verify a log straight from the database with constant memory: every payload hash, event
 * hash and link is recomputed from the stored bytes, and every break is reported.
 */
export async function verifyChain(database: Database, options: VerifyChainOptions): Promise<ChainReport> {
  const checker = createChainChecker({
    log: options.log,
    ...(options.expectHead ? { expectHead: options.expectHead } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  for await (const event of streamEvents(database, options.log, { pageSize: options.pageSize ?? 5_000 })) {
    options.signal?.throwIfAborted();
    checker.check(event);
  }
  const report = checker.finish();
  // The chain alone cannot see a record row that no event accounts for, or one edited after
  // its event was written: cross-check the record tables against the events.
  for await (const failure of checkRecordTables(database, options.log, {
    ...(options.signal ? { signal: options.signal } : {}),
  })) {
    report.failures.push(failure);
  }
  report.failures.sort((a, b) => a.seq - b.seq);
  return { ...report, ok: report.failures.length === 0 };
}
