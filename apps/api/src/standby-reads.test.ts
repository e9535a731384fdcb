import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import { type Database, migrate, openDatabase } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_SOURCE_HEADER } from './app';
import { generateApiKey } from './auth/api-key';
import { ConfigError, serveConfig } from './config';
import { createMemoryLogger } from './logger';
import { type RunningServer, startServer } from './server';
import { type StreamingReplica, startStreamingReplica } from './testing/streaming-replica';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

/** A query on a Postgres handle, rows loosely typed. */
async function query(database: Database, text: string, parameters: string[] = []): Promise<Json[]> {
  if (database.driver.kind !== 'postgres') throw new Error('a Postgres handle was expected');
  return [...(await database.driver.client.unsafe(text, parameters))];
}

const proposal = (n: number) => ({
  idempotency_key: `standby-${n}`,
  action: 'pay.refund',
  server_id: 'pay',
  tool_name: 'refund',
  target: { kind: 'order', id: `o-${n}`, env: 'staging' },
  arguments: { amount: n },
  side_effect: 'compensatable',
});

// The test starts its own primary and streaming standby (initdb, pg_basebackup -R, pg_ctl):
// the shared server may not take replication connections. It runs only where Postgres is the
// backend under test (DATABASE_URL set), like every other Postgres-only test.
describe.skipIf(!process.env.DATABASE_URL)('reads on a hot standby (DATABASE_READ_URL)', () => {
  let replica: StreamingReplica;
  let server: RunningServer;
  let primary: Database;
  let root: string;
  const logger = createMemoryLogger();
  const adminKey = generateApiKey().secret;
  const k = {} as Record<'gateway' | 'auditor', string>;
  let n = 0;

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return {
      status: response.status,
      source: response.headers.get(READ_SOURCE_HEADER),
      body: (await response.json()) as Json,
    };
  };
  const propose = async () => {
    const created = await call('POST', '/v1/proposals', k.gateway, proposal(++n));
    expect(created.status).toBe(201);
    return created.body.proposal.id as string;
  };
  /** What the standby itself holds right now, read straight from it. */
  const onStandby = async (id: string) => {
    const standby = await openDatabase({ url: replica.standbyUrl.replace(/\/postgres$/, '/vouch') });
    try {
      const rows = await query(standby, 'select id from proposals where id = $1', [id]);
      return rows.length;
    } finally {
      await standby.close();
    }
  };

  beforeAll(async () => {
    replica = await startStreamingReplica();
    const admin = await openDatabase({ url: replica.primaryUrl });
    await query(admin, 'create database vouch');
    await admin.close();
    const primaryUrl = replica.primaryUrl.replace(/\/postgres$/, '/vouch');
    primary = await openDatabase({ url: primaryUrl });
    await migrate(primary);
    await replica.caughtUp();
    root = mkdtempSync(join(tmpdir(), 'vouch-standby-'));
    const config = serveConfig(
      {
        DATABASE_URL: primaryUrl,
        DATABASE_READ_URL: replica.standbyUrl.replace(/\/postgres$/, '/vouch'),
        // Long enough for a standby on a busy machine to catch up; a paused one exceeds any wait.
        VOUCH_READ_MAX_WAIT_MS: '2000',
        PORT: '0',
        VOUCH_ADMIN_KEY: adminKey,
        VOUCH_ALLOW_OWNER_ROLE: '1',
        VOUCH_LOG_SIGNING_KEY: generateNoteKeys('standby.test/log').signerKey,
        VOUCH_CHECKPOINT_INTERVAL_MS: '0',
      },
      root,
    );
    server = await startServer({
      config,
      logger,
      announceAdminKey: () => expect.unreachable('key was supplied'),
    });
    for (const [name, role] of [
      ['gateway', 'gateway'],
      ['auditor', 'auditor'],
    ] as const) {
      const key = await call('POST', '/v1/keys', adminKey, { identity: `user:${name}`, roles: [role] });
      expect(key.status).toBe(201);
      k[name] = key.body.secret;
    }
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call('POST', '/v1/tools', adminKey, tool)).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await primary?.close();
    await replica?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  describe('when the standby has replayed the write', () => {
    it('serves the story, the verification and the checkpoint from the standby', async () => {
      const id = await propose();
      await replica.caughtUp();
      const story = await call('GET', `/v1/proposals/${id}`, k.gateway);
      expect(story).toMatchObject({ status: 200, source: 'standby', body: { proposal: { id } } });
      const verified = await call('GET', '/v1/logs/default/verify', k.auditor);
      expect(verified).toMatchObject({ status: 200, source: 'standby', body: { ok: true } });
      // The server's read handle is a standby in recovery, not the primary under another name.
      const [recovery] = await query(server.standby!, 'select pg_is_in_recovery() as on');
      expect(recovery).toEqual({ on: true });
    });
  });

  describe('when the standby lags (replay paused)', () => {
    beforeAll(() => replica.pauseReplay(), 30_000);
    afterAll(() => replica.resumeReplay());

    it('still answers a story read right after its write (read-your-writes), from the primary', async () => {
      const id = await propose();
      // The lag is real: the standby does not have the proposal.
      expect(await onStandby(id)).toBe(0);
      const story = await call('GET', `/v1/proposals/${id}`, k.gateway);
      expect(story).toMatchObject({ status: 200, source: 'primary', body: { proposal: { id } } });
    });

    it('never reports a false failure: events and checkpoints newer than the standby verify intact', async () => {
      await propose();
      await propose();
      const checkpoint = await call('GET', '/v1/logs/default/checkpoint', k.auditor);
      expect(checkpoint.status).toBe(200);
      const [written] = await query(
        primary,
        "select max(seq)::int as seq from audit_events where log_id = 'default'",
      );
      const verified = await call('GET', '/v1/logs/default/verify', k.auditor);
      expect(verified).toMatchObject({ status: 200, body: { ok: true } });
      // It verified everything acknowledged before it began, not the standby's older state.
      expect(verified.body.head.seq).toBeGreaterThanOrEqual(written!.seq);
      expect(verified.body.head.seq).toBeGreaterThanOrEqual(checkpoint.body.tree_size);
      const proof = await call(
        'GET',
        `/v1/logs/default/proofs/inclusion?seq=${checkpoint.body.tree_size}&tree_size=${checkpoint.body.tree_size}`,
        k.auditor,
      );
      expect(proof.status).toBe(200);
    });

    it('serves from the standby again once it has caught up', async () => {
      const id = await propose();
      await replica.resumeReplay();
      await replica.caughtUp();
      const story = await call('GET', `/v1/proposals/${id}`, k.gateway);
      expect(story).toMatchObject({ status: 200, source: 'standby', body: { proposal: { id } } });
    });
  });

  describe('when the standby is unreachable', () => {
    it('reads from the primary, and logs that once', async () => {
      const id = await propose();
      await replica.stopStandby();
      const story = await call('GET', `/v1/proposals/${id}`, k.gateway);
      expect(story).toMatchObject({ status: 200, source: 'primary', body: { proposal: { id } } });
      const list = await call('GET', '/v1/tools', k.gateway);
      expect(list).toMatchObject({ status: 200, source: 'primary' });
      expect(logger.lines.filter((l) => l.msg === 'standby unavailable: reading the primary')).toHaveLength(
        1,
      );
    }, 30_000);
  });

  describe('when DATABASE_READ_URL is not a standby', () => {
    it('refuses to start', async () => {
      const url = replica.primaryUrl.replace(/\/postgres$/, '/vouch');
      const config = serveConfig(
        { DATABASE_URL: url, DATABASE_READ_URL: url, PORT: '0', VOUCH_ALLOW_OWNER_ROLE: '1' },
        root,
      );
      await expect(
        startServer({ config, logger: createMemoryLogger(), announceAdminKey: () => {} }),
      ).rejects.toThrow(ConfigError);
    });
  });
});

describe('DATABASE_READ_URL', () => {
  it('is refused without DATABASE_URL: the embedded PGlite has no standby', () => {
    expect(() => serveConfig({ DATABASE_READ_URL: 'postgres://127.0.0.1/x' }, '/tmp')).toThrow(ConfigError);
  });
});
