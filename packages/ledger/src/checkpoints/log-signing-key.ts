import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { formatVerifierKey, generateNoteKeys, type NoteSigner, parseSignerKey } from '@vouch/audit';

// The log signing key signs every checkpoint. Whoever holds it can vouch for any history,
// so it belongs with the operator's secrets, not beside the data it vouches for: on
// Postgres it comes from the environment (`VOUCH_LOG_SIGNING_KEY`); only the embedded
// PGlite setup, which is for trying Vouch, keeps a generated key in a 0600 file.

/** Name of the generated key file inside a PGlite data directory. */
export const SIGNING_KEY_FILE = 'vouch-log-signing.key';

/**
 * The signers in a key setting: one or more c2sp.org/signed-note signer keys
 * (`PRIVATE+KEY+<name>+<id>+<base64>`) separated by whitespace or commas. Several keys
 * during a rotation: every checkpoint carries a signature by each, and auditors that
 * trust only the old or only the new key still verify it (unknown keys are ignored).
 * Throws `AuditError` `MALFORMED_CHECKPOINT` for a key that does not parse.
 */
export function parseLogSigners(text: string): NoteSigner[] {
  const keys = text.split(/[\s,]+/).filter((k) => k !== '');
  return keys.map((key) => parseSignerKey(key));
}

/** The verifier key texts (`<name>+<id>+<base64>`) auditors trust, one per signer. */
export function verifierKeysOf(signers: readonly NoteSigner[]): string[] {
  return signers.map((signer) => formatVerifierKey(signer.name, signer.publicKey));
}

/** What {@link readOrCreateSigningKeyFile} found or made. */
export interface SigningKeyFile {
  signerKey: string;
  /** True when this call generated the key. */
  created: boolean;
  /**
   * True when the file is readable or writable by other users (POSIX modes only): a key
   * others may have copied must not be signed with; the caller refuses it.
   */
  exposed: boolean;
}

/**
 * The signer key text kept in the file at `path`, made (named `name`) the first time. The
 * key is written to a private temporary file (mode 0600) and then hard-linked into place,
 * which fails if the file exists: two processes starting at once keep one key, and a crash
 * never leaves a half-written key file behind. Filesystem errors are thrown as they come.
 */
export function readOrCreateSigningKeyFile(path: string, name: string): SigningKeyFile {
  if (existsSync(path)) return readKeyFile(path);
  const { signerKey } = generateNoteKeys(name);
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, `${signerKey}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readKeyFile(path);
  } finally {
    rmSync(temporary, { force: true });
  }
  return { signerKey, created: true, exposed: false };
}

function readKeyFile(path: string): SigningKeyFile {
  const exposed = process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0;
  return { signerKey: readFileSync(path, 'utf8').trim(), created: false, exposed };
}
