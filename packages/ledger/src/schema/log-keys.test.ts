import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { testBackends } from '../testing';

// Every log is its own chain: nothing in the schema may tie one log to another. That is what
// lets logs be spread over several primaries, or distributed by `log_id` in Citus
// (docs/scaling.md): a key or reference that leaves `log_id` out would need a cross-shard check
// on every insert. So the migrated schema itself is read back from pg_catalog and checked.

/** A primary key, unique constraint, unique index or foreign key, as pg_catalog has it. */
interface Constraint {
  table: string;
  name: string;
  kind: 'primary key' | 'unique' | 'unique index' | 'foreign key';
  columns: string[];
  references?: { table: string; columns: string[] };
}

/**
 * The tables without `log_id`, and why that is safe: they hold API keys and their
 * revocations, which belong to the one `system` log (every key and revocation is an event
 * there, `keys/api-key-events.ts`). They never refer to a row of another log, and no per-log
 * table refers to them. Distributed, they are a small table of their own (a Citus reference
 * table, or one shard beside the `system` log).
 */
const SYSTEM_LOG_TABLES = new Set(['api_keys', 'api_key_revocations']);

/**
 * The webhook delivery log (docs/webhooks.md): operational data derived from the events, not
 * part of any chain, written by whichever server process delivers. It stays beside the
 * coordinator (or on the primary of the logs it follows) and no ledger table refers to it, so
 * it is outside the rule; that no ledger table refers to it is checked below.
 */
const OPERATIONAL_TABLES = new Set([
  'webhook_cursors',
  'webhook_deliveries',
  'webhook_attempts',
  'webhook_attempt_results',
]);

/** What breaks the rule: a key that leaves `log_id` out, or a reference that can reach another log. */
function logKeyViolations(tables: Map<string, boolean>, constraints: readonly Constraint[]): string[] {
  const violations: string[] = [];
  for (const [table, hasLogId] of tables) {
    if (!hasLogId && !SYSTEM_LOG_TABLES.has(table) && !OPERATIONAL_TABLES.has(table))
      violations.push(`${table}: no log_id column`);
  }
  for (const c of constraints) {
    if (OPERATIONAL_TABLES.has(c.table)) continue;
    if (c.references && OPERATIONAL_TABLES.has(c.references.table)) {
      violations.push(`${c.table}.${c.name}: a ledger table refers to the operational ${c.references.table}`);
      continue;
    }
    const perLog = tables.get(c.table) === true;
    if (!c.references) {
      if (perLog && !c.columns.includes('log_id'))
        violations.push(`${c.table}.${c.name}: ${c.kind} without log_id`);
      continue;
    }
    const target = tables.get(c.references.table) === true;
    if (perLog !== target) {
      violations.push(`${c.table}.${c.name}: a reference between a per-log table and a system-log table`);
      continue;
    }
    if (!perLog) continue;
    // The same log on both sides: log_id must be matched with log_id, column for column.
    const at = c.columns.indexOf('log_id');
    if (at < 0 || c.references.columns[at] !== 'log_id') {
      violations.push(`${c.table}.${c.name}: foreign key that does not match log_id to log_id`);
    }
  }
  return violations;
}

async function readSchema(database: Database) {
  const tableRows = await database.rows<{ table: string; has_log_id: boolean }>(sql`
    select c.relname as table,
           exists(select 1 from pg_attribute a
                  where a.attrelid = c.oid and a.attname = 'log_id' and not a.attisdropped) as has_log_id
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p')
    order by 1`);
  const columnsOf = (keys: string, relation: string) =>
    sql.raw(`
    array(select a.attname::text from unnest(${keys}) with ordinality k(attnum, i)
          join pg_attribute a on a.attrelid = ${relation} and a.attnum = k.attnum order by k.i)`);
  const constraintRows = await database.rows<{
    table: string;
    name: string;
    type: string;
    columns: string[];
    referenced: string | null;
    referenced_columns: string[];
  }>(sql`
    select t.relname as table, con.conname as name, con.contype as type,
           ${columnsOf('con.conkey', 'con.conrelid')} as columns,
           f.relname as referenced,
           ${columnsOf('con.confkey', 'con.confrelid')} as referenced_columns
    from pg_constraint con
    join pg_class t on t.oid = con.conrelid
    join pg_namespace n on n.oid = t.relnamespace
    left join pg_class f on f.oid = con.confrelid
    where n.nspname = 'public' and con.contype in ('p', 'u', 'f')
    union all
    -- Unique indexes that back no constraint (a unique index is a key to Citus just the same).
    select t.relname, i.relname, 'i',
           ${columnsOf('x.indkey::int2[]', 'x.indrelid')}, null, array[]::text[]
    from pg_index x
    join pg_class i on i.oid = x.indexrelid
    join pg_class t on t.oid = x.indrelid
    join pg_namespace n on n.oid = t.relnamespace
    where n.nspname = 'public' and x.indisunique
      and not exists (select 1 from pg_constraint con where con.conindid = x.indexrelid)
    order by 1, 2`);
  const kinds = { p: 'primary key', u: 'unique', i: 'unique index', f: 'foreign key' } as const;
  return {
    tables: new Map(tableRows.map((r) => [r.table, r.has_log_id])),
    constraints: constraintRows.map(
      (r): Constraint => ({
        table: r.table,
        name: r.name,
        kind: kinds[r.type as keyof typeof kinds],
        columns: r.columns,
        ...(r.referenced ? { references: { table: r.referenced, columns: r.referenced_columns } } : {}),
      }),
    ),
  };
}

describe.each(testBackends())('the migrated schema on $name', (backend) => {
  let database: Database;
  let schema: Awaited<ReturnType<typeof readSchema>>;
  beforeAll(async () => {
    database = await backend.open();
    schema = await readSchema(database);
  }, 120_000);
  afterAll(() => database?.close());

  it('reads every key and reference back from pg_catalog', () => {
    // A query that found nothing would pass the next test for nothing.
    expect(schema.tables.get('audit_events')).toBe(true);
    expect(schema.constraints).toContainEqual({
      table: 'audit_events',
      name: 'audit_events_prev_link',
      kind: 'foreign key',
      columns: ['log_id', 'prev_seq', 'prev_hash'],
      references: { table: 'audit_events', columns: ['log_id', 'seq', 'hash'] },
    });
    expect(schema.constraints.filter((c) => c.kind === 'foreign key').length).toBeGreaterThan(10);
  });

  it('keeps log_id in every primary key, unique key and foreign key, and no constraint crosses logs', () => {
    expect(logKeyViolations(schema.tables, schema.constraints)).toEqual([]);
  });

  it('has no table without log_id but the system log’s key tables (and the operational delivery log)', () => {
    const without = [...schema.tables]
      .filter(([table, has]) => !has && !OPERATIONAL_TABLES.has(table))
      .map(([table]) => table);
    expect(without.sort()).toEqual([...SYSTEM_LOG_TABLES].sort());
  });
});

describe('logKeyViolations', () => {
  const tables = new Map([
    ['proposals', true],
    ['decisions', true],
    ['api_keys', false],
  ]);

  it('names a unique key without log_id', () => {
    const key: Constraint = {
      table: 'proposals',
      name: 'proposals_idem',
      kind: 'unique',
      columns: ['idempotency_key'],
    };
    expect(logKeyViolations(tables, [key])).toEqual(['proposals.proposals_idem: unique without log_id']);
  });

  it('names a foreign key that can reach another log', () => {
    const crossing: Constraint = {
      table: 'decisions',
      name: 'decisions_proposal',
      kind: 'foreign key',
      columns: ['log_id', 'proposal_id'],
      references: { table: 'proposals', columns: ['id', 'log_id'] },
    };
    const toSystem: Constraint = {
      table: 'decisions',
      name: 'decisions_key',
      kind: 'foreign key',
      columns: ['log_id', 'key_id'],
      references: { table: 'api_keys', columns: ['log_id', 'id'] },
    };
    expect(logKeyViolations(tables, [crossing, toSystem])).toEqual([
      'decisions.decisions_proposal: foreign key that does not match log_id to log_id',
      'decisions.decisions_key: a reference between a per-log table and a system-log table',
    ]);
  });

  it('names a new table without log_id', () => {
    expect(logKeyViolations(new Map([['notes', false]]), [])).toEqual(['notes: no log_id column']);
  });
});
