import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys, parseSignerKey } from '@vouch/audit';
import {
  createCheckpointer,
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  OPERATOR_ACTOR,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { recordingIo } from '../testing/cli-io';
import { verifySinceCommand } from './verify-since';

// `vouch verify --since` at first use (`--init`) against the API: nothing is trusted yet,
// so a log the server does not know or has not signed is not evidence of a rewrite (exit 2,
// nothing saved); once a checkpoint is on file, the same answers withhold it (exit 1).

const keys = generateNoteKeys('audit.example/v');
const signers = [parseSignerKey(keys.signerKey)];

describe.each(testBackends())('vouch verify --since at first use on $name', ({ open }) => {
  let root: string;
  let database: Database;
  let ledger: Ledger;
  let app: VouchApp;
  let auditor: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'vouch-first-use-'));
    database = await open();
    // No checkpointer: appends are not signed, as on a server without a key.
    ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    const store = createKeyStore(ledger);
    app = createApp({ ledger, keys: store });
    auditor = (await store.create({ identity: 'user:audrey', roles: ['auditor'], createdBy: OPERATOR_ACTOR }))
      .secret;
    for (let i = 1; i <= 4; i++) {
      await ledger.append({
        log: 'orders',
        kind: 'note',
        entity: `e${i}`,
        actor: 'user:alice',
        payload: { i },
      });
    }
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
    rmSync(root, { recursive: true, force: true });
  });

  async function since(file: string, extra: string[] = []) {
    const f = recordingIo({ env: { VOUCH_API_KEY: auditor }, cwd: root });
    const argv = ['--since', file, '--url', 'http://vouch.test', '--public-key', keys.verifierKey, '--json'];
    const code = await verifySinceCommand.run([...argv, ...extra], {
      ...f.io,
      fetch: (input, init) => Promise.resolve(app.request(String(input), init)),
    });
    return { code, json: JSON.parse(f.out()), err: f.err() };
  }

  /** Sign every unsigned log's head as a server starting with a key does, with no new append. */
  async function startSigning(): Promise<void> {
    const checkpointer = createCheckpointer({
      database,
      origin: (log) => logOrigin('audit.example/v', log),
      signers,
      integrityAlarm: ledger.integrityAlarm,
    });
    expect(await checkpointer.catchUp()).toContain('orders');
    await checkpointer.close();
  }

  describe('when the log has no signed checkpoint yet', () => {
    it('exits 2 with NO_CHECKPOINT_YET and saves nothing', async () => {
      const file = join(root, 'unsigned.checkpoint');
      const { code, json, err } = await since(file, ['--init', '--log', 'orders']);
      expect(code).toBe(2);
      expect(json).toMatchObject({ ok: false, error: { code: 'NO_CHECKPOINT_YET' } });
      expect(err).toContain('try again after the server signs');
      expect(existsSync(file)).toBe(false);
    });
  });

  describe('when the log does not exist', () => {
    it('exits 2 with LOG_NOT_FOUND and saves nothing', async () => {
      const file = join(root, 'typo.checkpoint');
      const { code, json } = await since(file, ['--init', '--log', 'ordres']);
      expect(code).toBe(2);
      expect(json).toMatchObject({ ok: false, error: { code: 'LOG_NOT_FOUND' } });
      expect(existsSync(file)).toBe(false);
    });
  });

  describe('when the server starts signing', () => {
    it('--init trusts the head it signed without a new append', async () => {
      await startSigning();
      const file = join(root, 'signed.checkpoint');
      const { code, json } = await since(file, ['--init', '--log', 'orders']);
      expect(code).toBe(0);
      expect(json).toMatchObject({ status: 'CONSISTENT', latest: { tree_size: 4 }, saved: file });
    });
  });

  describe('when a trusted checkpoint is on file and the server no longer knows the log', () => {
    it('exits 1 with WITHHELD, naming LOG_NOT_FOUND, and keeps the trusted file', async () => {
      const file = join(root, 'kept.checkpoint');
      expect((await since(file, ['--init', '--log', 'orders'])).code).toBe(0);
      const before = readFileSync(file, 'utf8');
      // Everything stored under the log removed, as its database owner can.
      await database.db.transaction(async (tx) => {
        await database.rows(sql`set local session_replication_role = replica`, tx);
        for (const table of ['checkpoints', 'merkle_nodes', 'audit_events'])
          await database.rows(sql`delete from ${sql.identifier(table)} where log_id = 'orders'`, tx);
      });
      const { code, json } = await since(file);
      expect(code).toBe(1);
      expect(json).toMatchObject({ ok: false, status: 'WITHHELD' });
      expect(json.message).toContain('LOG_NOT_FOUND');
      expect(readFileSync(file, 'utf8')).toBe(before);
    });
  });
});
