import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import { appendWithFields, createLedger, type Database, migrate, OPERATOR_ACTOR } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { createMemoryLogger } from '../logger';
import { runVouch } from '../testing/cli-io';
import { cliStorages } from '../testing/cli-storages';

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-redact-cli-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const EMAIL = 'ana.cli-test@example.com';

describe.each(cliStorages(() => root))('vouch redact on $name', (storage) => {
  const keys = generateNoteKeys('audit.example/v');
  let env: NodeJS.ProcessEnv;
  let drop: () => Promise<void>;
  const run = (argv: string[]) => runVouch(argv, { env, cwd: root });
  const file = (name: string, text: string) => {
    const path = join(root, `${storage.name}-${name}`);
    writeFileSync(path, text);
    return path;
  };

  let openStorage: () => Promise<Database>;

  beforeAll(async () => {
    const made = await storage.make();
    env = { ...made.env, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
    drop = made.drop;
    openStorage = made.open;
    const database = await made.open();
    await migrate(database);
    const ledger = createLedger(database);
    await ledger.append({ log: 'crm', kind: 'note', entity: 'n1', actor: 'user:alice', payload: { i: 1 } });
    await appendWithFields(ledger, {
      log: 'crm',
      kind: 'customer.contacted',
      entity: 'cust_1',
      actor: 'gateway:mcp',
      payload: { email: EMAIL, channel: 'email' },
    });
    await ledger.close();
    await database.close();
  });
  afterAll(async () => {
    await drop?.();
  });

  describe('when a field is redacted', () => {
    it('erases it, and verify, export and verify --bundle report the redaction with every proof intact', async () => {
      const redacted = await run([
        'redact',
        '--log',
        'crm',
        '--seq',
        '2',
        '--field',
        'email',
        '--reason',
        'ticket 117',
      ]);
      expect(redacted).toMatchObject({ code: 0 });
      expect(redacted.out).toContain('erased email of event 2; redaction recorded as event 3');

      const verified = await run(['verify', '--log', 'crm']);
      expect(verified.code).toBe(0);
      expect(verified.out).toContain('INTACT');
      expect(verified.out).toContain('seq 2  REDACTED email  by event 3: "ticket 117"');

      const exported = await run(['export', '--log', 'crm']);
      expect(exported.code).toBe(0);
      expect(exported.out).not.toContain(EMAIL);
      const lines = exported.out.trimEnd().split('\n');
      expect(JSON.parse(lines[0]!)).toMatchObject({ format: 'vouch-bundle/2', treeSize: 3 });
      expect(JSON.parse(lines[2]!)).toMatchObject({
        commitment: 'fields/1',
        fields: { channel: { value: 'email' } },
      });

      const path = file('redacted.jsonl', exported.out);
      const bundle = await run(['verify', '--bundle', path, '--public-key', keys.verifierKey, '--json']);
      expect(bundle.code).toBe(0);
      expect(JSON.parse(bundle.out)).toMatchObject({
        ok: true,
        checkpoint: { treeSize: 3 },
        redactions: [{ seq: 2, fields: ['email'], by: 3, reason: 'ticket 117' }],
      });

      // A field dropped from the bundle by whoever passed it on is not an authorized redaction.
      const line = JSON.parse(lines[2]!);
      delete line.fields.channel;
      const stripped = file(
        'stripped.jsonl',
        `${[lines[0], lines[1], JSON.stringify(line), ...lines.slice(3)].join('\n')}\n`,
      );
      const broken = await run(['verify', '--bundle', stripped, '--public-key', keys.verifierKey]);
      expect(broken.code).toBe(1);
      expect(broken.out).toContain('REDACTION_UNAUTHORIZED');
    });
  });

  describe('when an argument of a proposal made over HTTP is redacted', () => {
    it('verify reports it with the chain intact, and the exported bundle verifies without the value', async () => {
      const database = await openStorage();
      const ledger = createLedger(database);
      const store = createKeyStore(ledger);
      const app = createApp({ ledger, keys: store, logger: createMemoryLogger() });
      const keyOf = async (identity: string, role: 'admin' | 'gateway') =>
        (await store.create({ identity, roles: [role], logs: null, createdBy: OPERATOR_ACTOR })).secret;
      const post = async (path: string, key: string, body: unknown) => {
        const response = await app.request(path, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as { proposal: { id: string } } };
      };
      const tool = { server_id: 'mail', tool_name: 'send', side_effect: 'read_only' };
      expect((await post('/v1/tools?log=mail', await keyOf('user:root', 'admin'), tool)).status).toBe(201);
      const proposed = await post('/v1/proposals?log=mail', await keyOf('agent:mailer', 'gateway'), {
        idempotency_key: 'mail-1',
        action: 'mail.send',
        ...tool,
        target: { kind: 'mailbox', id: 'outbox', env: 'production' },
        arguments: { to: EMAIL, subject: 'Your refund' },
      });
      expect(proposed.status).toBe(201);
      const event = (await ledger.events('mail')).find((e) => e.entity === proposed.body.proposal.id);
      await ledger.close();
      await database.close();

      const seq = String(event!.seq);
      const redacted = await run([
        'redact',
        '--log',
        'mail',
        '--seq',
        seq,
        '--field',
        'to',
        '--reason',
        'ticket 120',
      ]);
      expect(redacted).toMatchObject({ code: 0 });
      const verified = await run(['verify', '--log', 'mail']);
      expect(verified.code).toBe(0);
      expect(verified.out).toContain('INTACT');
      expect(verified.out).toMatch(new RegExp(`seq ${seq}  REDACTED to  by event \\d+: "ticket 120"`));

      const exported = await run(['export', '--log', 'mail']);
      expect(exported.code).toBe(0);
      expect(exported.out).toContain('Your refund');
      expect(exported.out).not.toContain(EMAIL);
      const bundle = await run([
        'verify',
        '--bundle',
        file('mail.jsonl', exported.out),
        '--public-key',
        keys.verifierKey,
        '--json',
      ]);
      expect(bundle.code).toBe(0);
      expect(JSON.parse(bundle.out)).toMatchObject({
        ok: true,
        redactions: [{ seq: event!.seq, fields: ['to'], reason: 'ticket 120' }],
      });
    });
  });

  describe('when the redaction is refused', () => {
    it.each([
      ['an unknown event', ['--seq', '99', '--field', 'email'], 'EVENT_NOT_FOUND'],
      ['a whole-payload event', ['--seq', '1', '--field', 'i'], 'EVENT_NOT_REDACTABLE'],
      ['an unknown field', ['--seq', '2', '--field', 'phone'], 'FIELD_NOT_FOUND'],
    ])('exits 2 for %s with its code', async (_what, args, code) => {
      const refused = await run(['redact', '--log', 'crm', ...args, '--reason', 'ticket 118']);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain(code);
    });

    it('exits 2 without a reason, writing nothing', async () => {
      const refused = await run(['redact', '--log', 'crm', '--seq', '2', '--field', 'channel']);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('--reason');
      const verified = await run(['verify', '--log', 'crm', '--json']);
      expect(JSON.parse(verified.out).checked).toBe(3);
    });
  });

  // Runs last (it redacts again). Only Postgres has no log key by default.
  describe('when the latest checkpoint predates a redaction and no key can sign a newer one', () => {
    it.runIf(storage.name === 'postgres')(
      'exports up to it and says which events will show unauthorized',
      async () => {
        expect(
          (
            await run([
              'redact',
              '--log',
              'crm',
              '--seq',
              '2',
              '--field',
              'channel',
              '--reason',
              'ticket 119',
            ])
          ).code,
        ).toBe(0);
        const { VOUCH_LOG_SIGNING_KEY: _key, ...withoutKey } = env;
        const exported = await runVouch(['export', '--log', 'crm'], { env: withoutKey, cwd: root });
        expect(exported.code).toBe(0);
        expect(exported.err).toContain(
          'events 2 had fields erased by redactions after the latest checkpoint',
        );
        const path = file('stale.jsonl', exported.out);
        const verified = await run(['verify', '--bundle', path, '--public-key', keys.verifierKey]);
        expect(verified.code).toBe(1);
        expect(verified.out).toContain('REDACTION_UNAUTHORIZED');
      },
    );
  });
});
