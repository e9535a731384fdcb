import { openCheckpoint } from './checkpoint';
import { type CosignatureVerifier, verifyCosignatures } from './cosignature';
import type { NoteVerifier } from './note-keys';

/** What a witness keeps once a check came out consistent. */
export interface NextTrustedNote {
  /** The note to save in place of the trusted one, or null to keep the trusted file as it is. */
  note: string | null;
  /** Why the trusted note was kept although the log grew (it carries cosignatures the new one lacks). */
  kept?: string;
  /**
   * With `kept`: the newer note, to check the log from next time and keep beside the trusted
   * one. A witness that checked from the kept note forever would stop advancing, and a
   * served note needs only one signature line added (by anyone: a line no key of yours
   * verifies proves nothing) to make it keep one: from then on it would not see a
   * truncation back to the kept size, or a rewrite after it.
   */
  ahead?: string;
}

/**
 * Decide which checkpoint note a witness trusts next, given the one it trusted (`null` at
 * first use) and the one the server signed and the check accepted. Both must already have
 * opened under `verifiers`.
 *
 * A trusted note may carry more than the log's signature: other witnesses' cosignatures
 * (extra signature lines, c2sp.org/signed-note), which are what exposes a split view. The
 * server serves its checkpoints signed by the log alone, so replacing the file with what it
 * serves would throw that evidence away:
 * - same checkpoint text (same size and root): keep every signature line of both notes;
 * - a grown log whose note lacks a cosigner of the trusted one (with `witnesses`: a valid
 *   cosignature by one of them; without, a line under the name and key id of one): keep the
 *   trusted note, say so in `kept`, and hand back the newer one as `ahead`, to check from
 *   next time.
 */
export function nextTrustedNote(options: {
  trusted: string | null;
  served: string;
  verifiers: readonly (NoteVerifier | string)[];
  /**
   * The witnesses the auditor trusts (`vouch verify --witness`): then only their valid
   * cosignatures are worth keeping a note for, and a line by anyone else is not.
   */
  witnesses?: readonly (CosignatureVerifier | string)[];
}): NextTrustedNote {
  const { trusted, served, verifiers, witnesses } = options;
  if (trusted === null) return { note: served };
  if (trusted === served) return { note: null };
  const old = splitNote(trusted);
  const next = splitNote(served);
  if (old.text === next.text) {
    const lines = [...old.signatures, ...next.signatures.filter((line) => !old.signatures.includes(line))];
    const merged = `${old.text}\n${lines.join('')}`;
    if (merged === trusted) return { note: null };
    // Too many signature lines for one note: keeping the trusted one loses nothing it had.
    return { note: openCheckpoint(merged, { verifiers }).ok ? merged : null };
  }
  const openedOld = openCheckpoint(trusted, { verifiers });
  const openedNext = openCheckpoint(served, { verifiers });
  if (!openedOld.ok || !openedNext.ok) return { note: null };
  // Without the witnesses' keys a cosigner is known by the name and key id its line carries
  // (a log key the auditor did not pass signs both notes, and counts as present): a served
  // line under the same name and id passes for it, whatever its bytes. `witnesses` checks them.
  const [kept, present] =
    witnesses && witnesses.length > 0
      ? [validCosigners(trusted, witnesses), validCosigners(served, witnesses)]
      : [openedOld.unverified, [...openedNext.verifiedBy, ...openedNext.unverified]];
  const missing = kept.filter((c) => !present.some((p) => p.keyName === c.keyName && p.keyId === c.keyId));
  if (missing.length === 0) return { note: served };
  const names = [...new Set(missing.map((s) => s.keyName))].join(', ');
  return {
    note: null,
    kept: `kept the trusted checkpoint for its cosignatures by ${names}, which the server's newer checkpoint lacks; the log is checked from the newer one next time`,
    ahead: served,
  };
}

/** The cosigners among `witnesses` whose cosignature on `note` verifies. */
function validCosigners(
  note: string,
  witnesses: readonly (CosignatureVerifier | string)[],
): Array<{ keyName: string; keyId: number }> {
  return verifyCosignatures(note, { witnesses, threshold: 1 }).cosignedBy.map((c) => ({
    keyName: c.name,
    keyId: c.keyId,
  }));
}

/** The signed text and the signature lines (each with its newline) of a note that opened. */
function splitNote(note: string): { text: string; signatures: string[] } {
  const split = note.lastIndexOf('\n\n');
  const signatures = note
    .slice(split + 2)
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `${line}\n`);
  return { text: note.slice(0, split + 1), signatures };
}
