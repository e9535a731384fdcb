import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { verifyWebhookSignature } from '@vouch/client';
import { createIntegrityAlarm, type Database, migrate, openDatabase } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../logger';
import type { WebhookConfig } from './webhook-config';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher';

// An integrity alarm has no ledger event to be derived from: the dispatcher writes it as a
// delivery when it is raised, and sends it like any other.
describe('the webhook dispatcher', () => {
  let database: Database;
  let receiver: Server;
  let dispatcher: WebhookDispatcher;
  const bodies: Array<{ body: string; signature: string }> = [];
  const logger = createMemoryLogger();

  beforeAll(async () => {
    database = await openDatabase();
    await migrate(database);
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (c: string) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push({ body, signature: String(req.headers['vouch-signature']) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const config: WebhookConfig = {
      targets: [
        {
          name: 'ops',
          url: new URL(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alarms`),
          secret: 'alarm-secret',
          format: 'vouch',
          events: new Set(['integrity.alarm']),
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
    dispatcher = createWebhookDispatcher({ database, config, logger });
    await dispatcher.prepare();
  });
  afterAll(async () => {
    await dispatcher?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await database?.close();
  });

  describe('when the integrity alarm is raised', () => {
    it('sends integrity.alarm, signed, with the finding and a link to /readyz', async () => {
      const alarm = createIntegrityAlarm({ onRaise: (raised) => dispatcher.notifyAlarm(raised) });
      alarm.raise({ code: 'CHAIN_CONFLICT', log: 'default', seq: 7, message: 'the stored chain disagrees' });
      for (let i = 0; i < 200 && bodies.length === 0; i++) {
        await dispatcher.runOnce();
        if (bodies.length === 0) await delay(25);
      }
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
          secret: 'alarm-secret',
          header: bodies[0]!.signature,
          body: bodies[0]!.body,
        }),
      ).toMatchObject({ valid: true });
      await dispatcher.runOnce();
      expect(bodies).toHaveLength(1);
    });
  });
});
