import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AuthorKey,
  deriveAuthorKey,
  deriveSignerKey,
  isValidKeyName,
  type NoteSigner,
  parseSignerKey,
} from '@vouch/audit';
import {
  logOrigin,
  parseLogSigners,
  readOrCreateSigningKeyFile,
  SERVER_SIGNER,
  SIGNING_KEY_FILE,
  verifierKeysOf,
} from '@vouch/ledger';
import { ConfigError, type DatabaseTarget } from '../config';
import type { TransparencyConfig } from './config';

/** The origin prefix when neither `VOUCH_LOG_ORIGIN` nor a key names one. */
export const DEFAULT_ORIGIN_PREFIX = 'vouch.local';

/**
 * How this server signs checkpoints. The operator holds one secret, the **master key** (or
 * several while rotating); each log is signed with its own key derived from it
 * (`deriveSignerKey`), named after the log's checkpoint origin `<prefix>/<log>` as
 * c2sp.org/tlog-checkpoint recommends. A derived key signs one log only, so a witness trusts
 * one log per key; the master key itself is the **shared key** every log was signed with
 * before per-log keys existed, still trusted for those checkpoints.
 */
export interface LogKeys {
  /** Checkpoint origins are `<prefix>/<log>`. */
  originPrefix: string;
  /** The master keys, in the configured order. */
  masterSigners: NoteSigner[];
  /** The master keys' verifier keys: what checkpoints signed before per-log keys carry. */
  sharedVerifierKeys: string[];
  /** Whether new checkpoints also carry the shared key's signature (`VOUCH_LOG_SHARED_SIGNATURE`). */
  sharedSignature: boolean;
  /** The keys that sign `log`'s checkpoints: its own (one per master key), then the shared ones if enabled. */
  signersFor(log: string): NoteSigner[];
  /** The verifier keys of `log`'s own keys (what a witness of that log trusts), one per master key. */
  logVerifierKeys(log: string): string[];
  /** Every verifier key `log`'s checkpoints may carry, old ones included: its own, then the shared ones. */
  verifierKeysFor(log: string): string[];
  /**
   * The key the server signs its own records with (`vouch:server`; docs/chain.md, "The server
   * signs its own"), derived from the first master key: one secret, and every instance alike.
   */
  serverKey: AuthorKey;
  /** Where the keys came from: the environment, or the PGlite data directory's key file. */
  source: { kind: 'env' } | { kind: 'file'; path: string; created: boolean };
}

/**
 * The log signing keys, from the settings `transparencyConfig` reads:
 *
 * - `VOUCH_LOG_SIGNING_KEY`: one or more master signer keys (`PRIVATE+KEY+…`, whitespace or
 *   comma separated; several during a rotation). Required on Postgres.
 * - otherwise, on PGlite: a key generated on first use and kept in the data directory
 *   (`vouch-log-signing.key`, mode 0600). It is only as safe as that directory: fine for
 *   trying Vouch, and the reason production runs on Postgres with a key from a secret store.
 * - otherwise (Postgres without a key): `null`, checkpoints are not signed. A key is not
 *   generated into the database on purpose: whoever can rewrite the tables could then read
 *   the key and re-sign the rewritten history, which is exactly what checkpoints must
 *   expose; and several instances must share one key, which a per-instance file is not.
 *
 * `VOUCH_LOG_ORIGIN` sets the origin prefix (default: the first key's name, or
 * `vouch.local` for a generated key). Throws `ConfigError` for settings that cannot work.
 */
export function loadLogKeys(config: TransparencyConfig, target: DatabaseTarget): LogKeys | null {
  const configuredOrigin = config.origin;
  if (configuredOrigin !== undefined && !isValidKeyName(configuredOrigin)) {
    throw new ConfigError(
      `VOUCH_LOG_ORIGIN=${configuredOrigin} cannot name a log: use a schema-less URL without spaces or +, e.g. audit.example.com/vouch`,
    );
  }
  const keyText = config.signingKey;
  if (keyText) {
    let signers: NoteSigner[];
    try {
      signers = parseLogSigners(keyText);
    } catch (error) {
      throw new ConfigError(
        `VOUCH_LOG_SIGNING_KEY is not a list of signer keys (PRIVATE+KEY+<name>+<id>+<base64>): ${(error as Error).message}`,
      );
    }
    const prefix = (configuredOrigin ?? signers[0]!.name).replace(/\/+$/, '');
    return logKeysOf({
      originPrefix: prefix,
      masterKeys: keyText,
      sharedSignature: config.sharedSignature,
      source: { kind: 'env' },
    });
  }
  if (target.kind !== 'pglite') return null;
  const path = join(target.dataDir, SIGNING_KEY_FILE);
  const prefix = (configuredOrigin ?? DEFAULT_ORIGIN_PREFIX).replace(/\/+$/, '');
  let file: ReturnType<typeof readOrCreateSigningKeyFile>;
  try {
    mkdirSync(target.dataDir, { recursive: true });
    file = readOrCreateSigningKeyFile(path, prefix);
  } catch (error) {
    throw new ConfigError(`cannot read or create the log signing key ${path}: ${(error as Error).message}`);
  }
  if (file.exposed) {
    throw new ConfigError(`the log signing key ${path} is readable by other users: chmod 600 ${path}`);
  }
  let signers: NoteSigner[];
  try {
    signers = parseLogSigners(file.signerKey);
  } catch (error) {
    throw new ConfigError(`${path} does not hold a signer key: ${(error as Error).message}`);
  }
  return logKeysOf({
    originPrefix: configuredOrigin?.replace(/\/+$/, '') ?? signers[0]!.name,
    masterKeys: file.signerKey,
    sharedSignature: config.sharedSignature,
    source: { kind: 'file', path, created: file.created },
  });
}

/**
 * The log keys of master signer key text(s) (whitespace or comma separated). Throws
 * `AuditError` `MALFORMED_CHECKPOINT` for a key that does not parse.
 */
export function logKeysOf(options: {
  originPrefix: string;
  masterKeys: string;
  sharedSignature: boolean;
  source: LogKeys['source'];
}): LogKeys {
  const { originPrefix, sharedSignature, source } = options;
  const masterTexts = options.masterKeys.split(/[\s,]+/).filter((key) => key !== '');
  const masterSigners = parseLogSigners(options.masterKeys);
  const sharedVerifierKeys = verifierKeysOf(masterSigners);
  // Derivation is a hash and a scalar multiplication: worth remembering per log id.
  const derived = new Map<string, NoteSigner[]>();
  const ownSigners = (log: string): NoteSigner[] => {
    let signers = derived.get(log);
    if (signers === undefined) {
      const origin = logOrigin(originPrefix, log);
      signers = masterTexts.map((master) => parseSignerKey(deriveSignerKey(master, origin)));
      derived.set(log, signers);
    }
    return signers;
  };
  const logVerifierKeys = (log: string) => verifierKeysOf(ownSigners(log));
  return {
    originPrefix,
    masterSigners,
    sharedVerifierKeys,
    sharedSignature,
    signersFor: (log) => (sharedSignature ? [...ownSigners(log), ...masterSigners] : ownSigners(log)),
    logVerifierKeys,
    verifierKeysFor: (log) => [...logVerifierKeys(log), ...sharedVerifierKeys],
    serverKey: deriveAuthorKey(masterTexts[0]!, SERVER_SIGNER),
    source,
  };
}
