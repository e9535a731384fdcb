import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { generateNoteKeys, openCheckpoint } from '@vouch/audit';
import { createLedger, merkleAppendHook, migrate } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { runVouch, startVouchServer, type VouchServer } from './helpers/server';

// Issue 12, end to end: a log appended while nothing signed (no key, or a process that
// stopped first) is signed when `vouch serve` starts with a key, without a new append, so a
// witness's first `vouch verify --since --init` has something to trust; and a first use
// against a log that does not exist is a usage error (exit 2), not evidence (exit 1).

const backends = serverBackends();

const keys = generateNoteKeys('audit.example/vouch');

describe.each(backends)('a witness at first use, end to end on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer | undefined;
  let auditor: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-first-use-${backend.name}-`));
    env = await backend.setup(dir);
    // Appended while no checkpointer ran: the log has events and a Merkle tree, no checkpoint.
    const database = await env.open();
    try {
      await migrate(database);
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      for (let i = 1; i <= 3; i++) {
        await ledger.append({
          log: 'quiet',
          kind: 'note',
          entity: `e${i}`,
          actor: 'user:alice',
          payload: { i },
        });
      }
      await ledger.close();
    } finally {
      await database.close();
    }
    server = await startVouchServer({
      storage: env.storage,
      cwd: dir,
      env: { VOUCH_LOG_SIGNING_KEY: keys.signerKey, VOUCH_CHECKPOINT_INTERVAL_MS: '0' },
    });
    const created = await server.call('POST', '/v1/keys', {
      key: server.adminKey,
      body: { identity: 'user:audrey', roles: ['auditor'] },
    });
    expect(created.status).toBe(201);
    auditor = ((await created.json()) as { secret: string }).secret;
  });
  afterAll(async () => {
    await server?.stop();
    await env?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const init = (log: string, file: string) =>
    runVouch(
      [
        'verify',
        '--since',
        file,
        '--init',
        '--url',
        server!.url,
        '--key',
        auditor,
        '--log',
        log,
        '--public-key',
        keys.verifierKey,
        '--json',
      ],
      { storage: env.storage, cwd: dir },
    );

  describe('when a log was appended while nothing signed', () => {
    it('is signed at start-up without a new append, and --init trusts it', async () => {
      let status = 0;
      // Signing runs in the server process beside start-up: there is no event to await over HTTP.
      for (let attempt = 0; attempt < 400 && status !== 200; attempt++) {
        if (attempt > 0) await delay(25);
        status = (await server!.call('GET', '/v1/logs/quiet/checkpoint', { key: auditor })).status;
      }
      expect(status).toBe(200);
      const file = join(dir, 'quiet.checkpoint');
      const result = await init('quiet', file);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({
        ok: true,
        status: 'CONSISTENT',
        latest: { tree_size: 3 },
        checked: 3,
        saved: file,
      });
      expect(openCheckpoint(readFileSync(file, 'utf8'), { verifiers: [keys.verifierKey] }).ok).toBe(true);
    });
  });

  describe('when --init names a log that does not exist', () => {
    it('exits 2 with LOG_NOT_FOUND and saves nothing', async () => {
      const file = join(dir, 'typo.checkpoint');
      const result = await init('typo', file);
      expect(result.code).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, error: { code: 'LOG_NOT_FOUND' } });
      expect(existsSync(file)).toBe(false);
    });
  });
});
