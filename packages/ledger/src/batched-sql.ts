import { getTableColumns, getTableName, type SQL, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { type Database, type Db, rowsOf } from './database';
import { auditEvents } from './schema/core';

/** A table's insertable columns: drizzle property, column, SQL type. */
type Layout = Array<{ property: string; column: PgColumn; type: string }>;

const layouts = new WeakMap<PgTable, Layout>();

function layoutOf(table: PgTable): Layout {
  let layout = layouts.get(table);
  if (!layout) {
    layout = Object.entries(getTableColumns(table))
      // Generated columns are the database's to fill.
      .filter(([, column]) => !(column as PgColumn & { generated?: unknown }).generated)
      .map(([property, column]) => ({ property, column, type: column.getSQLType() }));
    layouts.set(table, layout);
  }
  return layout;
}

/** One table's rows to insert (drizzle property names, as `table.$inferInsert`). */
export interface TableRows {
  table: PgTable;
  rows: readonly Record<string, unknown>[];
}

/**
 * Insert rows (drizzle property names, as `table.$inferInsert`) in one statement: one array
 * parameter per column, unnested into rows. The statement text is the same for 1 row or
 * 512, so the server parses and plans it once per connection, and nothing is built per row
 * (the query builder's multi-row insert costs ~50 us of CPU per row and a new statement text
 * for every row count). A column no row gives a value is left out, so its default applies.
 */
export async function insertRows(
  database: Database,
  db: Db,
  table: PgTable,
  rows: readonly Record<string, unknown>[],
): Promise<void> {
  await insertTables(database, db, [{ table, rows }]);
}

/**
 * Insert the rows of several tables in ONE statement (each table's insert a data-modifying
 * `WITH` clause, as {@link insertRows} builds it): one round trip whatever the number of
 * tables. Foreign keys are checked at the end of the statement, once every row is in, so
 * rows may point at rows of any other table in it, in any order.
 */
export async function insertTables(database: Database, db: Db, inserts: readonly TableRows[]): Promise<void> {
  const statements = inserts.filter((i) => i.rows.length > 0).map((i) => insertStatement(i.table, i.rows));
  if (statements.length === 0) return;
  const last = statements.pop()!;
  const query =
    statements.length === 0
      ? last
      : sql`with ${sql.join(
          statements.map((s, i) => sql`${sql.raw(`w${i}`)} as (${s})`),
          sql`, `,
        )} ${last}`;
  await database.rows(query, db);
}

function insertStatement(table: PgTable, rows: readonly Record<string, unknown>[]): SQL {
  const columns = layoutOf(table);
  const present = columns.filter(({ property }) => rows.some((row) => row[property] !== undefined));
  const names: SQL[] = [];
  const arrays: SQL[] = [];
  for (const { property, column, type } of present) {
    const values = rows.map((row) => {
      const value = row[property];
      return value === undefined || value === null ? null : String(column.mapToDriverValue(value));
    });
    names.push(sql`${sql.identifier(column.name)}`);
    // Every column travels as text[] and is cast on the server: the drivers would type an
    // array of booleans as one boolean. Both send every element quoted and escaped, so any
    // text (a literal "NULL", quotes, backslashes, any Unicode) arrives byte for byte.
    arrays.push(
      type === 'text'
        ? sql`${sql.param(values)}::text[]`
        : sql`${sql.param(values)}::text[]::${sql.raw(type)}[]`,
    );
  }
  return sql`insert into ${sql.identifier(getTableName(table))} (${sql.join(names, sql`, `)}) select * from unnest(${sql.join(arrays, sql`, `)})`;
}

/**
 * `column = any($1::text[])`: one array parameter, so the statement text (and the plan the
 * server caches for it) is the same whatever the number of values; `inArray` writes one
 * parameter per value, a new prepared statement for every count. Numbers travel as text and
 * are cast to `type` on the server, like `insertRows` does.
 */
export function anyOf(column: PgColumn, values: readonly (string | number)[], type = 'text'): SQL {
  const texts = values.map(String);
  return type === 'text'
    ? sql`${column} = any(${sql.param(texts)}::text[])`
    : sql`${column} = any(${sql.param(texts)}::text[]::${sql.raw(type)}[])`;
}

const selections = new WeakMap<PgTable, SQL>();

/** `"t"."log_id" as "logId", ...`: a table's columns under their drizzle property names. */
function selectionOf(table: PgTable): SQL {
  let selection = selections.get(table);
  if (!selection) {
    const name = getTableName(table);
    // Qualified, so a join (see selectRowsWithEvents) cannot make a column name ambiguous.
    selection = sql.raw(
      Object.entries(getTableColumns(table))
        .map(([property, column]) => `"${name}"."${column.name}" as "${property}"`)
        .join(', '),
    );
    selections.set(table, selection);
  }
  return selection;
}

/**
 * `select * from table where ...`, rows under the table's property names (what the query
 * builder's `select()` gives), without building the query or mapping each row through the
 * ORM: on the hot path those cost more than the query itself.
 */
export async function selectRows<T extends PgTable>(
  db: Db,
  table: T,
  where: SQL,
  rest: SQL = sql``,
): Promise<T['$inferSelect'][]> {
  return rowsOf<T['$inferSelect']>(
    await db.execute(sql`select ${selectionOf(table)} from ${table} where ${where} ${rest}`),
  );
}

/** What {@link selectRowsWithEvents} selects beside each row, from the event the row names (null: no such event). */
export interface EventColumns {
  eventKind: string | null;
  eventEntity: string | null;
  eventPayloadHash: string | null;
}

/** A record table: scoped by log, every row pointing at the event that recorded it. */
export type EventLinkedTable = PgTable & { logId: PgColumn; eventSeq: PgColumn };

/**
 * {@link selectRows} of a record table, each row beside the kind, entity and payload hash of
 * the event it names (`null`s when there is none), in the same statement: the event is found
 * by its primary key `(log_id, seq)`, so checking a row against its event costs no round trip.
 */
export async function selectRowsWithEvents<T extends EventLinkedTable>(
  db: Db,
  table: T,
  where: SQL,
  rest: SQL = sql``,
): Promise<Array<T['$inferSelect'] & EventColumns>> {
  // One primary-key probe per row, forced: `limit 1` keeps the planner from flattening the
  // lateral subquery into a join, which it plans as a hash join over every event of the log
  // (measured: a sequential scan of audit_events for a 64-row read).
  return rowsOf<T['$inferSelect'] & EventColumns>(
    await db.execute(
      sql`select ${selectionOf(table)}, "event"."kind" as "eventKind", "event"."entity_id" as "eventEntity",
          "event"."payload_hash" as "eventPayloadHash"
        from ${table} left join lateral (
          select ${auditEvents.kind}, ${auditEvents.entityId}, ${auditEvents.payloadHash} from ${auditEvents}
          where ${auditEvents.logId} = ${table.logId} and ${auditEvents.seq} = ${table.eventSeq} limit 1
        ) as "event" on true
        where ${where} ${rest}`,
    ),
  );
}
