import { asc } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Ledger } from '../ledger';
import { apiKeys } from '../schema/core';
import { KEY_ADOPTED, keyAdoptedPayload, OPERATOR_ACTOR, SYSTEM_LOG } from './api-key-events';
import { checkApiKeyTables } from './check-api-key-tables';
import { loadKeyHistory } from './load-key-history';

/** What {@link adoptLegacyKeys} did. */
export interface KeyAdoption {
  /** Keys bound to their key hash now, each by its own `api_key.adopted` event. */
  adopted: string[];
  /**
   * Keys issued before the commitment that were left as they are: their row differs from
   * their event, or their issuer could not issue keys (verification reports why).
   */
  refused: string[];
}

/**
 * Bind every key issued before `api_key.created` carried a key commitment (before
 * migration 0005: `KEY_UNPROVEN`) to the key hash its row holds now: one `api_key.adopted`
 * event per key, `{id, key_commitment, adopted_by}`, by the operator (`system:cli`, which
 * only the tables' owner may write: migration 0018), revoked keys included. Adopts only a
 * row that its event proves in all but the hash and whose issuer could issue it; running it
 * again adopts nothing. From then on a swapped key hash fails the key's proof.
 *
 * It proves nothing about the hashes before it: it is the operator's word, in the log, that
 * these hashes are the keys they issued (docs/chain.md).
 */
export function adoptLegacyKeys(ledger: Ledger): Promise<KeyAdoption> {
  return ledger.transact(SYSTEM_LOG, async (tx) => {
    const unproven: string[] = [];
    for await (const failure of checkApiKeyTables(ledger.database, { executor: tx.db })) {
      if (failure.code === 'KEY_UNPROVEN') unproven.push(failure.id);
    }
    const { history } = await loadKeyHistory(tx.db);
    const adoptable = new Set(history.unadopted());
    const adopted = unproven.filter((id) => adoptable.has(id));
    const rows =
      adopted.length === 0
        ? []
        : await tx.db
            .select({ id: apiKeys.id, keyHash: apiKeys.keyHash })
            .from(apiKeys)
            .where(anyOf(apiKeys.id, adopted))
            .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
    for (const row of rows) {
      await tx.append({
        kind: KEY_ADOPTED,
        entity: row.id,
        actor: OPERATOR_ACTOR,
        payload: keyAdoptedPayload({ keyId: row.id, keyHash: row.keyHash, adoptedBy: OPERATOR_ACTOR }),
      });
    }
    return { adopted: rows.map((row) => row.id), refused: unproven.filter((id) => !adoptable.has(id)) };
  });
}
