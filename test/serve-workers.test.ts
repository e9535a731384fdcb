import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch, startVouchServer, type VouchServer } from './helpers/server';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned
type Json = Record<string, any>;

const serverUrl = process.env.DATABASE_URL;

/** Until `check` holds, polling every 50 ms (at most `ms`). */
async function until(check: () => boolean, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// Several processes need a server: PGlite is embedded in one process by design (its refusal is below).
describe.runIf(serverUrl)('vouch serve --workers 2 on Postgres', () => {
  let dir: string;
  let storage: { DATABASE_URL: string };
  let drop: () => Promise<void>;
  let server: VouchServer;
  const appends = 96;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-workers-'));
    const created = await createTestDatabase(serverUrl!);
    drop = created.drop;
    storage = { DATABASE_URL: created.url };
    server = await startVouchServer({ storage, cwd: dir, env: { VOUCH_WORKERS: '2' } });
    await until(() => server.logs.some((l) => l.msg === 'workers listening'));
  }, 120_000);
  afterAll(async () => {
    if (server?.child.exitCode === null) await server.stop();
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps one linear chain while both workers append concurrently, and stops both on SIGTERM', async () => {
    const workers = server.logs.find((l) => l.msg === 'workers listening')!.workers as number[];
    expect(workers).toHaveLength(2);
    expect(workers).not.toContain(server.child.pid);

    const key = await server.call('POST', '/v1/keys', {
      key: server.adminKey,
      body: { identity: 'agent:billing-bot', roles: ['gateway'] },
    });
    expect(key.status).toBe(201);
    const gateway = ((await key.json()) as Json).secret as string;
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await server.call('POST', '/v1/tools', { key: server.adminKey, body: tool })).status).toBe(201);

    // Many connections at once: the cluster deals connections out to the workers in turn.
    const statuses = await Promise.all(
      Array.from({ length: appends }, (_, i) =>
        server
          .call('POST', '/v1/proposals', {
            key: gateway,
            headers: { connection: 'close' },
            body: {
              idempotency_key: `workers-${i}`,
              action: 'pay.refund',
              server_id: 'pay',
              tool_name: 'refund',
              target: { kind: 'order', id: `o-${i}`, env: 'staging' },
              arguments: { amount: i },
              side_effect: 'compensatable',
            },
          })
          .then((r) => r.status),
      ),
    );
    expect(statuses.every((s) => s === 201)).toBe(true);

    // Both workers served proposals (each log line carries the pid of the process that wrote it).
    const servedBy = new Set(
      server.logs
        .filter((l) => l.msg === 'request' && l.route === '/v1/proposals' && l.status === 201)
        .map((l) => l.pid),
    );
    expect([...servedBy].sort()).toEqual([...workers].sort());

    expect(await server.stop()).toBe(0);
    // Each worker shut down gracefully (drained its appends, closed its database), then the supervisor.
    const stopped = server.logs.filter((l) => l.msg === 'stopped').map((l) => l.pid);
    expect([...stopped].sort()).toEqual([...workers, server.child.pid].sort());

    const verified = await runVouch(['verify', '--log', 'default', '--json'], { storage, cwd: dir });
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    const report = JSON.parse(verified.stdout) as Json;
    expect(report).toMatchObject({ ok: true, failures: [] });
    expect(report.checked).toBeGreaterThanOrEqual(appends);
  }, 120_000);
});

describe('vouch serve --workers on PGlite', () => {
  it('refuses with exit 2 and says why: PGlite lives in one process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vouch-workers-pglite-'));
    try {
      const result = await runVouch(['serve', '--workers', '2', '--port', '0'], {
        storage: { VOUCH_DATA_DIR: join(dir, 'data') },
        cwd: dir,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--workers needs Postgres/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
