import type { ProposalStage } from './outcome';
import type { ProposalColumnFilter } from './queries';
import type { RecordsRuntime } from './records-runtime';
import { type ProposalStory, story } from './story';
import type { ProposalOutcome, ProposalRecord, VerificationRecord } from './types';

/** A proposal in a list: the record, where it stands and what is known of its result. */
export interface ProposalSummary {
  /** The seq of the proposal's event: the list's order and its cursor. */
  seq: number;
  proposal: ProposalRecord;
  stage: ProposalStage;
  outcome: ProposalOutcome;
  verification_status: ProposalStory['verification_status']['status'];
}

/** The filters of a proposal list; `outcome` and `stage` are derived, the rest are stored columns. */
export interface ProposalListFilter extends ProposalColumnFilter {
  outcome?: ProposalOutcome;
  stage?: ProposalStage;
}

/** One page of a list, and the cursor of the next (null: nothing after it). */
export interface Page<T> {
  items: T[];
  next: number | null;
}

/** How many proposals one page may read to find matches of a derived filter. */
const SCAN_FACTOR = 10;

/**
 * Proposals in chain order, narrowed by stored columns in SQL and by their derived `stage`
 * and `outcome` (never stored: computed from every record, as in a story). A derived filter
 * may read up to `limit * 10` proposals per page; `next` is then the last one read, so a page
 * can hold fewer than `limit` items and still have a next one.
 */
export async function listProposals(
  runtime: RecordsRuntime,
  log: string,
  options: ProposalListFilter & { after?: number; limit?: number },
): Promise<Page<ProposalSummary>> {
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 500);
  const derived = options.outcome !== undefined || options.stage !== undefined;
  const { outcome, stage, after, limit: _, ...columns } = options;
  const rows = await runtime.reads(log).listProposals({
    ...columns,
    after: after ?? 0,
    limit: derived ? limit * SCAN_FACTOR : limit,
  });
  const items: ProposalSummary[] = [];
  let lastRead: number | null = null;
  for (const row of rows) {
    const told = await story(runtime, log, row.proposal.id);
    lastRead = row.seq;
    if (
      (outcome === undefined || told.outcome === outcome) &&
      (stage === undefined || told.stage === stage)
    ) {
      items.push({
        seq: row.seq,
        // The story's proposal: checked against its event and opened (erased arguments marked).
        proposal: told.proposal,
        stage: told.stage,
        outcome: told.outcome,
        verification_status: told.verification_status.status,
      });
      if (items.length === limit) break;
    }
  }
  const full = derived
    ? rows.length === limit * SCAN_FACTOR || items.length === limit
    : rows.length === limit;
  return { items, next: full ? lastRead : null };
}

/** Verification records in chain order, optionally of one recorded status (e.g. `failed`). */
export async function listVerifications(
  runtime: RecordsRuntime,
  log: string,
  options: { status?: VerificationRecord['status']; after?: number; limit?: number },
): Promise<Page<{ seq: number; verification: VerificationRecord }>> {
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 500);
  const rows = await runtime.reads(log).listVerifications({
    ...(options.status !== undefined ? { status: options.status } : {}),
    after: options.after ?? 0,
    limit,
  });
  return { items: rows, next: rows.length === limit ? rows[rows.length - 1]!.seq : null };
}
