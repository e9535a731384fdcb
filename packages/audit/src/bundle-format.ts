import { AuditError } from './errors';
import type { StoredEvent } from './event-hash';

/**
 * A bundle of any log but `system` may carry, in its header, the `system` log's own bundle up
 * to a signed checkpoint of that log: the header member `system`, an array of that bundle's
 * lines (its header, its events, its checkpoint line) as strings. It holds the signing-key
 * history (enrolments, revocations, `signatures.required`, and the API-key events the
 * enrolment rule depends on) that an offline verifier needs to judge each record's author
 * signature as `verifyChain` does (`bundle-system-part.ts`). It is verified on its own, like
 * any bundle, against the keys the auditor trusts; nothing of it is trusted for being in the
 * header. A reader that does not know it ignores it, as any informational member: it then
 * checks no author signature, as before.
 *
 * `vouch-bundle/2` (what `encodeBundle` writes) is `vouch-bundle/1` with one addition: an
 * event whose payload commits to its fields one by one (`"commitment":"fields/1"`, or
 * `"member-fields/1:<member>"` for a record whose member holds the field hashes, see
 * docs/chain.md) carries two more members, `commitment` and `fields` (an object of
 * `{"salt","value"}` openings, one per field not erased; `{}` when all were). Both or
 * neither: an event line with exactly the ten members below is an event under the
 * whole-payload rule. Readers take both formats; a `/1` bundle simply has no such events.
 *
 * An erased field has no opening; the verifier reports it with the `event.redacted` event
 * of the same bundle that authorized it, or as `REDACTION_UNAUTHORIZED` when none does.
 *
 * `vouch-bundle/1`: a self-contained export of one log that an auditor verifies offline
 * with nothing but the log's checkpoint verifier key(s).
 *
 * A bundle is JSON Lines (UTF-8, one JSON value per line, each line ending in `\n`):
 *
 * 1. One header line, a JSON object:
 *    `{"format":"vouch-bundle/1","log":"<log id>","origin":"<checkpoint origin>","treeSize":<N>}`
 *    Other header members (e.g. `exportedAt`) are informational and ignored. Nothing in the
 *    header is trusted: it is checked against the events and the signed checkpoint.
 * 2. `N` event lines, one `StoredEvent` each, seq 1 to N in order, as JSON objects with
 *    exactly the members `log, seq, kind, entity, actor, at, payload, payload_hash,
 *    prev_hash, hash` (no others: a member no hash covers could pass for audited data).
 *    `payload` is the canonical JSON text that was hashed, as a JSON string, so the bytes
 *    the verifier hashes are the bytes the ledger hashed.
 * 3. One checkpoint line: `{"checkpoint":"<signed note text>"}`, a c2sp.org/tlog-checkpoint
 *    for tree size exactly `N` whose root is the RFC 9162 Merkle root over the events'
 *    `hash` values (leaf index = seq - 1).
 *
 * Nothing may follow the checkpoint line except empty lines (what splitting a text that
 * ends in a newline leaves). A bundle of an empty log has N = 0, no event lines, and a
 * checkpoint of size 0 whose root is SHA-256 of the empty string.
 */
export const BUNDLE_FORMAT = 'vouch-bundle/2';

/** Every bundle format a reader accepts. */
export const BUNDLE_FORMATS = ['vouch-bundle/1', BUNDLE_FORMAT] as const;

/** The first line of a bundle. */
export interface BundleHeader {
  format: (typeof BUNDLE_FORMATS)[number];
  log: string;
  origin: string;
  treeSize: number;
  [informational: string]: unknown;
}

/** The members of an event line, in the order `encodeBundle` writes them. */
export const BUNDLE_EVENT_FIELDS = [
  'log',
  'seq',
  'kind',
  'entity',
  'actor',
  'at',
  'payload',
  'payload_hash',
  'prev_hash',
  'hash',
] as const satisfies readonly (keyof StoredEvent)[];

/**
 * The lines of a bundle (without their `\n`), header first, checkpoint last: what an export
 * endpoint or CLI writes. `checkpoint` must be a signed checkpoint at `treeSize` and
 * `events` exactly seq 1..treeSize; signing it before streaming the events lets the
 * exporter stream with constant memory.
 *
 * @example
 * for await (const line of encodeBundle({ log, origin, treeSize, checkpoint, events })) out.write(`${line}\n`);
 */
export async function* encodeBundle(bundle: {
  log: string;
  origin: string;
  treeSize: number;
  checkpoint: string;
  events: AsyncIterable<StoredEvent> | Iterable<StoredEvent>;
  /** Informational header members, e.g. `{ exportedAt }`. */
  extra?: Record<string, unknown>;
  /** The lines of the `system` log's bundle, for the verifier to judge author signatures by. */
  system?: readonly string[];
}): AsyncGenerator<string> {
  const header: BundleHeader = {
    ...bundle.extra,
    ...(bundle.system === undefined ? {} : { system: bundle.system }),
    format: BUNDLE_FORMAT,
    log: bundle.log,
    origin: bundle.origin,
    treeSize: bundle.treeSize,
  };
  yield JSON.stringify(header);
  for await (const event of bundle.events) {
    // Copy member by member: a row object with extra columns must not leak them into the bundle.
    const line: Record<string, unknown> = {};
    for (const field of BUNDLE_EVENT_FIELDS) line[field] = event[field];
    if (event.commitment !== undefined && event.commitment !== null) {
      // Without its content the event would read as every field erased, without authority.
      if (event.fields === undefined) {
        throw new AuditError(
          'MALFORMED_BUNDLE',
          `event ${event.seq} commits to fields: bundle it with its content`,
        );
      }
      line.commitment = event.commitment;
      line.fields = event.fields;
    }
    yield JSON.stringify(line);
  }
  yield JSON.stringify({ checkpoint: bundle.checkpoint });
}

/**
 * Split a text stream into lines (on `\n`), holding one line at a time: feed it the chunks
 * of a bundle file or an HTTP body and pass the result to `verifyBundle`. A final empty
 * line after the last `\n` is not yielded.
 */
export async function* splitLines(chunks: AsyncIterable<string> | Iterable<string>): AsyncGenerator<string> {
  let pending = '';
  for await (const chunk of chunks) {
    pending += chunk;
    let start = 0;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      yield pending.slice(start, newline);
      start = newline + 1;
      newline = pending.indexOf('\n', start);
    }
    pending = pending.slice(start);
  }
  if (pending !== '') yield pending;
}
