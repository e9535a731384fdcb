import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverBackends } from './helpers/backends';
import { runVouchWithEnv, type StorageEnv, startVouchServer, type VouchServer } from './helpers/server';

// The red team's finding (#33): restoring an older backup was invisible. A key revoked after
// the backup authenticated again, /readyz said ok, and the server signed checkpoints at sizes
// it had already signed with other roots. Replayed with the real `vouch` binary: the server
// keeps its last signed checkpoint outside the database, and a restore is now an alarm.

describe.each(serverBackends())('restoring an older backup, on $name', (backend) => {
  let dir: string;
  let live: StorageEnv;
  let drop: () => Promise<void>;
  let env: Record<string, string>;
  const adminKey = `vch_${'r'.repeat(43)}`;
  const dropBackup: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-restore-'));
    const setup = await backend.setup(dir);
    live = setup.storage;
    drop = setup.drop;
    env = { VOUCH_CHECKPOINT_INTERVAL_MS: '0' };
    if ('DATABASE_URL' in live) {
      // Postgres: a key from the environment, and the state directory set explicitly.
      Object.assign(env, {
        VOUCH_LOG_SIGNING_KEY: generateNoteKeys('vouch.test/restore').signerKey,
        VOUCH_CHECKPOINT_STATE_DIR: join(dir, 'state'),
      });
    }
  });
  afterAll(async () => {
    for (const dropOne of dropBackup) await dropOne().catch(() => {});
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (storage: StorageEnv) => startVouchServer({ storage, cwd: dir, adminKey, env });
  const vouch = (args: string[], storage: StorageEnv) => {
    const owner = 'DATABASE_URL' in storage ? { VOUCH_ALLOW_OWNER_ROLE: '1' } : {};
    return runVouchWithEnv(args, { ...storage, ...env, ...owner }, dir);
  };
  const issue = async (server: VouchServer, identity: string, roles: string[]) => {
    const created = await server.call('POST', '/v1/keys', { key: adminKey, body: { identity, roles } });
    expect(created.status).toBe(201);
    return (await created.json()) as { secret: string; key: { id: string } };
  };
  const signedSize = async (server: VouchServer, auditor: string) => {
    const answer = await server.call('GET', '/v1/logs/system/checkpoint', { key: auditor });
    return ((await answer.json()) as { tree_size: number }).tree_size;
  };

  /** A copy of the database as it is now (the server stopped): the backup. */
  async function backUp(): Promise<StorageEnv> {
    if ('VOUCH_DATA_DIR' in live) {
      const copy = join(dir, 'backup');
      cpSync(live.VOUCH_DATA_DIR, copy, { recursive: true });
      return { VOUCH_DATA_DIR: copy };
    }
    const url = new URL(live.DATABASE_URL);
    const name = `${url.pathname.slice(1)}_backup`;
    const admin = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create database "${name}" template "${url.pathname.slice(1)}"`);
    } finally {
      await admin.end({ timeout: 5 });
    }
    dropBackup.push(async () => {
      const dropper = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
      await dropper.unsafe(`drop database if exists "${name}" with (force)`);
      await dropper.end({ timeout: 5 });
    });
    url.pathname = `/${name}`;
    return { DATABASE_URL: url.toString() };
  }

  /** Restore the backup where the server will run: over the data directory, or as a new database. */
  function restore(backup: StorageEnv): StorageEnv {
    if ('VOUCH_DATA_DIR' in live && 'VOUCH_DATA_DIR' in backup) {
      rmSync(live.VOUCH_DATA_DIR, { recursive: true, force: true });
      cpSync(backup.VOUCH_DATA_DIR, live.VOUCH_DATA_DIR, { recursive: true });
      return live;
    }
    return backup;
  }

  it('raises ROLLBACK_DETECTED, signs nothing, and signs again only after `vouch restore accept`', async () => {
    // Before the backup: an auditor, and a gateway key that will be revoked after it.
    let server = await start(live);
    const auditor = (await issue(server, 'user:audrey', ['auditor'])).secret;
    const doomed = await issue(server, 'agent:doomed', ['gateway']);
    expect(await server.stop()).toBe(0);
    const backup = await backUp();

    // After the backup: the key is revoked, and that is signed.
    server = await start(live);
    expect((await server.call('POST', `/v1/keys/${doomed.key.id}/revoke`, { key: adminKey })).status).toBe(
      200,
    );
    expect((await server.call('GET', '/v1/me', { key: doomed.secret })).status).toBe(401);
    expect(await server.stop()).toBe(0);
    expect((await vouch(['restore', 'check'], live)).code).toBe(0);

    const restored = restore(backup);
    const check = await vouch(['restore', 'check'], restored);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/log system: ROLLBACK_DETECTED/);
    expect(check.stdout).toMatch(/vouch restore accept/);
    // `vouch verify` alone cannot tell: the restored database agrees with itself.
    expect((await vouch(['verify'], restored)).code).toBe(0);

    server = await start(restored);
    try {
      const ready = await server.call('GET', '/readyz');
      expect(ready.status).toBe(503);
      const report = (await ready.json()) as { code: string; integrity: { alarms: Array<{ code: string }> } };
      expect(report.code).toBe('INTEGRITY_ALARM');
      expect(report.integrity.alarms.map((a) => a.code)).toEqual(['ROLLBACK_DETECTED']);
      expect(server.logs).toContainEqual(
        expect.objectContaining({
          msg: 'integrity alarm',
          alarm: 'ROLLBACK_DETECTED',
          log: 'system',
          reason: expect.stringMatching(/older backup.*vouch restore accept/),
        }),
      );
      // The revoked key authenticates again: why the runbook says to revoke it again.
      expect((await server.call('GET', '/v1/me', { key: doomed.secret })).status).toBe(200);
      // Written on the restored database: never signed (a second root at a signed size).
      const before = await signedSize(server, auditor);
      await issue(server, 'agent:after-restore', ['gateway']);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await signedSize(server, auditor)).toBe(before);
    } finally {
      expect(await server.stop()).toBe(0);
    }

    const accepted = await vouch(
      ['restore', 'accept', '--reason', 'restored the backup on purpose'],
      restored,
    );
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toMatch(/log system: restore accepted/);
    expect((await vouch(['restore', 'check'], restored)).code).toBe(0);
    server = await start(restored);
    try {
      expect((await server.call('GET', '/readyz')).status).toBe(200);
      expect((await server.call('POST', `/v1/keys/${doomed.key.id}/revoke`, { key: adminKey })).status).toBe(
        200,
      );
      expect((await server.call('GET', '/v1/me', { key: doomed.secret })).status).toBe(401);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect((await vouch(['restore', 'check'], restored)).code).toBe(0);
  });
});
