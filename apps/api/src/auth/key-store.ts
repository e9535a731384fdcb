import type { DsseEnvelope } from '@vouch/audit';
import {
  type ApiKeyRecord,
  BOOTSTRAP_ACTOR,
  countApiKeys,
  type FoundApiKey,
  findApiKeysByHash,
  issueApiKey,
  type Ledger,
  listApiKeys,
  revokeApiKey,
  SYSTEM_LOG,
  scheduleApiKeyExpiry,
  watchKeyRevocations,
} from '@vouch/ledger';
import DataLoader from 'dataloader';
import { ApiError } from '../errors';
import { generateApiKey, hashApiKey, MIN_SUPPLIED_KEY_LENGTH, newKeyId } from './api-key';
import { KeyCache, type KeyCacheOptions } from './key-cache';
import { isRole, type Role } from './roles';

export { SYSTEM_LOG };

/**
 * A key as stored: everything but the secret, which is never stored (the ledger's record,
 * with the roles this service knows; `scopes` are matched against a tool's `required_scopes`).
 */
export type StoredApiKey = Omit<ApiKeyRecord, 'roles' | 'revokedBy'> & { roles: Role[] };

/** What to issue a key for. */
export interface NewApiKey {
  identity: string;
  roles: Role[];
  scopes?: string[];
  environments?: string[] | null;
  logs?: string[] | null;
  /** The identity issuing it (from the admin's key, or `system:bootstrap`). */
  createdBy: string;
  /** Issue it even if its roles must stay apart (see {@link SEPARATED_ROLES}); default: the store's setting. */
  allowRoleCombination?: boolean;
  /** The issuing admin's author signature over the request (`api_key.create`). */
  signature?: DsseEnvelope;
}

/**
 * Pairs of roles one key may not hold together, unless explicitly allowed: the party that
 * acts (gateway) or grants keys (admin) must not also be the one that approves, or one
 * leaked key could both ask for and grant an action, nor erase its own trail.
 */
export const SEPARATED_ROLES: ReadonlyArray<readonly [Role, Role]> = [
  ['gateway', 'approver'],
  ['admin', 'approver'],
  // The audited party must not be able to erase what it did.
  ['gateway', 'redactor'],
];

/** What a key hash finds: a live key proven by the chain, a row that fails its proof, or nothing. */
export type KeyLookup =
  | { status: 'valid'; key: StoredApiKey; keyHash: string; proof: 'proven' | 'unproven' }
  | { status: 'refused'; keyId: string; proof: Exclude<FoundApiKey['proof'], 'proven' | 'unproven'> }
  | null;

/** Stores API keys as SHA-256 hashes; every change is an audit event in the `system` log. */
export interface KeyStore {
  /**
   * Look up the key whose secret hashes to `hash`. `valid` only for an unrevoked row that is
   * proven against its `api_key.created` event in the same query; `refused` for a row that
   * is not (it authenticates nothing); null for no row or a revoked key.
   */
  findByHash(hash: string): Promise<KeyLookup>;
  /**
   * Issue a key. The secret is returned once and exists nowhere else afterwards.
   * `IDENTITY_COLLISION` (nothing written) for an identity that is spelled differently from
   * an existing one but the same in canonical form, or confusable with it.
   */
  create(input: NewApiKey): Promise<{ key: StoredApiKey; secret: string }>;
  list(): Promise<StoredApiKey[]>;
  /** Revoke a key (idempotent); `KEY_NOT_FOUND` for an unknown id. `signature`: the admin's (`api_key.revoke`). */
  revoke(id: string, by: string, signature?: DsseEnvelope): Promise<StoredApiKey>;
  /**
   * End a key `graceSeconds` from now (a rotation's grace period), recorded in the chain as
   * an `api_key.expires` event; from then on it is refused with `KEY_EXPIRED`. The first
   * deadline stands; a revoked key is returned as it is. `KEY_NOT_FOUND` for an unknown id.
   */
  expire(id: string, graceSeconds: number, by: string): Promise<StoredApiKey>;
  /**
   * On a store with no keys at all, issue the first admin key (from `secret` when given,
   * otherwise random) and return it; otherwise do nothing and return null. Runs under the
   * system log's lock, so two instances starting together issue one key, not two.
   */
  bootstrapAdmin(options?: { secret?: string }): Promise<{ key: StoredApiKey; secret: string } | null>;
  /** True once authenticated keys are remembered (the revocation feed listens); false when they never will be. */
  readonly caching: Promise<boolean>;
  /** Stop following revocations (see `cache`). Before the database closes. */
  close(): Promise<void>;
}

export interface KeyStoreOptions {
  /**
   * Remember authenticated keys (see `KeyCache`), so a request whose key was seen recently
   * costs no lookup. Only while this store follows the database's revocation feed: every
   * revocation any process commits evicts the key here at its commit. Off by default.
   */
  cache?: boolean | KeyCacheOptions;
  /** Issue keys that hold roles which must stay apart (gateway + approver, admin + approver). */
  allowRoleCombinations?: boolean;
}

function toStored({ revokedBy: _, ...record }: ApiKeyRecord): StoredApiKey {
  return { ...record, roles: record.roles.filter(isRole) };
}

/**
 * The key store over the ledger's key tables (`@vouch/ledger`'s keys module): this side
 * makes the secrets and maps the ledger's answers to HTTP errors.
 */
export function createKeyStore(ledger: Ledger, options: KeyStoreOptions = {}): KeyStore {
  const database = ledger.database;
  // The lookups of requests that arrive together go out as one query. DataLoader's own
  // cache stays off: what is remembered is remembered by `cache`, which revocations evict.
  const byHash = new DataLoader<string, FoundApiKey | null>(
    async (hashes) => {
      const found = await findApiKeysByHash(database, hashes, ledger.integrityAlarm);
      return hashes.map((hash) => found.get(hash) ?? null);
    },
    { cache: false },
  );
  const remembered = followRevocations(ledger, options.cache);
  const lookUp = async (hash: string) => {
    const cached = remembered.get(hash);
    if (cached) return cached;
    // A revocation seen while this lookup was out may have come after its read: then what
    // it found is not remembered.
    const seen = remembered.revocations();
    const found = await byHash.load(hash);
    if (found && remembered.revocations() === seen) remembered.remember(hash, found);
    return found;
  };

  const issue = async (input: NewApiKey, secretOverride?: string, onlyIfNone = false) => {
    const generated = generateApiKey();
    const secret = secretOverride ?? generated.secret;
    const record = await issueApiKey(
      ledger,
      {
        id: secretOverride === undefined ? generated.id : newKeyId(),
        keyHash: hashApiKey(secret),
        identity: input.identity,
        roles: input.roles,
        scopes: input.scopes ?? [],
        environments: input.environments ?? null,
        logs: input.logs ?? null,
        createdBy: input.createdBy,
        ...(input.signature ? { signature: input.signature } : {}),
      },
      { onlyIfNone },
    );
    return record === null ? null : { key: toStored(record), secret };
  };

  return {
    async findByHash(hash) {
      const found = await lookUp(hash);
      if (!found || found.key.revokedAt !== null) return null;
      if (found.proof !== 'proven' && found.proof !== 'unproven') {
        return { status: 'refused', keyId: found.key.id, proof: found.proof };
      }
      return { status: 'valid', key: toStored(found.key), keyHash: found.keyHash, proof: found.proof };
    },
    async create(input) {
      if (!(input.allowRoleCombination ?? options.allowRoleCombinations ?? false)) {
        assertRolesSeparated(input.roles);
      }
      return (await issue(input))!;
    },
    async list() {
      return (await listApiKeys(database.db)).map(toStored);
    },
    async revoke(id, by, signature) {
      const record = await revokeApiKey(ledger, id, by, signature);
      // This process at once; the others when the database's notification reaches them.
      if (record) remembered.revoked(id);
      if (!record) throw new ApiError('KEY_NOT_FOUND', `no API key with id ${id}`, { details: { id } });
      return toStored(record);
    },
    async expire(id, graceSeconds, by) {
      const record = await scheduleApiKeyExpiry(ledger, id, { graceSeconds, by });
      if (record) remembered.revoked(id);
      if (!record) throw new ApiError('KEY_NOT_FOUND', `no API key with id ${id}`, { details: { id } });
      return toStored(record);
    },
    async bootstrapAdmin(options = {}) {
      if (options.secret !== undefined && options.secret.length < MIN_SUPPLIED_KEY_LENGTH) {
        throw new ApiError(
          'INVALID_REQUEST',
          `VOUCH_ADMIN_KEY must be at least ${MIN_SUPPLIED_KEY_LENGTH} characters (for example: openssl rand -base64 48)`,
        );
      }
      // Cheap pre-check outside the lock; the check that counts is inside the transaction.
      if ((await countApiKeys(database.db)) > 0) return null;
      return issue(
        { identity: 'user:admin', roles: ['admin'], createdBy: BOOTSTRAP_ACTOR },
        options.secret,
        true,
      );
    },
    caching: remembered.caching,
    close: () => remembered.close(),
  };
}

/** The key cache of a store, live only while the revocation feed is (see `KeyStoreOptions.cache`). */
function followRevocations(ledger: Ledger, options: KeyStoreOptions['cache']) {
  const cache = new KeyCache(typeof options === 'object' ? options : {});
  let listening = false;
  let revocations = 0;
  const revoked = (keyId: string) => {
    revocations++;
    cache.forgetKey(keyId);
  };
  const feed = options
    ? watchKeyRevocations(ledger.database, {
        revoked,
        listening: () => {
          revocations++;
          cache.forgetAll();
          listening = true;
        },
      }).catch(() => null)
    : Promise.resolve(null);
  return {
    get: (hash: string) => (listening ? cache.get(hash) : undefined),
    remember: (hash: string, found: FoundApiKey) => {
      if (listening) cache.remember(hash, found);
    },
    revocations: () => revocations,
    revoked,
    caching: feed.then((listened) => listened !== null),
    close: async () => {
      listening = false;
      cache.forgetAll();
      await (await feed)?.close();
    },
  };
}

/** Throw 400 `ROLE_COMBINATION_FORBIDDEN` when `roles` holds a pair of {@link SEPARATED_ROLES}. */
export function assertRolesSeparated(roles: readonly Role[]): void {
  const pair = SEPARATED_ROLES.find(([a, b]) => roles.includes(a) && roles.includes(b));
  if (pair) {
    throw new ApiError(
      'ROLE_COMBINATION_FORBIDDEN',
      `one key may not hold both ${pair[0]} and ${pair[1]}: issue two keys (or allow it with server.keys.allowRoleCombinations)`,
      { details: { roles: pair } },
    );
  }
}
