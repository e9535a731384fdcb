import { type Database, loadKeyHistory } from '@vouch/ledger';
import type { Logger } from '../logger';

/**
 * Warn when the identity the server records its policy engine's decisions under holds no live
 * `policy` key. Verification judges every decision's writer against the keys in the `system`
 * log (docs/chain.md, "Who may write each record"), so without one each decision the engine
 * gives is reported `WRITER_ROLE_FORBIDDEN`. The key is never used to authenticate: it is the
 * operator's authorization of that identity, written in the chain. Returns whether it holds one.
 */
export async function checkPolicyEngineKey(
  database: Database,
  identity: string,
  logger: Logger,
  now: Date = new Date(),
): Promise<boolean> {
  const { history, keysIssued } = await loadKeyHistory(database.db);
  if (!keysIssued) return true;
  const at = now.getTime();
  const held = history
    .keysOf(identity)
    .some((key) => key.roles.includes('policy') && key.createdAt <= at && at < key.endsAt);
  if (!held) {
    logger.warn(
      'the policy engine identity holds no live policy key: verification will report its decisions',
      {
        identity,
        fix: `vouch keys create --identity ${identity} --roles policy`,
      },
    );
  }
  return held;
}
