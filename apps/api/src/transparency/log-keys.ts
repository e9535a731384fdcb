import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isValidKeyName, type NoteSigner } from '@vouch/audit';
import { parseLogSigners, readOrCreateSigningKeyFile, SIGNING_KEY_FILE, verifierKeysOf } from '@vouch/ledger';
import { ConfigError, type DatabaseTarget } from '../config';
import type { TransparencyConfig } from './config';

/** The origin prefix when neither `VOUCH_LOG_ORIGIN` nor a key names one. */
export const DEFAULT_ORIGIN_PREFIX = 'vouch.local';

/** How this server signs checkpoints. */
export interface LogKeys {
  /** Checkpoint origins are `<prefix>/<log>`. */
  originPrefix: string;
  signers: NoteSigner[];
  /** The verifier key texts auditors trust, one per signer. */
  verifierKeys: string[];
  /** Where the keys came from: the environment, or the PGlite data directory's key file. */
  source: { kind: 'env' } | { kind: 'file'; path: string; created: boolean };
}

/**
 * The log signing keys, from the settings `transparencyConfig` reads:
 *
 * - `VOUCH_LOG_SIGNING_KEY`: one or more signer keys (`PRIVATE+KEY+…`, whitespace or comma
 *   separated; several during a rotation). Required on Postgres.
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
    return {
      originPrefix: (configuredOrigin ?? signers[0]!.name).replace(/\/+$/, ''),
      signers,
      verifierKeys: verifierKeysOf(signers),
      source: { kind: 'env' },
    };
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
  return {
    originPrefix: configuredOrigin?.replace(/\/+$/, '') ?? signers[0]!.name,
    signers,
    verifierKeys: verifierKeysOf(signers),
    source: { kind: 'file', path, created: file.created },
  };
}
