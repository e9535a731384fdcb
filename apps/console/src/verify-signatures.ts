// Author signatures, judged in the browser by the same rule `verifyChain` and
// `vouch verify --bundle` judge them by (@vouch/ledger/signature-rules), against the keys
// of the `system` log, itself verified here against the pinned key(s) like any bundle.
import { type StoredEvent, splitLines, systemOriginOf, verifySystemLog } from '@vouch/audit';
import { createAuthorSignatureJudge, createKeyHistory, KEY_EVENT_KINDS } from '@vouch/ledger/signature-rules';

/** What the signature step found. */
export interface SignatureVerdict {
  state: 'proved' | 'failed' | 'skipped';
  detail: string;
  failures: Array<{ seq: number | null; code: string; rule?: string; message: string }>;
  /** Records that speak for their author, signed and unsigned; null when nothing was judged. */
  authors: { signed: number; unsigned: number } | null;
}

/**
 * Judge every record of `events` (log `log`, whose checkpoint origin is `origin`) by its
 * author signature, against the keys of `systemBundle` (the text of
 * `GET /v1/logs/system/bundle`), which must verify under `verifiers`.
 */
export async function judgeAuthorSignatures(input: {
  log: string;
  origin: string;
  verifiers: readonly string[];
  systemBundle: string;
  events: readonly StoredEvent[];
}): Promise<SignatureVerdict> {
  const origin = systemOriginOf(input.origin, input.log);
  const part = await verifySystemLog(splitLines([input.systemBundle]), {
    verifiers: input.verifiers,
    kinds: KEY_EVENT_KINDS,
    ...(origin === undefined ? {} : { origin }),
  });
  if (part.status === 'broken') {
    const message = `${part.reason}: ${part.failures.map((f) => `seq ${f.seq} ${f.code}`).join(', ')}`;
    return {
      state: 'failed',
      detail: message,
      failures: [{ seq: null, code: 'SYSTEM_PART_INVALID', message }],
      authors: null,
    };
  }
  if (part.status !== 'verified') {
    return { state: 'skipped', detail: `not checked: ${part.reason}`, failures: [], authors: null };
  }
  const history = createKeyHistory();
  for (const event of part.events) history.add(event);
  const failures: SignatureVerdict['failures'] = [];
  const judge = createAuthorSignatureJudge(input.log, (event, violation) =>
    failures.push({
      seq: event.seq,
      code: 'RECORD_RULE_VIOLATION',
      rule: violation.rule,
      message: `${event.kind} ${event.entity}: ${violation.rule}: ${violation.why}`,
    }),
  );
  for (const event of input.events) judge.add(history, event);
  const authors = judge.authors();
  const counted = `${authors.signed} record(s) signed by their author, ${authors.unsigned} unsigned (keys of the system log at ${part.checkpoint.treeSize} events)`;
  return failures.length === 0
    ? { state: 'proved', detail: counted, failures, authors }
    : {
        state: 'failed',
        detail: `${failures.length} signature(s) do not hold; ${counted}`,
        failures,
        authors,
      };
}
