import type { ChainFailure, StoredEvent } from '@vouch/audit';
import { createKeyHistory, type KeyEvent } from '../keys/key-history';
import { recordRuleFailure } from '../records/record-rules';
import { createAuthorSignatureJudge } from './author-signature-judge';

/**
 * {@link createAuthorSignatureJudge} reporting as verification does: a record whose
 * signature breaks the rule is a `RECORD_RULE_VIOLATION` with the rule, its table, id and actor.
 */
export function createAuthorSignatureCheck(log: string, fail: (failure: ChainFailure) => void) {
  return createAuthorSignatureJudge(log, (event, violation) =>
    fail(recordRuleFailure(event, violation.rule, violation.why, { actor: event.actor })),
  );
}

/**
 * {@link createAuthorSignatureCheck} for a log whose `system` log is not at hand but in a
 * bundle (`verifySystemPart`): the key history is built from that part's key events
 * (`KEY_EVENT_KINDS`), in seq order, as the database's is from its rows.
 */
export function createBundleSignatureCheck(
  log: string,
  keyEvents: readonly KeyEvent[],
  fail: (failure: ChainFailure) => void,
) {
  const history = createKeyHistory();
  for (const event of keyEvents) history.add(event);
  const check = createAuthorSignatureCheck(log, fail);
  return { add: (event: StoredEvent) => check.add(history, event), authors: check.authors };
}
