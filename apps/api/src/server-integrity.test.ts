import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rewriteEvent } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from './auth/api-key';
import { serveConfig } from './config';
import { createMemoryLogger } from './logger';
import { type RunningServer, startServer } from './server';

let root: string;
let server: RunningServer;
const logger = createMemoryLogger();
const adminKey = generateApiKey().secret;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'vouch-integrity-'));
  const config = serveConfig(
    {
      VOUCH_DATA_DIR: join(root, 'data'),
      PORT: '0',
      HOST: '127.0.0.1',
      VOUCH_ADMIN_KEY: adminKey,
      VOUCH_CHECKPOINT_INTERVAL_MS: '1',
    },
    root,
  );
  server = await startServer({ config, logger, announceAdminKey: () => {} });
});
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Resolves once `check` holds, trying again after each turn of the event loop (bounded). */
async function eventually(check: () => Promise<boolean> | boolean): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('condition never held');
}

const createKey = (identity: string) =>
  fetch(`${server.url}/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ identity, roles: ['auditor'] }),
  });

describe('a running server', () => {
  describe('when history under a signed checkpoint is rewritten with every hash recomputed', () => {
    it('stops signing, logs an INTEGRITY_ALARM line and answers /readyz 503 INTEGRITY_ALARM', async () => {
      expect((await createKey('user:one')).status).toBe(201);
      const [{ log } = { log: '' }] = await server.database.rows<{ log: string }>(
        sql`select log_id as log from audit_events order by seq desc limit 1`,
      );
      const signedSize = async () =>
        (
          await server.database.rows<{ size: number | null }>(
            sql`select max(tree_size)::int as size from checkpoints where log_id = ${log}`,
          )
        )[0]?.size ?? 0;
      const head = async () => (await server.ledger.head(log))?.seq ?? 0;
      await eventually(async () => (await signedSize()) === (await head()));
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

      const signedBefore = await signedSize();
      // The signed head (user:one's key event), not the admin key's: the admin key must still
      // authenticate (a key row that no longer matches its event is refused, and raises
      // KEY_MISMATCH) for the next append to reach the checkpointer.
      await rewriteEvent(server.database, { log, seq: signedBefore, payload: '{"rewritten":true}' });
      expect((await createKey('user:two')).status).toBe(201);

      await eventually(() => logger.lines.some((l) => l.msg === 'integrity alarm'));
      const line = logger.lines.find((l) => l.msg === 'integrity alarm');
      expect(line).toMatchObject({ level: 'error', code: 'INTEGRITY_ALARM', alarm: 'CHAIN_MISMATCH', log });
      expect(line?.seq).toBe(signedBefore + 1);

      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: 'not_ready',
        code: 'INTEGRITY_ALARM',
        integrity: { ok: false, alarms: [{ code: 'CHAIN_MISMATCH', log, seq: signedBefore + 1 }] },
      });
      // The round that found it signed nothing.
      expect(await signedSize()).toBe(signedBefore);
    });
  });
});
