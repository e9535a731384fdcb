import { sql } from 'drizzle-orm';
import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationBackends } from '../__fixtures__/migrate-before';
import type { Database } from '../database';
import { migrate } from '../migrate';
import * as schema from './index';

// The drizzle schema is what the code queries; the committed migrations are what a database
// really has. A column added to one and not the other type-checks and fails only in
// production, so each table, column, type, nullability, key, constraint and index of a
// freshly migrated database is compared with the schema, on both backends.

/** How an index column that is an expression is named on both sides. */
const EXPRESSION = '(expression)';

interface Shape {
  columns: Record<string, { type: string; notNull: boolean }>;
  primaryKey: string[];
  uniques: Record<string, string[]>;
  checks: string[];
  foreignKeys: Record<string, { columns: string[]; references: string; foreignColumns: string[] }>;
  indexes: Record<string, string[]>;
}

const TYPE_NAMES: Record<string, string> = { int4: 'integer', int8: 'bigint' };

function declared(table: PgTable): Shape {
  const config = getTableConfig(table);
  const primaryKey =
    config.primaryKeys[0]?.columns.map((c) => c.name) ??
    config.columns.filter((c) => c.primary).map((c) => c.name);
  const uniques: Shape['uniques'] = {};
  for (const column of config.columns) {
    if (column.isUnique) uniques[column.uniqueName ?? `${config.name}_${column.name}_unique`] = [column.name];
  }
  for (const unique of config.uniqueConstraints) {
    uniques[unique.getName() ?? ''] = unique.columns.map((c) => c.name);
  }
  const foreignKeys: Shape['foreignKeys'] = {};
  for (const fk of config.foreignKeys) {
    const ref = fk.reference();
    foreignKeys[fk.getName()] = {
      columns: ref.columns.map((c) => c.name),
      references: getTableConfig(ref.foreignTable).name,
      foreignColumns: ref.foreignColumns.map((c) => c.name),
    };
  }
  const indexes: Shape['indexes'] = {};
  for (const index of config.indexes) {
    // An expression (an index on what a function reads from columns) has no column name.
    indexes[index.config.name!] = index.config.columns.map((c) =>
      'name' in c ? (c as { name: string }).name : EXPRESSION,
    );
  }
  return {
    columns: Object.fromEntries(
      config.columns.map((c) => [c.name, { type: c.getSQLType(), notNull: c.notNull || c.primary }]),
    ),
    primaryKey,
    uniques,
    checks: config.checks.map((c) => c.name).sort(),
    foreignKeys,
    indexes,
  };
}

async function actual(database: Database, table: string): Promise<Shape> {
  const columns = await database.rows<{ name: string; type: string; not_null: boolean }>(sql`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null
    from pg_attribute a where a.attrelid = ${table}::regclass and a.attnum > 0 and not a.attisdropped
    order by a.attnum`);
  const constraints = await database.rows<{
    name: string;
    type: string;
    columns: string[];
    references: string | null;
    foreign_columns: string[] | null;
  }>(sql`
    select c.conname as name, c.contype::text as type,
      array(select a.attname::text from unnest(c.conkey) with ordinality k(n, o)
            join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.o) as columns,
      c.confrelid::regclass::text as references,
      array(select a.attname::text from unnest(c.confkey) with ordinality k(n, o)
            join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n order by k.o) as foreign_columns
    from pg_constraint c where c.conrelid = ${table}::regclass`);
  const indexes = await database.rows<{ name: string; columns: string[] }>(sql`
    select i.relname as name,
      array(select coalesce(a.attname::text, ${EXPRESSION}) from unnest(x.indkey) with ordinality k(n, o)
            left join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n order by k.o) as columns
    from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid = ${table}::regclass
      and not exists (select 1 from pg_constraint c where c.conindid = x.indexrelid)`);
  const of = (type: string) => constraints.filter((c) => c.type === type);
  return {
    columns: Object.fromEntries(
      columns.map((c) => [c.name, { type: TYPE_NAMES[c.type] ?? c.type, notNull: c.not_null }]),
    ),
    primaryKey: of('p')[0]?.columns ?? [],
    uniques: Object.fromEntries(of('u').map((c) => [c.name, c.columns])),
    checks: of('c')
      .map((c) => c.name)
      .sort(),
    foreignKeys: Object.fromEntries(
      of('f').map((c) => [
        c.name,
        {
          columns: c.columns,
          references: c.references!.replace(/^"|"$/g, ''),
          foreignColumns: c.foreign_columns!,
        },
      ]),
    ),
    indexes: Object.fromEntries(indexes.map((i) => [i.name, i.columns])),
  };
}

const tables = Object.values(schema) as PgTable[];

describe.each(migrationBackends())('the drizzle schema against the migrations on $name', (backend) => {
  let database: Database;
  beforeAll(async () => {
    database = await backend.open();
    await migrate(database);
  });
  afterAll(async () => {
    await database?.close();
    await backend.drop();
  });

  it('has the same tables', async () => {
    const rows = await database.rows<{ name: string }>(
      sql`select tablename as name from pg_tables where schemaname = 'public' order by tablename`,
    );
    expect(rows.map((r) => r.name)).toEqual(tables.map((t) => getTableConfig(t).name).sort());
  });

  it.each(tables.map((t) => [getTableConfig(t).name, t] as const))(
    'has the columns, types, keys, constraints and indexes of %s',
    async (name, table) => {
      expect(await actual(database, name)).toEqual(declared(table));
    },
  );
});
