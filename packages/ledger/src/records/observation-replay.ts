import { canonicalJson, sameIdentity } from '@vouch/audit';
import type { RecordReads } from './record-reads';
import type { Caller, ObservationRecord, ProposalRecord } from './types';

/** What an observation keeps of the body the gateway posted: what the tool did, in its words. */
type ObservedFields = Pick<
  ObservationRecord,
  'outcome' | 'result' | 'transport_status' | 'tool_error' | 'started_at' | 'finished_at' | 'result_source'
>;

const observedFieldsOf = (o: ObservedFields): ObservedFields => ({
  outcome: o.outcome,
  result: o.result,
  transport_status: o.transport_status,
  tool_error: o.tool_error,
  started_at: o.started_at,
  finished_at: o.finished_at,
  ...(o.result_source === undefined ? {} : { result_source: o.result_source }),
});

/**
 * Is this post the observation already recorded for its proposal, sent again (a retry), or
 * another account of the same execution? A replay comes from the identity that executed and
 * says the same thing: what the record keeps of the body is compared as canonical JSON, so
 * key order and defaults the caller left out cannot make a retry look different, and no other
 * outcome, result, status or timing passes as the same. The authorization claims
 * (`payload_hash`, `approval_request_id`) are not stored; they are checked against what the
 * observation was recorded under instead.
 */
export async function isObservationReplay(
  reads: RecordReads,
  input: {
    recorded: ObservationRecord;
    proposal: ProposalRecord;
    caller: Caller;
    attempt: ObservedFields & { payload_hash?: string | undefined; approval_request_id?: string | undefined };
  },
): Promise<boolean> {
  const { recorded, proposal, caller, attempt } = input;
  if (!sameIdentity(caller.identity, recorded.executed_by)) return false;
  if (canonicalJson(observedFieldsOf(attempt)) !== canonicalJson(observedFieldsOf(recorded))) return false;
  if (attempt.payload_hash !== undefined && attempt.payload_hash !== proposal.payload_hash) return false;
  // Without an approval use the decision allowed outright, and a named request was not read then either.
  if (attempt.approval_request_id === undefined || recorded.approval_use_id === null) return true;
  const uses = await reads.usesOf(attempt.approval_request_id);
  return uses.some((use) => use.id === recorded.approval_use_id);
}
