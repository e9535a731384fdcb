import { anyOf, apiKeys, type Ledger, selectRows } from '@vouch/ledger';
import DataLoader from 'dataloader';
import { count, eq } from 'drizzle-orm';
import { ApiError } from '../errors';
import { generateApiKey, hashApiKey, MIN_SUPPLIED_KEY_LENGTH, newKeyId } from './api-key';
import { isRole, type Role } from './roles';

/** The log that records key creation and revocation (and nothing a caller controls). */
export const SYSTEM_LOG = 'system';

/** A key as stored: everything but the secret, which is never stored. */
export interface StoredApiKey {
  id: string;
  identity: string;
  roles: Role[];
  /** Matched against a tool's `required_scopes` (e.g. `billing:write`). */
  scopes: string[];
  environments: string[] | null;
  logs: string[] | null;
  createdBy: string;
  createdAt: string;
  revokedAt: string | null;
}

/** What to issue a key for. */
export interface NewApiKey {
  identity: string;
  roles: Role[];
  scopes?: string[];
  environments?: string[] | null;
  logs?: string[] | null;
  /** The identity issuing it (from the admin's key, or `system:bootstrap`). */
  createdBy: string;
}

/** Stores API keys as SHA-256 hashes; every change is an audit event in the `system` log. */
export interface KeyStore {
  /** The live (unrevoked) key whose secret hashes to `hash`, with that stored hash. */
  findByHash(hash: string): Promise<(StoredApiKey & { keyHash: string }) | null>;
  /** Issue a key. The secret is returned once and exists nowhere else afterwards. */
  create(input: NewApiKey): Promise<{ key: StoredApiKey; secret: string }>;
  list(): Promise<StoredApiKey[]>;
  /** Revoke a key (idempotent); `KEY_NOT_FOUND` for an unknown id. */
  revoke(id: string, by: string): Promise<StoredApiKey>;
  /**
   * On a store with no keys at all, issue the first admin key (from `secret` when given,
   * otherwise random) and return it; otherwise do nothing and return null. Runs under the
   * system log's lock, so two instances starting together issue one key, not two.
   */
  bootstrapAdmin(options?: { secret?: string }): Promise<{ key: StoredApiKey; secret: string } | null>;
}

type Row = typeof apiKeys.$inferSelect;

function toStored(row: Row): StoredApiKey {
  return {
    id: row.id,
    identity: row.identity,
    roles: (row.roles ?? []).filter(isRole),
    scopes: row.scopes,
    environments: row.environments ?? null,
    logs: row.logs ?? null,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    revokedAt: row.revokedAt ?? null,
  };
}

// The audit payload names who got which powers, never the secret or its hash: the hash of
// a 256-bit random secret leaks nothing, but an export of the system log has no need of it.
function auditPayload(key: StoredApiKey) {
  return {
    id: key.id,
    identity: key.identity,
    roles: key.roles,
    scopes: key.scopes,
    environments: key.environments,
    logs: key.logs,
    created_by: key.createdBy,
  };
}

/**
 * The key store over the ledger's database. Key rows and their audit events are written in
 * one ledger transaction, so a key never exists without the event that says who issued it.
 */
export function createKeyStore(ledger: Ledger): KeyStore {
  const database = ledger.database;
  // Every request looks its key up: the lookups of requests that arrive together go out as
  // one query. Nothing is cached (`cache: false`), so a revocation counts from the next request.
  const byHash = new DataLoader<string, Row | null>(
    async (hashes) => {
      const rows = await selectRows(database.db, apiKeys, anyOf(apiKeys.keyHash, [...new Set(hashes)]));
      const found = new Map(rows.map((row) => [row.keyHash, row]));
      return hashes.map((hash) => found.get(hash) ?? null);
    },
    { cache: false },
  );

  const insert = (
    input: NewApiKey,
    secretOverride?: string,
    onlyIfEmpty = false,
  ): Promise<{ key: StoredApiKey; secret: string } | null> =>
    ledger.transact(SYSTEM_LOG, async (tx) => {
      if (onlyIfEmpty) {
        const [existing] = await tx.db.select({ n: count() }).from(apiKeys);
        if ((existing?.n ?? 0) > 0) return null;
      }
      const generated = generateApiKey();
      const secret = secretOverride ?? generated.secret;
      const id = secretOverride === undefined ? generated.id : newKeyId();
      const key: StoredApiKey = {
        id,
        identity: input.identity,
        roles: [...new Set(input.roles)],
        scopes: [...new Set(input.scopes ?? [])],
        environments: input.environments ?? null,
        logs: input.logs ?? null,
        createdBy: input.createdBy,
        createdAt: tx.now,
        revokedAt: null,
      };
      await tx.db.insert(apiKeys).values({ ...key, keyHash: hashApiKey(secret) });
      await tx.append({
        kind: 'api_key.created',
        entity: key.id,
        actor: key.createdBy,
        payload: auditPayload(key),
      });
      return { key, secret };
    });

  return {
    async findByHash(hash) {
      const row = await byHash.load(hash);
      if (!row || row.revokedAt !== null) return null;
      return { ...toStored(row), keyHash: row.keyHash };
    },
    async create(input) {
      return (await insert(input))!;
    },
    async list() {
      const rows = await database.db.select().from(apiKeys).orderBy(apiKeys.createdAt, apiKeys.id);
      return rows.map(toStored);
    },
    revoke: (id, by) =>
      ledger.transact(SYSTEM_LOG, async (tx) => {
        const [row] = await tx.db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
        if (!row) throw new ApiError('KEY_NOT_FOUND', `no API key with id ${id}`, { details: { id } });
        if (row.revokedAt !== null) return toStored(row);
        const [updated] = await tx.db
          .update(apiKeys)
          .set({ revokedAt: tx.now })
          .where(eq(apiKeys.id, id))
          .returning();
        await tx.append({ kind: 'api_key.revoked', entity: id, actor: by, payload: { id, revoked_by: by } });
        return toStored(updated!);
      }),
    async bootstrapAdmin(options = {}) {
      if (options.secret !== undefined && options.secret.length < MIN_SUPPLIED_KEY_LENGTH) {
        throw new ApiError(
          'INVALID_REQUEST',
          `VOUCH_ADMIN_KEY must be at least ${MIN_SUPPLIED_KEY_LENGTH} characters (for example: openssl rand -base64 48)`,
        );
      }
      // Cheap pre-check outside the lock; the check that counts is inside the transaction.
      const [existing] = await database.db.select({ n: count() }).from(apiKeys);
      if ((existing?.n ?? 0) > 0) return null;
      return insert(
        { identity: 'user:admin', roles: ['admin'], createdBy: 'system:bootstrap' },
        options.secret,
        true,
      );
    },
  };
}
