import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  unique,
} from 'drizzle-orm/pg-core';

/**
 * The chain. `payload` is the canonical JSON text exactly as hashed (never jsonb, which
 * reorders keys, drops duplicates and rewrites numbers), and `recorded_at` is text so the
 * string inside the hash survives a round trip byte for byte.
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    logId: text('log_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    kind: text('kind').notNull(),
    entityId: text('entity_id').notNull(),
    actor: text('actor').notNull(),
    recordedAt: text('recorded_at').notNull(),
    payload: text('payload').notNull(),
    payloadHash: text('payload_hash').notNull(),
    prevHash: text('prev_hash').notNull(),
    hash: text('hash').notNull(),
    /**
     * The payload commitment (docs/chain.md): NULL for the whole-payload rule, `fields/1`
     * when `payload` holds the field hashes and the content is in {@link eventFields},
     * `member-fields/1:<member>` when one member of the record in `payload` holds them.
     */
    commitment: text('commitment'),
    // The seq this row links to; NULL for the first event so the link check below skips it.
    prevSeq: bigint('prev_seq', { mode: 'number' }).generatedAlwaysAs(
      sql`CASE WHEN seq > 1 THEN seq - 1 END`,
    ),
  },
  (t) => [
    primaryKey({ columns: [t.logId, t.seq] }),
    unique('audit_events_link_target').on(t.logId, t.seq, t.hash),
    // The database itself refuses a gap or a fork: every row must name the hash of the row
    // before it, so even a buggy writer cannot leave a broken link behind.
    foreignKey({
      name: 'audit_events_prev_link',
      columns: [t.logId, t.prevSeq, t.prevHash],
      foreignColumns: [t.logId, t.seq, t.hash],
    }),
    check('audit_events_seq_positive', sql`${t.seq} >= 1`),
    check(
      'audit_events_genesis',
      sql`${t.seq} > 1 OR ${t.prevHash} = '0000000000000000000000000000000000000000000000000000000000000000'`,
    ),
    // Length only: a regular expression per hash cost more server time per row than the
    // primary key. That every hash is the lowercase hex SHA-256 it must be is what
    // verification checks, by recomputing each one.
    check(
      'audit_events_hash_length',
      sql`octet_length(${t.hash}) = 64 AND octet_length(${t.payloadHash}) = 64`,
    ),
    index('audit_events_entity').on(t.logId, t.entityId),
    // The proposal (or, for an approval use, the approval request) an event of the kinds
    // that decide "already executed" is about, so the reads that decide it find the event
    // even when its record row was deleted (migration 0023, records/event-subjects.ts).
    index('audit_events_subject')
      .on(t.logId, sql`vouch_event_subject(${t.kind}, ${t.payload})`)
      .where(sql`${t.kind} in ('approval_use', 'execution_claim', 'observation')`),
    check(
      'audit_events_commitment',
      sql`${t.commitment} IS NULL OR ${t.commitment} = 'fields/1' OR ${t.commitment} ~ '^member-fields/1:[a-z][a-z0-9_]{0,63}$'`,
    ),
  ],
);

/**
 * The content of `fields/1` events, one row per field, kept apart from the chain: the chain
 * holds only each field's salted hash, so erasing a field (a DELETE of its row, which the
 * database allows only under an `event.redacted` event that names it) removes its value and
 * salt and leaves every hash, proof and checkpoint as it was.
 */
export const eventFields = pgTable(
  'event_fields',
  {
    logId: text('log_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    name: text('name').notNull(),
    salt: text('salt').notNull(),
    /** The field's value as canonical JSON text, exactly as hashed. */
    value: text('value').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.logId, t.seq, t.name] }),
    foreignKey({
      name: 'event_fields_event',
      columns: [t.logId, t.seq],
      foreignColumns: [auditEvents.logId, auditEvents.seq],
    }),
  ],
);

/**
 * API keys: only the SHA-256 of the secret is stored. Each row is bound to its
 * `api_key.created` event in the `system` log (`event_seq`), whose payload carries everything
 * the row holds (and a commitment to `key_hash`, never the hash itself): a row inserted
 * behind the ledger's back, or one that differs from its event, authenticates nothing.
 * Never updated; a revocation is a row of {@link apiKeyRevocations}.
 */
export const apiKeys = pgTable('api_keys', {
  id: text('id').primaryKey(),
  keyHash: text('key_hash').notNull().unique(),
  identity: text('identity').notNull(),
  roles: jsonb('roles').$type<string[]>().notNull(),
  /** Matched against a tool's `required_scopes` (for example `billing:write`). */
  scopes: jsonb('scopes').$type<string[]>().notNull().default([]),
  environments: jsonb('environments').$type<string[] | null>(),
  logs: jsonb('logs').$type<string[] | null>(),
  createdBy: text('created_by').notNull(),
  createdAt: text('created_at').notNull(),
  /** The seq of its `api_key.created` event in the `system` log; NULL only for a row no event names. */
  eventSeq: bigint('event_seq', { mode: 'number' }).unique('api_keys_event'),
  /** The issuing admin's author signature (canonical JSON of the envelope; since 0026), in its event's payload too. */
  signature: text('signature'),
});

/** Key revocations, one row per revoked key, each bound to its `api_key.revoked` event. */
export const apiKeyRevocations = pgTable('api_key_revocations', {
  keyId: text('key_id')
    .primaryKey()
    .references(() => apiKeys.id, { onDelete: 'no action', onUpdate: 'no action' }),
  /** The seq of its `api_key.revoked` event in the `system` log; NULL only for a migrated revocation no event names. */
  eventSeq: bigint('event_seq', { mode: 'number' }).unique('api_key_revocations_event'),
  revokedBy: text('revoked_by').notNull(),
  revokedAt: text('revoked_at').notNull(),
  /** The revoking admin's author signature (canonical JSON of the envelope; since 0026), in its event's payload too. */
  signature: text('signature'),
});

/**
 * Complete, aligned Merkle subtree hashes (RFC 6962 over event hashes), written in the
 * append transaction so a proof costs O(log n) small reads instead of a tree rebuild.
 * `level` L, `idx` k: the subtree over leaves [k * 2^L, (k + 1) * 2^L). Level 0 (the
 * leaves) is not stored: a leaf is a function of its event's hash, which `audit_events`
 * already holds, so a row for it would be one more copy to write, read and check.
 */
export const merkleNodes = pgTable(
  'merkle_nodes',
  {
    logId: text('log_id').notNull(),
    level: integer('level').notNull(),
    idx: bigint('idx', { mode: 'number' }).notNull(),
    hash: text('hash').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.logId, t.level, t.idx] }),
    check('merkle_nodes_interior', sql`${t.level} >= 1`),
  ],
);

/** Signed checkpoints (C2SP signed-note text) of a log's Merkle tree. */
export const checkpoints = pgTable(
  'checkpoints',
  {
    logId: text('log_id').notNull(),
    treeSize: bigint('tree_size', { mode: 'number' }).notNull(),
    rootHash: text('root_hash').notNull(),
    note: text('note').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.logId, t.treeSize] })],
);

/**
 * Witness cosignatures (c2sp.org/tlog-cosignature) on a stored checkpoint: each row is one
 * signature line, kept only after it verified under a configured witness key over the
 * checkpoint at `tree_size`. The server trusts nothing here: every client re-verifies the
 * lines against the witness keys it trusts. Append-only.
 */
export const checkpointCosignatures = pgTable(
  'checkpoint_cosignatures',
  {
    logId: text('log_id').notNull(),
    treeSize: bigint('tree_size', { mode: 'number' }).notNull(),
    /** The witness key name and key ID (hex) the line is by. */
    witness: text('witness').notNull(),
    keyId: text('key_id').notNull(),
    /** The signature line, `— <name> <base64>` with its newline. */
    line: text('line').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.logId, t.treeSize, t.witness, t.keyId] })],
);
