import { createHash } from 'node:crypto';
import { payloadHashOf } from '@vouch/audit';
import {
  type ClaimedWebhookDelivery,
  createWebhookStore,
  type Database,
  type IntegrityAlarm,
  type NewWebhookDelivery,
  type RaisedIntegrityAlarm,
  type WebhookAttemptResult,
  type WebhookSourceEvent,
} from '@vouch/ledger';
import type { ResolveHost } from '@vouch/verifiers';
import { type Logger, summarizeError } from '../logger';
import { alarmDelivery, isAlarmDelivery } from './alarm-delivery-id';
import { sendWebhook, type WebhookSendResult } from './send-webhook';
import { type WebhookNotice, webhookBody } from './webhook-body';
import type { WebhookConfig, WebhookTarget } from './webhook-config';
import type { WebhookEvent } from './webhook-events';

/** The ledger event kinds notifications are derived from. */
const SOURCE_KINDS = ['approval_request', 'approval_resolution', 'verification', 'observation'];
/** Events read per log per pass, and deliveries claimed per pass. */
const READ_LIMIT = 500;
const CLAIM_LIMIT = 20;
/** A claim outlives its attempt by this much before another process may take the delivery over. */
const LEASE_MARGIN_MS = 30_000;
/**
 * How far another process's clock may run ahead of ours: a lease or retry time later than
 * the longest this dispatcher writes, by more than this, was written by no dispatcher.
 */
const CLOCK_SKEW_MS = 30_000;

/** The running dispatcher of `vouch serve`. */
export interface WebhookDispatcher {
  /**
   * Mark where reading begins, the first time webhooks run on this database (every log that
   * exists is read from its head: history is not replayed). Before the server takes requests,
   * so no event of a log created meanwhile can be skipped.
   */
  prepare(): Promise<void>;
  /** Begin polling; `baseUrl` is this server's address, for links when `publicUrl` is not set. */
  start(baseUrl: string): void;
  /** Write an integrity alarm as deliveries (it has no ledger event to be derived from). */
  notifyAlarm(alarm: RaisedIntegrityAlarm): void;
  /** One pass now: derive, then send what is due. For tests; the poll calls the same. */
  runOnce(): Promise<void>;
  /** Stop polling and wait for the pass in flight. */
  close(): Promise<void>;
}

export interface WebhookDispatcherOptions {
  database: Database;
  config: WebhookConfig;
  logger: Logger;
  /** Raised for a webhook row no dispatcher wrote (a forged delivery, cursor or lease). */
  integrityAlarm: IntegrityAlarm;
  /** Milliseconds since the epoch; injected by tests. */
  now?: () => number;
  /** A number in [0, 1) for jitter; injected by tests. */
  random?: () => number;
  resolveHost?: ResolveHost;
}

/** `whd_` and 32 hex digits of SHA-256 over what makes the delivery unique: every process derives the same id. */
function deliveryId(...parts: Array<string | number | null>): string {
  return `whd_${createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32)}`;
}

/**
 * The delay before attempt `attempt + 1`: `retryBaseMs · 2^(attempt-1)`, capped at
 * `retryMaxMs`, then "equal jitter" (half fixed, half random) so receivers that came back
 * are not hit by every delivery at once.
 */
export function retryDelayMs(
  config: Pick<WebhookConfig, 'retryBaseMs' | 'retryMaxMs'>,
  attempt: number,
  random: number,
): number {
  const capped = Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** (attempt - 1));
  return Math.round(capped / 2 + (capped / 2) * random);
}

/**
 * Outbound webhooks. Each pass reads every log's events after the stored cursor, writes the
 * deliveries they call for and moves the cursor in one transaction (so nothing is missed
 * across restarts), then claims the deliveries that are due (the claim is a row: one process
 * per attempt) and sends them, retrying with backoff up to `maxAttempts`.
 */
export function createWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const { config, logger } = options;
  const store = createWebhookStore(options.database);
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const iso = (ms: number) => new Date(ms).toISOString();
  const targets = new Map(config.targets.map((t) => [t.name, t]));
  let baseUrl: string | undefined = config.publicUrl;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> | undefined;
  let closed = false;

  const link = (path: string) => (baseUrl === undefined ? null : `${baseUrl}${path}`);

  /** `everyTarget`: also for targets not subscribed to the event (to prove a delivery written before they left). */
  const deliveriesFor = (
    notice: Omit<WebhookNotice, 'id'>,
    dueAt: string,
    everyTarget = false,
  ): NewWebhookDelivery[] =>
    config.targets
      .filter((target) => everyTarget || target.events.has(notice.event))
      .map((target) => {
        const id = deliveryId(
          target.name,
          notice.log,
          notice.seq,
          notice.event,
          notice.subject,
          notice.occurredAt,
        );
        return {
          id,
          target: target.name,
          event: notice.event,
          log: notice.log,
          seq: notice.seq,
          subject: notice.subject,
          body: webhookBody({ ...notice, id }, target.format),
          dueAt,
        };
      });

  const alarmDeliveriesFor = (notice: Omit<WebhookNotice, 'id'>, dueAt: string): NewWebhookDelivery[] =>
    config.targets
      .filter((target) => target.events.has(notice.event))
      .map((target) => ({
        ...alarmDelivery(target, notice),
        target: target.name,
        event: notice.event,
        log: notice.log,
        seq: notice.seq,
        subject: notice.subject,
        dueAt,
      }));

  /**
   * The deliveries `event` derives. Throws for an event no server wrote as it reads: a
   * payload that does not hash to the event's `payload_hash` (edited in place), one that is
   * not a JSON object, a time that does not parse.
   */
  const derive = (event: WebhookSourceEvent, everyTarget = false): NewWebhookDelivery[] => {
    const forTargets = (notice: Omit<WebhookNotice, 'id'>, dueAt: string) =>
      deliveriesFor(notice, dueAt, everyTarget);
    if (event.payload === null) return [];
    if (payloadHashOf(event.payload) !== event.payloadHash) {
      throw new Error('its payload does not hash to its payload_hash');
    }
    const data = JSON.parse(event.payload) as Record<string, unknown>;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new Error('its payload is not a JSON object');
    }
    if (Number.isNaN(Date.parse(event.at)))
      throw new Error(`its time ${JSON.stringify(event.at)} is no time`);
    const notice = (kind: WebhookEvent, subject: string, path: string) => ({
      event: kind,
      log: event.log,
      seq: event.seq,
      subject,
      occurredAt: event.at,
      link: link(path),
      data,
    });
    const at = event.at;
    switch (event.kind) {
      case 'approval_request': {
        const path = `/v1/approvals/${encodeURIComponent(event.entity)}`;
        const expires = Date.parse(String(data.expires_at));
        const remindAt = Math.max(expires - config.expiringLeadSeconds * 1000, Date.parse(at));
        return [
          ...forTargets(notice('approval.requested', event.entity, path), at),
          ...(Number.isFinite(expires)
            ? forTargets(notice('approval.expiring', event.entity, path), iso(remindAt))
            : []),
        ];
      }
      case 'approval_resolution': {
        const request = String(data.request_id);
        return forTargets(
          notice('approval.resolved', request, `/v1/approvals/${encodeURIComponent(request)}`),
          at,
        );
      }
      case 'verification':
        return data.status === 'failed'
          ? forTargets(
              notice(
                'verification.failed',
                event.entity,
                `/v1/proposals/${encodeURIComponent(String(data.proposal_id))}`,
              ),
              at,
            )
          : [];
      case 'observation':
        return data.outcome === 'unknown'
          ? forTargets(
              notice(
                'outcome.unknown',
                event.entity,
                `/v1/proposals/${encodeURIComponent(String(data.proposal_id))}`,
              ),
              at,
            )
          : [];
      default:
        return [];
    }
  };

  const raise = (table: string, log: string, seq: number | undefined, message: string) =>
    options.integrityAlarm.raise({
      code: 'WEBHOOK_MISMATCH',
      log,
      ...(seq === undefined ? {} : { seq }),
      table,
      message,
    });

  // A cursor past the head was written by no dispatcher (it moves the cursor to events it
  // read): the reads below ignore it, and this says so.
  const checkCursors = async () => {
    for (const cursor of await store.cursorsBeyondHead()) {
      raise(
        'webhook_cursors',
        cursor.log,
        cursor.seq,
        `webhook cursor ${cursor.seq} of log ${cursor.log} lies beyond its head ${cursor.head}: ignored`,
      );
    }
  };

  /**
   * The body to sign for `delivery`, or why there is none. An event's delivery is sent with
   * the body its source event (log, seq) derives now, never the stored one: the row only has
   * to name a delivery that event derives (its id, target, event and subject), so a row
   * written behind the dispatcher's back cannot choose what is signed, and a change of
   * configuration (the public URL in a link) is no false alarm. An alarm has no source event:
   * its stored body is sent only under the MAC a configured server computes over it.
   */
  const provenBody = async (
    delivery: ClaimedWebhookDelivery,
  ): Promise<{ body: string; reason?: never } | { reason: string }> => {
    const target = targets.get(delivery.target) as WebhookTarget;
    if (delivery.seq === null) {
      if (delivery.event !== 'integrity.alarm') return { reason: 'it names no source event' };
      return isAlarmDelivery(target, delivery)
        ? { body: delivery.body }
        : { reason: 'its id is not the MAC a configured server writes' };
    }
    const event = await store.sourceEvent({ log: delivery.log, seq: delivery.seq, kinds: SOURCE_KINDS });
    if (event === null) return { reason: 'its source event does not exist' };
    let all: NewWebhookDelivery[];
    try {
      all = derive(event, true);
    } catch (error) {
      return { reason: `its source event cannot be read: ${(error as Error).message}` };
    }
    const derived = all.find((d) => d.id === delivery.id);
    if (derived === undefined) return { reason: 'its source event derives no delivery with its id' };
    const differs = (['target', 'event', 'subject'] as const).filter(
      (field) => derived[field] !== delivery[field],
    );
    return differs.length === 0
      ? { body: derived.body }
      : { reason: `its ${differs.join(', ')} differ from what its source event derives` };
  };

  const deriveNew = async () => {
    await checkCursors();
    for (const events of await store.readAfterCursors({ kinds: SOURCE_KINDS, limit: READ_LIMIT })) {
      // An event no server wrote derives nothing, and holds up no other: the alarm says so.
      const deliveries = events.flatMap((event) => {
        try {
          return derive(event);
        } catch (error) {
          raise(
            'audit_events',
            event.log,
            event.seq,
            `event ${event.seq} of log ${event.log} (${event.kind}) derives no notification: ${(error as Error).message}`,
          );
          return [];
        }
      });
      const preempted = await store.advance({
        log: events[0]!.log,
        throughSeq: events.at(-1)!.seq,
        deliveries,
        now: iso(now()),
      });
      // Its id was taken by a row with other content, written before this one could be: the
      // real delivery cannot be written, and the row in its place is refused when it comes due.
      for (const id of preempted) {
        const delivery = deliveries.find((d) => d.id === id)!;
        raise(
          'webhook_deliveries',
          delivery.log,
          delivery.seq ?? undefined,
          `webhook delivery ${id} (${delivery.event} of event ${delivery.seq}) was already stored with other content: the real one is not sent`,
        );
      }
    }
  };

  /** A reminder that needs no request: its approval was answered or has expired. */
  const mootReason = async (delivery: ClaimedWebhookDelivery, body: string): Promise<string | null> => {
    if (delivery.event !== 'approval.expiring') return null;
    if (await store.approvalAnswered(delivery.log, delivery.subject)) return 'APPROVAL_ANSWERED';
    const expires = Date.parse(
      String((JSON.parse(body) as { data?: { expires_at?: unknown } }).data?.expires_at),
    );
    return Number.isFinite(expires) && now() >= expires ? 'APPROVAL_EXPIRED' : null;
  };

  const attemptResult = (delivery: ClaimedWebhookDelivery, sent: WebhookSendResult): WebhookAttemptResult => {
    const finishedAt = iso(now());
    const base = {
      statusCode: sent.statusCode,
      errorCode: sent.errorCode,
      durationMs: sent.durationMs,
      finishedAt,
    };
    if (sent.delivered) return { ...base, outcome: 'delivered', nextAttemptAt: null };
    // A refused address is the policy's answer, not a passing fault: retrying cannot change it.
    if (sent.errorCode === 'TARGET_FORBIDDEN' || delivery.attempt >= config.maxAttempts) {
      return { ...base, outcome: 'failed', nextAttemptAt: null };
    }
    return {
      ...base,
      outcome: 'retry',
      nextAttemptAt: iso(now() + retryDelayMs(config, delivery.attempt, random())),
    };
  };

  const deliver = async (delivery: ClaimedWebhookDelivery) => {
    const fields = {
      delivery: delivery.id,
      target: delivery.target,
      event: delivery.event,
      attempt: delivery.attempt,
    };
    const unsent = (outcome: 'cancelled' | 'failed', errorCode: string) =>
      store.finish(delivery.id, delivery.attempt, {
        outcome,
        statusCode: null,
        errorCode,
        durationMs: 0,
        finishedAt: iso(now()),
        nextAttemptAt: null,
      });
    // Longer than this process would ever wait: inserted, or another process's clock or
    // settings differ (a rolling deploy). Taken over either way; nothing to alarm about.
    if (delivery.overlong !== null) {
      logger.warn('webhook claim taken over', { ...fields, waited: delivery.overlong });
    }
    if (!targets.has(delivery.target)) {
      await unsent('cancelled', 'TARGET_REMOVED');
      logger.info('webhook cancelled', { ...fields, code: 'TARGET_REMOVED' });
      return;
    }
    // Checked before anything is signed: a row inserted behind the dispatcher's back must not
    // make it sign and send what the chain does not say.
    const proven = await provenBody(delivery);
    if (proven.reason !== undefined) {
      const reason = proven.reason;
      await unsent('failed', 'DELIVERY_NOT_DERIVED');
      // An alarm's MAC also fails after its target's secret (or URL) was rotated: not sent,
      // and no alarm of its own, since nothing tells that apart from a forged one.
      if (delivery.event !== 'integrity.alarm' || delivery.seq !== null) {
        raise(
          'webhook_deliveries',
          delivery.log,
          delivery.seq ?? undefined,
          `webhook delivery ${delivery.id}: ${reason}`,
        );
      }
      logger.error('webhook delivery refused', { ...fields, code: 'DELIVERY_NOT_DERIVED', reason });
      return;
    }
    const target = targets.get(delivery.target) as WebhookTarget;
    // Written while the target still asked for the event: it asks no longer.
    if (!target.events.has(delivery.event)) {
      await unsent('cancelled', 'EVENT_UNSUBSCRIBED');
      logger.info('webhook cancelled', { ...fields, code: 'EVENT_UNSUBSCRIBED' });
      return;
    }
    const moot = await mootReason(delivery, proven.body);
    if (moot !== null) {
      await unsent('cancelled', moot);
      logger.info('webhook cancelled', { ...fields, code: moot });
      return;
    }
    const sent = await sendWebhook({
      target,
      body: proven.body,
      deliveryId: delivery.id,
      event: delivery.event,
      timeoutMs: config.timeoutMs,
      now,
      ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    });
    const result = attemptResult(delivery, sent);
    await store.finish(delivery.id, delivery.attempt, result);
    // The target's name only: its URL may itself be a secret (Slack's are).
    const logged = {
      ...fields,
      outcome: result.outcome,
      status: result.statusCode,
      duration_ms: result.durationMs,
      ...(result.errorCode ? { code: result.errorCode } : {}),
      ...(result.nextAttemptAt ? { next_attempt_at: result.nextAttemptAt } : {}),
    };
    if (result.outcome === 'delivered') logger.info('webhook delivered', logged);
    else if (result.outcome === 'retry') logger.warn('webhook attempt failed', logged);
    else logger.error('webhook delivery failed', logged);
  };

  const runOnce = async () => {
    await deriveNew();
    const at = now();
    const lease = config.timeoutMs + LEASE_MARGIN_MS;
    const claimed = await store.claimDue({
      now: iso(at),
      leaseUntil: iso(at + lease),
      longestLease: iso(at + lease + CLOCK_SKEW_MS),
      latestRetry: iso(at + config.retryMaxMs + CLOCK_SKEW_MS),
      limit: CLAIM_LIMIT,
    });
    await Promise.all(claimed.map(deliver));
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      pass = runOnce()
        .catch((error) => logger.warn('webhook dispatch pass failed', { error: summarizeError(error) }))
        .finally(schedule);
    }, config.pollIntervalMs);
  };

  return {
    prepare: () => store.start(iso(now())),
    start(url) {
      baseUrl ??= url;
      logger.info('webhooks enabled', {
        targets: config.targets.map((t) => ({ name: t.name, format: t.format, events: [...t.events] })),
      });
      schedule();
    },
    notifyAlarm(alarm) {
      const notice = {
        event: 'integrity.alarm' as const,
        log: alarm.log,
        seq: null,
        subject: alarm.code,
        occurredAt: alarm.raisedAt,
        link: link('/readyz'),
        data: { ...alarm },
      };
      store
        .insert(alarmDeliveriesFor(notice, alarm.raisedAt), iso(now()))
        .catch((error) =>
          logger.error('integrity alarm not written as a webhook delivery', { error: summarizeError(error) }),
        );
    },
    runOnce,
    async close() {
      closed = true;
      clearTimeout(timer);
      await pass;
    },
  };
}
