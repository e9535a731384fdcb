import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createIntegrityAlarm, createLedger, type Database, verifyChain } from '@vouch/ledger';
import { tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../app';
import { runVouch } from '../testing/cli-io';
import { cliStorages } from '../testing/cli-storages';
import { createKeyStore } from './key-store';

// `vouch keys rotate --grace`: the old key keeps working until a deadline the system log
// records, then is refused; proven through the CLI, HTTP authentication and `vouch verify`.

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-key-grace-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const MINUTE = 60_000;

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(cliStorages(() => root))('rotation with a grace period on $name', (storage) => {
  let env: NodeJS.ProcessEnv;
  let open: () => Promise<Database>;
  let drop: () => Promise<void>;
  const run = (argv: string[]) => runVouch(argv, { env, cwd: root });

  beforeAll(async () => {
    const made = await storage.make();
    ({ env, open, drop } = made);
    expect((await run(['migrate'])).code).toBe(0);
  });
  afterAll(async () => {
    await drop();
  });

  /** Authenticate `secret` at `at` on an app over the database (no command has it open meanwhile). */
  async function statusAt(secrets: string[], at: number): Promise<Array<{ status: number; body: Json }>> {
    const database = await open();
    const ledger = createLedger(database);
    try {
      const app = createApp({ ledger, keys: createKeyStore(ledger), now: () => new Date(at) });
      const answers = [];
      for (const secret of secrets) {
        const response = await app.request('/v1/me', { headers: { authorization: `Bearer ${secret}` } });
        answers.push({ status: response.status, body: (await response.json()) as Json });
      }
      return answers;
    } finally {
      await ledger.close();
      await database.close();
    }
  }

  async function createKey(identity: string): Promise<{ id: string; secret: string }> {
    const created = await run(['keys', 'create', '--identity', identity, '--role', 'auditor', '--json']);
    expect(created.code).toBe(0);
    const parsed = JSON.parse(created.out) as { key: { id: string }; secret: string };
    return { id: parsed.key.id, secret: parsed.secret };
  }

  it('keeps the old key working until the deadline, refuses it from then on, and the chain proves the deadline', async () => {
    const old = await createKey('user:grace');
    const before = Date.now();
    const rotated = await run(['keys', 'rotate', old.id, '--grace', '15m', '--json']);
    expect(rotated.code).toBe(0);
    const answer = JSON.parse(rotated.out) as {
      secret: string;
      old_revoked: boolean;
      old_expires_at: string;
    };
    expect(answer.old_revoked).toBe(false);
    const deadline = Date.parse(answer.old_expires_at);
    expect(deadline).toBeGreaterThanOrEqual(before + 15 * MINUTE - 1_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 15 * MINUTE + 1_000);

    const listed = JSON.parse((await run(['keys', 'list', '--json'])).out).keys as Array<{
      id: string;
      revoked_at: string | null;
      expires_at: string | null;
    }>;
    expect(listed.find((k) => k.id === old.id)).toMatchObject({
      revoked_at: null,
      expires_at: answer.old_expires_at,
    });
    expect((await run(['keys', 'list'])).out).toContain(`EXPIRES ${answer.old_expires_at}`);

    const [oldBefore, newBefore] = await statusAt([old.secret, answer.secret], deadline - 1_000);
    expect(oldBefore!.status).toBe(200);
    expect(newBefore!.status).toBe(200);
    const [oldAfter, newAfter] = await statusAt([old.secret, answer.secret], deadline);
    expect(oldAfter).toMatchObject({
      status: 401,
      body: {
        error: { code: 'KEY_EXPIRED', details: { key_id: old.id, expired_at: answer.old_expires_at } },
      },
    });
    expect(newAfter!.status).toBe(200);

    // The deadline is an event of the system log, and the verification of that log passes.
    const database = await open();
    try {
      const [event] = await database.rows<{ kind: string; actor: string; payload: string }>(
        sql`select kind, actor, payload from audit_events where log_id = 'system' and entity_id = ${old.id} and kind = 'api_key.expires'`,
      );
      expect(event).toMatchObject({ actor: 'system:cli' });
      expect(JSON.parse(event!.payload)).toEqual({
        id: old.id,
        expires_at: answer.old_expires_at,
        set_by: 'system:cli',
      });
    } finally {
      await database.close();
    }
    const verified = await run(['verify', '--log', 'system']);
    expect(verified.code).toBe(0);
    expect(verified.out).toMatch(/INTACT/);
  });

  it('refuses a key whose deadline was moved behind the ledger’s back at once, and verify says so', async () => {
    const old = await createKey('user:mover');
    const rotated = await run(['keys', 'rotate', old.id, '--grace', '1h', '--json']);
    const { old_expires_at } = JSON.parse(rotated.out) as { old_expires_at: string };
    const later = new Date(Date.parse(old_expires_at) + 365 * 86_400_000).toISOString();
    const database = await open();
    try {
      await tamper(
        database,
        sql`update audit_events set payload = ${JSON.stringify({ expires_at: later, id: old.id, set_by: 'system:cli' })}
            where log_id = 'system' and entity_id = ${old.id} and kind = 'api_key.expires'`,
      );
      const ledger = createLedger(database, { integrityAlarm: createIntegrityAlarm() });
      const app = createApp({ ledger, keys: createKeyStore(ledger), now: () => new Date() });
      const response = await app.request('/v1/me', { headers: { authorization: `Bearer ${old.secret}` } });
      expect(response.status).toBe(401);
      expect(((await response.json()) as Json).error.code).toBe('KEY_EXPIRED');
      expect(ledger.integrityAlarm.alarms()).toContainEqual(
        expect.objectContaining({ code: 'KEY_MISMATCH' }),
      );
      const report = await verifyChain(database, { log: 'system' });
      expect(report.ok).toBe(false);
      await ledger.close();
    } finally {
      await database.close();
    }
    expect((await run(['verify', '--log', 'system'])).code).toBe(1);
  });

  it('refuses a bad --grace with exit 2, naming the option, and changes nothing', async () => {
    const old = await createKey('user:unchanged');
    const keysBefore = (await run(['keys', 'list', '--json'])).out;
    for (const [extra, named] of [
      [['--grace', '15x'], '--grace 15x'],
      [['--grace', '0m'], '--grace 0m'],
      [['--grace', '31d'], '--grace 31d'],
      [['--grace', '5m', '--keep-old'], '--keep-old'],
    ] as const) {
      const refused = await run(['keys', 'rotate', old.id, ...extra]);
      expect(refused.code, named).toBe(2);
      expect(refused.err).toContain(named);
    }
    expect((await run(['keys', 'list', '--json'])).out).toBe(keysBefore);
  });
});
