import { parseHeader } from './bundle-scan';
import { type BundleFailure, type BundleReport, verifyBundle } from './bundle-verify';
import type { StoredEvent } from './event-hash';
import type { NoteVerifier } from './note-keys';

/** The log whose events hold the signing keys and API keys every other log is judged by. */
const SYSTEM_LOG = 'system';

/**
 * What the `system` part of a bundle's header (see `encodeBundle`) gives an offline verifier:
 * - `absent`: none (a bundle written before it, of the `system` log itself, or by an
 *   exporter whose reader may not read `system`): author signatures cannot be checked;
 * - `untrusted`: its checkpoint is signed by no key the auditor passed (the `system` log's
 *   key is missing from them): author signatures cannot be checked;
 * - `broken`: it does not verify (an edited event, a root its checkpoint did not sign):
 *   its failures;
 * - `verified`: its events of the kinds asked for, in seq order, up to its signed checkpoint.
 */
export type SystemPart =
  | { status: 'absent' | 'untrusted'; reason: string }
  | { status: 'broken'; reason: string; failures: BundleFailure[] }
  | { status: 'verified'; events: StoredEvent[]; checkpoint: NonNullable<BundleReport['checkpoint']> };

/**
 * Verify the `system` part of the bundle whose header line is `headerLine`, as a bundle of
 * its own against the same trusted `verifiers` (pass the `system` log's key among them), and
 * keep its events of `kinds`. The part must be of log `system` and, when the bundle's
 * origin is `<prefix>/<log>`, signed for origin `<prefix>/system`: the same server's.
 *
 * The part is the whole `system` log from its first event, not inclusion proofs of some of
 * its events: a proof shows that an event is in the log, never that no other is, and the
 * events left out (a revocation) are the ones that change a verdict.
 */
export async function verifySystemPart(
  headerLine: string,
  options: { verifiers: readonly (NoteVerifier | string)[]; kinds: readonly string[] },
): Promise<SystemPart> {
  const header = parseHeader(headerLine);
  if (header === undefined) return { status: 'absent', reason: 'the bundle has no header' };
  if (header.log === SYSTEM_LOG) {
    return { status: 'absent', reason: 'a bundle of the system log holds its keys itself' };
  }
  const lines = header.system;
  if (lines === undefined) {
    return { status: 'absent', reason: "the bundle carries no part of the system log (the authors' keys)" };
  }
  if (!Array.isArray(lines) || !lines.every((line) => typeof line === 'string')) {
    return { status: 'broken', reason: 'its system member is not a list of lines', failures: [] };
  }
  const origin = systemOriginOf(header.origin, header.log);
  return verifySystemLog(lines, { ...options, ...(origin === undefined ? {} : { origin }) });
}

/** The origin of the same server's `system` log when `log`'s origin is `<prefix>/<log>`; else undefined. */
export function systemOriginOf(origin: string, log: string): string | undefined {
  const suffix = `/${log}`;
  return origin.endsWith(suffix) ? `${origin.slice(0, -suffix.length)}/${SYSTEM_LOG}` : undefined;
}

/**
 * Verify the lines of a bundle of the `system` log (the part a bundle's header carries, or
 * `GET /v1/logs/system/bundle`) against the trusted `verifiers`, for `origin` when given,
 * and keep its events of `kinds` (see {@link SystemPart}).
 */
export async function verifySystemLog(
  lines: Iterable<string> | AsyncIterable<string>,
  options: { verifiers: readonly (NoteVerifier | string)[]; kinds: readonly string[]; origin?: string },
): Promise<SystemPart> {
  const events: StoredEvent[] = [];
  const report = await verifyBundle(lines, {
    verifiers: options.verifiers,
    log: SYSTEM_LOG,
    ...(options.origin === undefined ? {} : { origin: options.origin }),
    onEvent: (event) => {
      if (options.kinds.includes(event.kind)) events.push(event);
    },
  });
  if (report.ok) return { status: 'verified', events, checkpoint: report.checkpoint! };
  if (report.failures.every((failure) => failure.code === 'NO_TRUSTED_SIGNATURE')) {
    return {
      status: 'untrusted',
      reason: `the system log's checkpoint is signed by no key you trust: pass its key too`,
    };
  }
  return {
    status: 'broken',
    reason: 'the part of the system log does not verify',
    failures: report.failures,
  };
}
