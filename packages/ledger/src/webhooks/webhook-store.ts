import type { WebhookDelivery, WebhookEvent } from '@vouch/records';
import { type SQL, sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { listLogs } from '../log-exists';

// The webhook dispatcher's tables (schema/webhooks.ts): operational data beside the ledger.
// Everything here is an INSERT or a SELECT; a state change is a new row.

/** The empty log id marks, in `webhook_cursors`, that the dispatcher has started once. */
const STARTED = '';
/** The largest attempt number the column holds: no dispatcher gets near it (`maxAttempts` is small). */
const LAST_ATTEMPT = 2_147_483_647;

/** A ledger event the dispatcher reads: the payload only for the kinds it asked for. */
export interface WebhookSourceEvent {
  log: string;
  seq: number;
  kind: string;
  entity: string;
  at: string;
  /** The canonical JSON payload, for an event of a kind asked for; null otherwise. */
  payload: string | null;
  /** The event's `payload_hash`: a payload that does not hash to it is none the chain holds. */
  payloadHash: string;
}

/** A delivery to write: derived from an event (or an alarm), for one target. */
export interface NewWebhookDelivery {
  id: string;
  target: string;
  event: WebhookEvent;
  log: string;
  seq: number | null;
  subject: string;
  body: string;
  dueAt: string;
}

/** A delivery whose next attempt this process has claimed. */
export interface ClaimedWebhookDelivery extends NewWebhookDelivery {
  /** The attempt this process claimed (1 for the first). */
  attempt: number;
  /**
   * Set when the attempt before was taken over because it waited longer than the dispatcher
   * ever waits: its lease (`lease`) or its retry time (`retry`) lay beyond the bound given.
   */
  overlong: 'lease' | 'retry' | null;
}

/** A cursor row beyond its log's head: no dispatcher read that far. */
export interface WebhookCursorBeyondHead {
  log: string;
  seq: number;
  head: number;
}

/** How an attempt ended. */
export type WebhookAttemptOutcome = 'delivered' | 'retry' | 'failed' | 'cancelled';

/** What an attempt got, as logged. Never the secret, the signature or the response body. */
export interface WebhookAttemptResult {
  outcome: WebhookAttemptOutcome;
  statusCode: number | null;
  errorCode: string | null;
  durationMs: number;
  finishedAt: string;
  /** Exactly when `outcome` is `retry`. */
  nextAttemptAt: string | null;
}

/** Where a delivery stands, derived from its last attempt. */
export type WebhookDeliveryStatus = WebhookDelivery['status'];

/** A delivery with every attempt, for the delivery log (no body: it may carry record content). */
export type WebhookDeliveryView = WebhookDelivery;

/** Filters of {@link WebhookStore.listDeliveries}. */
export interface ListWebhookDeliveriesOptions {
  /** Only these logs (an API key limited to some logs); null for every log. */
  logs: readonly string[] | null;
  status?: WebhookDeliveryStatus;
  target?: string;
  event?: string;
  /** The id of the last delivery of the previous page. */
  after?: string;
  limit: number;
}

/** The dispatcher's reads and writes. */
export interface WebhookStore {
  /**
   * The first time the dispatcher ever runs on this database, start every existing log at its
   * head (history is not replayed as notifications); later logs are read from their start.
   */
  start(now: string): Promise<void>;
  /**
   * For each log, up to `limit` events after its cursor (payloads for `kinds` only). The cursor
   * is the highest one not beyond the log's head: a cursor past the head was not written by a
   * dispatcher (see {@link WebhookStore.cursorsBeyondHead}) and is ignored.
   */
  readAfterCursors(options: { kinds: readonly string[]; limit: number }): Promise<WebhookSourceEvent[][]>;
  /** The highest cursor of each log that lies beyond the log's head (none, unless forged). */
  cursorsBeyondHead(): Promise<WebhookCursorBeyondHead[]>;
  /** The event at (`log`, `seq`), payload for `kinds` only, or null when there is none. */
  sourceEvent(options: {
    log: string;
    seq: number;
    kinds: readonly string[];
  }): Promise<WebhookSourceEvent | null>;
  /**
   * Write the deliveries derived from a log's events and move its cursor, in one transaction.
   * Resolves with the ids of deliveries a row already held with other content (see `insert`).
   */
  advance(options: {
    log: string;
    throughSeq: number;
    deliveries: readonly NewWebhookDelivery[];
    now: string;
  }): Promise<string[]>;
  /**
   * Write deliveries with no ledger event behind them (an integrity alarm). Resolves with the
   * ids a row already held with other content: written first by someone who is not a dispatcher.
   */
  insert(deliveries: readonly NewWebhookDelivery[], now: string): Promise<string[]>;
  /**
   * Claim the next attempt of up to `limit` deliveries that are due: never sent, due again
   * after a retry, or claimed by a process whose lease ran out. A lease ending after
   * `longestLease`, or a retry time after `latestRetry`, is longer than any the dispatcher
   * writes, so it is treated as over. Only the claims won are returned.
   */
  claimDue(options: {
    now: string;
    leaseUntil: string;
    longestLease: string;
    latestRetry: string;
    limit: number;
  }): Promise<ClaimedWebhookDelivery[]>;
  /** Record how a claimed attempt ended. */
  finish(deliveryId: string, attempt: number, result: WebhookAttemptResult): Promise<void>;
  /** True once the approval request has an answer (its expiring reminder is then moot). */
  approvalAnswered(log: string, requestId: string): Promise<boolean>;
  /** The delivery log, oldest first. */
  listDeliveries(
    options: ListWebhookDeliveriesOptions,
  ): Promise<{ deliveries: WebhookDeliveryView[]; next: string | null }>;
}

/**
 * The webhook store over `database`.
 *
 * @example
 * const store = createWebhookStore(database);
 * const claimed = await store.claimDue({ now, leaseUntil, limit: 10 });
 */
export function createWebhookStore(database: Database): WebhookStore {
  const rows = <T>(query: SQL, executor?: Db) => database.rows<T>(query, executor);

  /**
   * Write deliveries; resolves with the ids of those a row already held with other content.
   * The id is derived from target and source, so a second process deriving the same delivery
   * writes nothing and finds the same source, subject and due time (the body may differ: its
   * links follow each process's public URL, and it is derived again when sent); a row with
   * that id and anything else in them was written first by someone who is not a dispatcher.
   */
  const insertDeliveries = async (
    deliveries: readonly NewWebhookDelivery[],
    now: string,
    executor?: Db,
  ): Promise<string[]> => {
    if (deliveries.length === 0) return [];
    const values = sql.join(
      deliveries.map(
        (d) =>
          sql`(${d.id}, ${d.target}, ${d.event}, ${d.log}, ${d.seq}, ${d.subject}, ${d.body}, ${now}, ${d.dueAt})`,
      ),
      sql`, `,
    );
    const written = await rows<{ id: string }>(
      sql`insert into webhook_deliveries (id, target, event, log_id, seq, subject, body, created_at, due_at)
          values ${values} on conflict (id) do nothing returning id`,
      executor,
    );
    const inserted = new Set(written.map((row) => row.id));
    const kept = deliveries.filter((d) => !inserted.has(d.id));
    if (kept.length === 0) return [];
    const stored = await rows<{
      id: string;
      target: string;
      event: string;
      log_id: string;
      seq: string | number | null;
      subject: string;
      body: string;
      due_at: string;
    }>(
      sql`select id, target, event, log_id, seq, subject, body, due_at from webhook_deliveries
          where id = any(${sql.param(kept.map((d) => d.id))}::text[])`,
      executor,
    );
    const byId = new Map(stored.map((row) => [row.id, row]));
    return kept
      .filter((d) => {
        const row = byId.get(d.id);
        return (
          row === undefined ||
          row.target !== d.target ||
          row.event !== d.event ||
          row.log_id !== d.log ||
          (row.seq === null ? null : Number(row.seq)) !== d.seq ||
          row.subject !== d.subject ||
          // A reminder's due time follows each process's `expiringLeadSeconds`.
          (d.event !== 'approval.expiring' && row.due_at !== d.dueAt)
        );
      })
      .map((d) => d.id);
  };

  return {
    async start(now) {
      await database.db.transaction(async (tx) => {
        const [started] = await rows<{ found: boolean }>(
          sql`select exists(select 1 from webhook_cursors where log_id = ${STARTED}) as found`,
          tx,
        );
        if (started?.found) return;
        for (const log of await listLogs(database, tx)) {
          await rows(
            sql`insert into webhook_cursors (log_id, seq, read_at)
                select ${log}, coalesce(max(seq), 0), ${now} from audit_events where log_id = ${log}
                on conflict do nothing`,
            tx,
          );
        }
        await rows(
          sql`insert into webhook_cursors (log_id, seq, read_at) values (${STARTED}, 0, ${now}) on conflict do nothing`,
          tx,
        );
      });
    },

    async readAfterCursors({ kinds, limit }) {
      const kindList = sql`${sql.param([...kinds])}::text[]`;
      const batches: WebhookSourceEvent[][] = [];
      for (const log of await listLogs(database)) {
        const events = await rows<{
          seq: string | number;
          kind: string;
          entity_id: string;
          recorded_at: string;
          payload: string | null;
          payload_hash: string;
        }>(sql`
          select seq, kind, entity_id, recorded_at, case when kind = any(${kindList}) then payload end as payload,
                 payload_hash
          from audit_events
          where log_id = ${log}
            and seq > coalesce((
              select max(c.seq) from webhook_cursors c
              where c.log_id = ${log}
                and c.seq <= (select coalesce(max(h.seq), 0) from audit_events h where h.log_id = ${log})
            ), 0)
          order by seq limit ${limit}`);
        if (events.length === 0) continue;
        batches.push(
          events.map((e) => ({
            log,
            seq: Number(e.seq),
            kind: e.kind,
            entity: e.entity_id,
            at: e.recorded_at,
            payload: e.payload,
            payloadHash: e.payload_hash,
          })),
        );
      }
      return batches;
    },

    async cursorsBeyondHead() {
      const found: WebhookCursorBeyondHead[] = [];
      // Per log, so each look is a range of the cursors' primary key, however many rows they have.
      for (const log of await listLogs(database)) {
        const [row] = await rows<{ seq: string | number | null; head: string | number }>(sql`
          select (select max(c.seq) from webhook_cursors c where c.log_id = ${log} and c.seq > h.head) as seq, h.head
          from (select coalesce(max(seq), 0) as head from audit_events where log_id = ${log}) h`);
        if (row && row.seq !== null) found.push({ log, seq: Number(row.seq), head: Number(row.head) });
      }
      return found;
    },

    async sourceEvent({ log, seq, kinds }) {
      const [event] = await rows<{
        kind: string;
        entity_id: string;
        recorded_at: string;
        payload: string | null;
        payload_hash: string;
      }>(sql`
        select kind, entity_id, recorded_at,
               case when kind = any(${sql.param([...kinds])}::text[]) then payload end as payload, payload_hash
        from audit_events where log_id = ${log} and seq = ${seq}`);
      if (!event) return null;
      return {
        log,
        seq,
        kind: event.kind,
        entity: event.entity_id,
        at: event.recorded_at,
        payload: event.payload,
        payloadHash: event.payload_hash,
      };
    },

    async advance({ log, throughSeq, deliveries, now }) {
      return database.db.transaction(async (tx) => {
        const conflicting = await insertDeliveries(deliveries, now, tx);
        await rows(
          sql`insert into webhook_cursors (log_id, seq, read_at) values (${log}, ${throughSeq}, ${now}) on conflict do nothing`,
          tx,
        );
        return conflicting;
      });
    },

    insert: (deliveries, now) => insertDeliveries(deliveries, now),

    async claimDue({ now, leaseUntil, longestLease, latestRetry, limit }) {
      const due = await rows<
        Omit<ClaimedWebhookDelivery, 'attempt' | 'seq' | 'log' | 'dueAt'> & {
          seq: string | number | null;
          last: number;
          log_id: string;
          due_at: string;
        }
      >(sql`
        select d.id, d.target, d.event, d.log_id, d.seq, d.subject, d.body, d.due_at,
               coalesce(a.attempt, 0) as last,
               case when r.outcome is null and a.lease_until > ${longestLease} then 'lease'
                    when r.outcome = 'retry' and r.next_attempt_at > ${latestRetry} then 'retry'
               end as overlong
        from webhook_deliveries d
        left join lateral (
          select attempt, lease_until from webhook_attempts x where x.delivery_id = d.id order by attempt desc limit 1
        ) a on true
        left join webhook_attempt_results r on r.delivery_id = d.id and r.attempt = a.attempt
        where d.due_at <= ${now}
          -- An attempt at the column's limit was inserted by someone else: claiming the next
          -- would fail the statement, and with it every claim of the pass.
          and (a.attempt is null or a.attempt < ${LAST_ATTEMPT})
          and (a.attempt is null
               or (r.outcome = 'retry' and (r.next_attempt_at <= ${now} or r.next_attempt_at > ${latestRetry}))
               or (r.outcome is null and (a.lease_until <= ${now} or a.lease_until > ${longestLease})))
        order by d.due_at, d.id
        limit ${limit}`);
      const claimed: ClaimedWebhookDelivery[] = [];
      for (const d of due) {
        const attempt = Number(d.last) + 1;
        // The primary key is the claim: of two processes inserting attempt n, one wins.
        const won = await rows<{ attempt: number }>(sql`
          insert into webhook_attempts (delivery_id, attempt, claimed_at, lease_until)
          values (${d.id}, ${attempt}, ${now}, ${leaseUntil})
          on conflict do nothing returning attempt`);
        if (won.length === 0) continue;
        claimed.push({
          id: d.id,
          target: d.target,
          event: d.event,
          log: d.log_id,
          seq: d.seq === null ? null : Number(d.seq),
          subject: d.subject,
          body: d.body,
          dueAt: d.due_at,
          attempt,
          overlong: d.overlong ?? null,
        });
      }
      return claimed;
    },

    async finish(deliveryId, attempt, result) {
      await rows(sql`
        insert into webhook_attempt_results
          (delivery_id, attempt, finished_at, outcome, status_code, error_code, duration_ms, next_attempt_at)
        values (${deliveryId}, ${attempt}, ${result.finishedAt}, ${result.outcome}, ${result.statusCode},
                ${result.errorCode}, ${Math.round(result.durationMs)}, ${result.nextAttemptAt})
        on conflict do nothing`);
    },

    async approvalAnswered(log, requestId) {
      const [row] = await rows<{ found: boolean }>(
        sql`select exists(select 1 from approval_resolutions where log_id = ${log} and request_id = ${requestId}) as found`,
      );
      return row?.found === true;
    },

    async listDeliveries(options) {
      const filters: SQL[] = [];
      if (options.logs !== null) filters.push(sql`d.log_id = any(${sql.param([...options.logs])}::text[])`);
      if (options.target !== undefined) filters.push(sql`d.target = ${options.target}`);
      if (options.event !== undefined) filters.push(sql`d.event = ${options.event}`);
      if (options.after !== undefined) {
        filters.push(
          sql`(d.created_at, d.id) > (select created_at, id from webhook_deliveries where id = ${options.after})`,
        );
      }
      const where = filters.length === 0 ? sql`true` : sql.join(filters, sql` and `);
      const status = options.status === undefined ? sql`true` : sql`status = ${options.status}`;
      const found = await rows<{
        id: string;
        target: string;
        event: WebhookEvent;
        log_id: string;
        seq: string | number | null;
        subject: string;
        created_at: string;
        due_at: string;
        status: WebhookDeliveryStatus;
      }>(sql`
        select * from (
          select d.id, d.target, d.event, d.log_id, d.seq, d.subject, d.created_at, d.due_at,
                 case when a.attempt is null then 'pending'
                      when r.outcome is null then 'sending'
                      when r.outcome = 'retry' then 'retrying'
                      else r.outcome end as status
          from webhook_deliveries d
          left join lateral (
            select attempt from webhook_attempts x where x.delivery_id = d.id order by attempt desc limit 1
          ) a on true
          left join webhook_attempt_results r on r.delivery_id = d.id and r.attempt = a.attempt
          where ${where}
        ) s
        where ${status}
        order by created_at, id
        limit ${options.limit + 1}`);
      const page = found.slice(0, options.limit);
      const ids = page.map((d) => d.id);
      const attempts =
        ids.length === 0
          ? []
          : await rows<WebhookDelivery['attempts'][number] & { delivery_id: string }>(sql`
              select a.delivery_id, a.attempt, a.claimed_at, r.finished_at, r.outcome, r.status_code,
                     r.error_code, r.duration_ms, r.next_attempt_at
              from webhook_attempts a
              left join webhook_attempt_results r on r.delivery_id = a.delivery_id and r.attempt = a.attempt
              where a.delivery_id = any(${sql.param(ids)}::text[])
              order by a.delivery_id, a.attempt`);
      return {
        deliveries: page.map((d) => ({
          id: d.id,
          target: d.target,
          event: d.event,
          log: d.log_id,
          seq: d.seq === null ? null : Number(d.seq),
          subject: d.subject,
          status: d.status,
          created_at: d.created_at,
          due_at: d.due_at,
          attempts: attempts
            .filter((a) => a.delivery_id === d.id)
            .map(({ delivery_id: _, ...a }) => ({ ...a, attempt: Number(a.attempt) })),
        })),
        next: found.length > options.limit ? (page.at(-1)?.id ?? null) : null,
      };
    },
  };
}
