import type { ChainFailure, StoredEvent } from '@vouch/audit';
import { SIGNING_KEY_EVENT_KINDS } from '../signatures/signing-key-events';
import { KEY_CREATED, KEY_EXPIRES, KEY_REVOKED, SYSTEM_LOG } from './api-key-events';
import { createKeyHistory } from './key-history';

/** The kinds {@link createKeyAuthorityCheck} reads: a caller that streams only some events passes these. */
export const KEY_EVENT_KINDS: readonly string[] = [
  KEY_CREATED,
  KEY_REVOKED,
  KEY_EXPIRES,
  ...SIGNING_KEY_EVENT_KINDS,
];

/** Every key event's kind starts so: one comparison tells the rest of the log apart. */
const KEY_KIND_PREFIX = 'api_key.';

/**
 * Every `api_key.created`, `api_key.revoked` and `api_key.expires` event of the `system` log
 * must be written by someone who could (the rule: {@link createKeyHistory}). Each break is a
 * `RECORD_RULE_VIOLATION` at the event's seq, with `rule` `KEY_ISSUER_FORBIDDEN`,
 * `KEY_REACH_FORBIDDEN` or `KEY_REVOKER_FORBIDDEN`, `table` `api_keys` or
 * `api_key_revocations` and `id` the key.
 *
 * The runtime database role can append a key event and its row in any actor's name (they
 * match, so the key tables' check passes): this is what tells a key only an admin or the
 * operator could have issued from one it could not.
 *
 * Fed by the caller that streams the log anyway (`verifyChain`): `add` every event in seq
 * order. On any log but `system` it does nothing; there, anything but a key event costs a
 * comparison. Reads nothing from the database.
 */
export function createKeyAuthorityCheck(log: string, fail: (failure: ChainFailure) => void) {
  if (log !== SYSTEM_LOG) return { add(_event: StoredEvent): void {} };
  const history = createKeyHistory();
  return {
    add(event: StoredEvent): void {
      if (!event.kind.startsWith(KEY_KIND_PREFIX) && !SIGNING_KEY_EVENT_KINDS.includes(event.kind)) return;
      const violation = history.add(event);
      if (violation === null) return;
      fail({
        seq: event.seq,
        code: 'RECORD_RULE_VIOLATION',
        rule: violation.rule,
        table: SIGNING_KEY_EVENT_KINDS.includes(event.kind)
          ? 'signing_keys'
          : event.kind === KEY_CREATED
            ? 'api_keys'
            : 'api_key_revocations',
        id: event.entity,
        message: `${event.kind} ${event.entity}: ${violation.why}`,
      });
    },
  };
}
