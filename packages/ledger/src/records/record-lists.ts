import { isLedgerError, type LedgerErrorCode } from '../errors';
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

/**
 * A proposal in a list whose records the server refuses to derive a story from: a row that
 * does not match its event, or is missing, or a record that breaks a rule the server writes
 * under. The list goes on; the proposal's own story answers with the same refusal, and the
 * integrity alarm was raised where it was found.
 */
export interface ProposalListError {
  seq: number;
  proposal_id: string;
  /**
   * The environment its stored row names, unchecked (the row may be the bad one): only for
   * a caller that shows the list to keys limited to environments. Not part of the answer.
   */
  stored_environment: string | null;
  error: { code: LedgerErrorCode; message: string };
}

/** An item of a proposal list: its summary, or why there is none. */
export type ProposalListItem = ProposalSummary | ProposalListError;

/**
 * The refusals that are about one proposal's records (each raises the integrity alarm where
 * it is found), so one bad row is an error in its own item, not a failed list. Anything else
 * (the database, a closed ledger) still fails the whole list.
 */
const RECORD_REFUSALS: ReadonlySet<string> = new Set<LedgerErrorCode>([
  'RECORD_INTEGRITY_VIOLATION',
  'PROPOSAL_PAYLOAD_MISMATCH',
  'DECISION_NOT_DERIVED',
  'APPROVAL_BOUNDS_VIOLATED',
  'SUPERSESSION_INVALID',
  'RECORD_SIGNATURE_INVALID',
  'INDEPENDENCE_NOT_ASSESSED',
  'EVIDENCE_REUSED',
]);

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
 * can hold fewer than `limit` items and still have a next one. A proposal whose story the
 * server refuses is listed as a {@link ProposalListError}, whatever the derived filter (what
 * it would derive is unknown).
 */
export async function listProposals(
  runtime: RecordsRuntime,
  log: string,
  options: ProposalListFilter & { after?: number; limit?: number },
): Promise<Page<ProposalListItem>> {
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 500);
  const derived = options.outcome !== undefined || options.stage !== undefined;
  const { outcome, stage, after, limit: _, ...columns } = options;
  const rows = await runtime.reads(log).listProposals({
    ...columns,
    after: after ?? 0,
    limit: derived ? limit * SCAN_FACTOR : limit,
  });
  const items: ProposalListItem[] = [];
  let lastRead: number | null = null;
  for (const row of rows) {
    const told = await storyOrRefusal(runtime, log, row.id);
    lastRead = row.seq;
    if ('code' in told) {
      items.push({ seq: row.seq, proposal_id: row.id, stored_environment: row.environment, error: told });
      if (items.length === limit) break;
      continue;
    }
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

/** The story of a proposal, or the refusal about its records that keeps it from being told. */
async function storyOrRefusal(
  runtime: RecordsRuntime,
  log: string,
  proposalId: string,
): Promise<ProposalStory | { code: LedgerErrorCode; message: string }> {
  try {
    return await story(runtime, log, proposalId);
  } catch (error) {
    if (isLedgerError(error) && RECORD_REFUSALS.has(error.code)) {
      return { code: error.code, message: error.message };
    }
    throw error;
  }
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
