import type { AuthorKey } from '@vouch/audit';
import { ensureServerKeyEnrolled, type Ledger } from '@vouch/ledger';
import type { DatabaseTarget } from '../config';
import type { Logger } from '../logger';
import { transparencyConfig } from './config';
import { loadLogKeys } from './log-keys';

/**
 * The key the server signs its own records with, as `vouch serve` derives it from the log
 * signing key (`VOUCH_LOG_SIGNING_KEY`, or PGlite's key file in the data directory); undefined
 * on Postgres without a log key. Commands that write as the server (`vouch sweep`) sign with it too.
 */
export function serverKeyOf(env: NodeJS.ProcessEnv, target: DatabaseTarget): AuthorKey | undefined {
  return loadLogKeys(transparencyConfig(env), target)?.serverKey;
}

/**
 * At start: have the server's key enrolled when nothing is enrolled yet (the first start), and
 * say which key signs the server's own records. A key not enrolled is still returned: it signs
 * once the operator enrols it (`vouch signing-keys enroll-server`), without a restart.
 */
export async function serverSigningKey(
  ledger: Ledger,
  key: AuthorKey | undefined,
  logger: Logger,
): Promise<AuthorKey | undefined> {
  if (key === undefined) {
    logger.warn('the server signs none of its own records: no log signing key (VOUCH_LOG_SIGNING_KEY)', {});
    return undefined;
  }
  const state = await ensureServerKeyEnrolled(ledger, key);
  if (state === 'not_enrolled') {
    logger.warn('the server key is not enrolled: its own records are written unsigned', {
      key_id: key.keyId,
      fix: 'vouch signing-keys enroll-server',
    });
  } else {
    logger.info('the server signs its own records', { key_id: key.keyId, enrolled: state });
  }
  return key;
}
