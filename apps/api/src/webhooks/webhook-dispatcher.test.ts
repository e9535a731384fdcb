import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { verifyWebhookSignature } from '@vouch/client';
import {
  createIntegrityAlarm,
  createLedger,
  createWebhookStore,
  type Database,
  type IntegrityAlarm,
  type Ledger,
} from '@vouch/ledger';
import { appendRecordedAt, tamper, testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../logger';
import type { WebhookConfig } from './webhook-config';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher';

// The dispatcher signs with the targets' secrets whatever it sends, so it sends only what it
// can prove: a delivery re-derived from its ledger event (or, for an alarm, carrying the MAC
// only a configured server computes). The attacks below insert rows the way the runtime role
// can (plain INSERT, no UPDATE or DELETE).
describe.each(testBackends())('the webhook dispatcher on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let receiver: Server;
  let dispatcher: WebhookDispatcher;
  let alarm: IntegrityAlarm;
  /** Added to the real clock: a day back, a pass derives deliveries that are not yet due. */
  let offset = 0;
  const bodies: Array<{ body: string; signature: string; delivery: string }> = [];
  const logger = createMemoryLogger();
  const received = () => bodies.map((b) => JSON.parse(b.body) as Record<string, unknown>);
  const webhookAlarms = (table: string) =>
    alarm.alarms().filter((a) => a.code === 'WEBHOOK_MISMATCH' && a.table === table);
  const failedVerification = (entity: string) =>
    ledger.append({
      log: 'default',
      kind: 'verification',
      entity,
      actor: 'user:verifier',
      payload: { proposal_id: `prop_${entity}`, status: 'failed', checks: [] },
    });
  let config: WebhookConfig;
  const runUntil = async (done: () => boolean, by: WebhookDispatcher = dispatcher) => {
    for (let i = 0; i < 200 && !done(); i++) {
      await by.runOnce();
      if (!done()) await delay(25);
    }
  };
  const deliveries = async () =>
    (await createWebhookStore(database).listDeliveries({ logs: null, limit: 200 })).deliveries;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (c: string) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push({
          body,
          signature: String(req.headers['vouch-signature']),
          delivery: String(req.headers['vouch-delivery']),
        });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    config = {
      targets: [
        {
          name: 'ops',
          url: new URL(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`),
          secret: 'ops-secret',
          format: 'vouch',
          events: new Set(['integrity.alarm', 'verification.failed', 'approval.resolved']),
          allowHosts: ['127.0.0.1'],
        },
      ],
      publicUrl: 'https://vouch.example.com',
      expiringLeadSeconds: 900,
      maxAttempts: 3,
      retryBaseMs: 10,
      retryMaxMs: 10,
      timeoutMs: 5_000,
      pollIntervalMs: 60_000,
    };
    alarm = createIntegrityAlarm({ onRaise: (raised) => dispatcher.notifyAlarm(raised) });
    dispatcher = createWebhookDispatcher({
      database,
      config,
      logger,
      integrityAlarm: alarm,
      now: () => Date.now() + offset,
    });
    await dispatcher.prepare();
  });
  afterAll(async () => {
    await dispatcher?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await ledger?.close();
    await database?.close();
  });

  // An integrity alarm has no ledger event to be derived from: the dispatcher writes it as a
  // delivery when it is raised, and sends it like any other.
  describe('when the integrity alarm is raised', () => {
    it('sends integrity.alarm, signed, with the finding and a link to /readyz', async () => {
      alarm.raise({ code: 'CHAIN_CONFLICT', log: 'default', seq: 7, message: 'the stored chain disagrees' });
      await runUntil(() => bodies.length > 0);
      expect(bodies).toHaveLength(1);
      const sent = JSON.parse(bodies[0]!.body);
      expect(sent).toMatchObject({
        type: 'integrity.alarm',
        log: 'default',
        seq: null,
        subject: 'CHAIN_CONFLICT',
        link: 'https://vouch.example.com/readyz',
        data: { code: 'CHAIN_CONFLICT', seq: 7, message: 'the stored chain disagrees' },
      });
      expect(
        await verifyWebhookSignature({
          secret: 'ops-secret',
          header: bodies[0]!.signature,
          body: bodies[0]!.body,
        }),
      ).toMatchObject({ valid: true });
      await dispatcher.runOnce();
      expect(bodies).toHaveLength(1);
      expect(webhookAlarms('webhook_deliveries')).toEqual([]);
    });

    it('is sent by another process configured with the same target, which can check its MAC', async () => {
      const otherAlarm = createIntegrityAlarm();
      const other = createWebhookDispatcher({ database, config, logger, integrityAlarm: otherAlarm });
      alarm.raise({ code: 'TREE_MISMATCH', log: 'default', seq: 9, message: 'the stored root disagrees' });
      await runUntil(() => received().some((b) => b.subject === 'TREE_MISMATCH'), other);
      expect(received().filter((b) => b.subject === 'TREE_MISMATCH')).toEqual([
        expect.objectContaining({ type: 'integrity.alarm', data: expect.objectContaining({ seq: 9 }) }),
      ]);
      expect(otherAlarm.raised).toBe(false);
      await other.close();
    });
  });

  describe('when a delivery row is inserted behind its back (a signing oracle)', () => {
    it('signs and sends none that its source does not derive, records them failed and raises the alarm', async () => {
      const event = await failedVerification('ver_honest');
      const past = new Date(Date.now() - 60_000).toISOString();
      const forge = (id: string, event: string, seq: number | null, subject: string, body: string) =>
        database.rows(sql`
          insert into webhook_deliveries (id, target, event, log_id, seq, subject, body, created_at, due_at)
          values (${id}, 'ops', ${event}, 'default', ${seq}, ${subject}, ${body}, ${past}, ${past})`);
      // An approval nobody gave, pinned to a real event of another kind.
      await forge(
        'whd_forged_event',
        'approval.resolved',
        event.seq,
        'apr_forged',
        JSON.stringify({
          id: 'whd_forged_event',
          type: 'approval.resolved',
          data: { resolution: 'approved' },
        }),
      );
      // The honest event's notification, with a body of the attacker's choosing.
      await forge(
        'whd_forged_body',
        'verification.failed',
        event.seq,
        'ver_honest',
        JSON.stringify({ type: 'verification.failed', data: { note: 'forged' } }),
      );
      // An alarm needs no event, so it is the easiest to forge.
      await forge(
        'whd_forged_alarm',
        'integrity.alarm',
        null,
        'CHAIN_CONFLICT',
        JSON.stringify({ id: 'whd_forged_alarm', type: 'integrity.alarm', data: { message: 'pay to fix' } }),
      );
      await runUntil(() => received().some((b) => b.subject === 'ver_honest'));
      await dispatcher.runOnce();

      // The honest notification went out; not one forged body was signed and sent.
      expect(received().filter((b) => b.subject === 'ver_honest')).toEqual([
        expect.objectContaining({ type: 'verification.failed', seq: event.seq }),
      ]);
      expect(bodies.filter((b) => b.delivery.startsWith('whd_forged_'))).toEqual([]);
      expect(received().filter((b) => b.subject === 'apr_forged' || b.type !== 'integrity.alarm')).toEqual([
        expect.objectContaining({
          subject: 'ver_honest',
          data: expect.not.objectContaining({ note: 'forged' }),
        }),
      ]);
      expect(bodies.map((b) => b.body).filter((b) => b.includes('pay to fix'))).toEqual([]);
      const forged = (await deliveries()).filter((d) => d.id.startsWith('whd_forged_'));
      expect(forged.map((d) => [d.id, d.status, d.attempts.map((a) => a.error_code)]).sort()).toEqual([
        ['whd_forged_alarm', 'failed', ['DELIVERY_NOT_DERIVED']],
        ['whd_forged_body', 'failed', ['DELIVERY_NOT_DERIVED']],
        ['whd_forged_event', 'failed', ['DELIVERY_NOT_DERIVED']],
      ]);
      // The event's forgeries raise the alarm; the alarm's does not (a rotated secret fails its MAC too).
      expect(webhookAlarms('webhook_deliveries').map((a) => [a.log, a.seq ?? null])).toEqual([
        ['default', event.seq],
      ]);
      // The alarm went out as a notification itself, with the MAC that proves this server wrote it.
      await runUntil(() => received().some((b) => b.subject === 'WEBHOOK_MISMATCH'));
      expect(received().filter((b) => b.subject === 'WEBHOOK_MISMATCH').length).toBeGreaterThan(0);
    });
  });

  describe('when the public URL changed between writing a delivery and sending it', () => {
    it('sends it with the body derived now, its link on the new URL, and raises nothing', async () => {
      // Derived a day "early" by this process, so it is written but not yet due.
      offset = -86_400_000;
      const event = await failedVerification('ver_moved');
      await dispatcher.runOnce();
      offset = 0;
      expect((await deliveries()).filter((d) => d.subject === 'ver_moved')).toEqual([
        expect.objectContaining({ status: 'pending' }),
      ]);
      const otherAlarm = createIntegrityAlarm();
      const moved = { ...config, publicUrl: 'https://vouch.moved.example' };
      const other = createWebhookDispatcher({ database, config: moved, logger, integrityAlarm: otherAlarm });
      try {
        await runUntil(() => received().some((b) => b.subject === 'ver_moved'), other);
        expect(received().filter((b) => b.subject === 'ver_moved')).toEqual([
          expect.objectContaining({
            seq: event.seq,
            link: expect.stringMatching(/^https:\/\/vouch\.moved\.example\//),
          }),
        ]);
        expect(otherAlarm.raised).toBe(false);
      } finally {
        await other.close();
      }
    });
  });

  describe('when a target stops asking for an event while a delivery of it is pending', () => {
    it('cancels it as EVENT_UNSUBSCRIBED, sends nothing, and raises nothing', async () => {
      offset = -86_400_000;
      await failedVerification('ver_unsubscribed');
      await dispatcher.runOnce();
      offset = 0;
      const events = new Set(config.targets[0]!.events);
      events.delete('verification.failed');
      const quieter = { ...config, targets: [{ ...config.targets[0]!, events }] };
      const otherAlarm = createIntegrityAlarm();
      const other = createWebhookDispatcher({
        database,
        config: quieter,
        logger,
        integrityAlarm: otherAlarm,
      });
      try {
        const cancelled = async () =>
          (await deliveries()).filter((d) => d.subject === 'ver_unsubscribed' && d.status === 'cancelled');
        for (let i = 0; i < 200 && (await cancelled()).length === 0; i++) {
          await other.runOnce();
          await delay(25);
        }
        expect((await cancelled()).map((d) => d.attempts.map((a) => a.error_code))).toEqual([
          ['EVENT_UNSUBSCRIBED'],
        ]);
        expect(received().filter((b) => b.subject === 'ver_unsubscribed')).toEqual([]);
        expect(otherAlarm.raised).toBe(false);
      } finally {
        await other.close();
      }
    });
  });

  describe('when a row takes a delivery id before the dispatcher writes it (a pre-emption)', () => {
    it('raises the alarm at once, not when the row comes due', async () => {
      const event = await failedVerification('ver_preempted');
      // Every process derives the same id, so anyone who reads the event can compute it.
      const id = `whd_${createHash('sha256')
        .update(['ops', 'default', event.seq, 'verification.failed', 'ver_preempted', event.at].join('\n'))
        .digest('hex')
        .slice(0, 32)}`;
      const now = new Date().toISOString();
      await database.rows(sql`
        insert into webhook_deliveries (id, target, event, log_id, seq, subject, body, created_at, due_at)
        values (${id}, 'ops', 'verification.failed', 'default', ${event.seq}, 'ver_preempted', '{}', ${now},
                '9999-12-31T00:00:00.000Z')`);
      await dispatcher.runOnce();
      expect(webhookAlarms('webhook_deliveries').filter((a) => a.seq === event.seq)).toEqual([
        expect.objectContaining({
          message: expect.stringContaining(
            `${id} (verification.failed of event ${event.seq}) was already stored`,
          ),
        }),
      ]);
      expect(received().filter((b) => b.subject === 'ver_preempted')).toEqual([]);
    });
  });

  describe('when a cursor far beyond the head is inserted (a kill switch)', () => {
    it('ignores it, still delivers the next event, and raises the alarm', async () => {
      await database.rows(
        sql`insert into webhook_cursors (log_id, seq, read_at) values ('default', ${2 ** 53}, ${new Date().toISOString()})`,
      );
      const event = await failedVerification('ver_after_cursor');
      await runUntil(() => received().some((b) => b.subject === 'ver_after_cursor'));
      expect(received().filter((b) => b.subject === 'ver_after_cursor')).toEqual([
        expect.objectContaining({ type: 'verification.failed', seq: event.seq }),
      ]);
      expect(webhookAlarms('webhook_cursors')).toEqual([
        expect.objectContaining({ log: 'default', seq: 2 ** 53 }),
      ]);
    });
  });

  describe('when events no server wrote are in the logs it reads (a poisoned source)', () => {
    it('derives nothing from them, raises the alarm for each, and still delivers the rest', async () => {
      const at = new Date(Date.now() + offset).toISOString();
      // As the runtime role can append them: a payload that is no object, a time that is no time.
      const nullPayload = await appendRecordedAt(database, {
        log: 'x-poison-a',
        kind: 'verification',
        entity: 'ver_poison',
        actor: 'user:verifier',
        at,
        payload: null,
      });
      const noTime = await appendRecordedAt(database, {
        log: 'x-poison-b',
        kind: 'approval_request',
        entity: 'apr_poison',
        actor: 'agent:gw',
        at: 'not a time',
        payload: { expires_at: at },
      });
      // As an owner can edit one: a payload changed in place, its hash left as it was.
      const edited = await failedVerification('ver_edited_in_place');
      await tamper(
        database,
        sql`update audit_events set payload = replace(payload, 'prop_ver_edited_in_place', 'prop_other')
            where log_id = 'default' and seq = ${edited.seq}`,
      );
      const next = await failedVerification('ver_after_poison');
      await runUntil(() => received().some((b) => b.subject === 'ver_after_poison'));
      expect(received().filter((b) => b.subject === 'ver_after_poison')).toEqual([
        expect.objectContaining({ type: 'verification.failed', seq: next.seq }),
      ]);
      expect(received().some((b) => b.subject === 'ver_edited_in_place')).toBe(false);
      expect(webhookAlarms('audit_events').map((a) => [a.log, a.seq])).toEqual(
        expect.arrayContaining([
          ['x-poison-a', nullPayload.seq],
          ['x-poison-b', noTime.seq],
          ['default', edited.seq],
        ]),
      );
    });
  });

  describe('when a claim with a far-future lease is inserted (a stuck delivery)', () => {
    it('treats the lease as over and sends the delivery as the next attempt, logged, without the alarm', async () => {
      // Derived a day "early", so it is written but not yet due.
      offset = -86_400_000;
      const event = await failedVerification('ver_leased');
      await dispatcher.runOnce();
      offset = 0;
      const [pending] = (await deliveries()).filter((d) => d.subject === 'ver_leased');
      expect(pending).toMatchObject({ status: 'pending' });
      await database.rows(sql`
        insert into webhook_attempts (delivery_id, attempt, claimed_at, lease_until)
        values (${pending!.id}, 1, ${new Date().toISOString()}, '9999-12-31T00:00:00.000Z')`);
      await runUntil(() => received().some((b) => b.subject === 'ver_leased'));
      expect(received().filter((b) => b.subject === 'ver_leased')).toEqual([
        expect.objectContaining({ type: 'verification.failed', seq: event.seq }),
      ]);
      const [sent] = (await deliveries()).filter((d) => d.subject === 'ver_leased');
      expect(sent).toMatchObject({ status: 'delivered', attempts: [{ attempt: 1 }, { attempt: 2 }] });
      // Another process's clock or settings in a rolling deploy look the same: taken over, not alarmed.
      expect(alarm.alarms().filter((a) => a.table === 'webhook_attempts')).toEqual([]);
      expect(
        logger.lines.filter((l) => l.msg === 'webhook claim taken over' && l.delivery === pending!.id),
      ).toEqual([expect.objectContaining({ level: 'warn', waited: 'lease' })]);
    });
  });
});
