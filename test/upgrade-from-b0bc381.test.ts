import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverBackends } from './helpers/backends';
import { runVouchWithEnv, type StorageEnv, startVouchServer, type VouchServer } from './helpers/server';

// An upgrade from the previous release, b0bc381 (migrations 0000 to 0004): its database,
// dumped once (test/fixtures/release-b0bc381/README.md), restored into a fresh database, then
// the steps docs/operations.md ("Upgrading") gives an operator, with the current `vouch`.
const fixture = join(import.meta.dirname, 'fixtures', 'release-b0bc381');
// SQL only: pg_dump's psql meta-commands (`\restrict KEY`, `\unrestrict KEY`) are for psql.
const dump = readFileSync(join(fixture, 'postgres.sql'), 'utf8').replace(/^\\.*$/gm, '');
const release = JSON.parse(readFileSync(join(fixture, 'release.json'), 'utf8')) as {
  signer_key: string;
  verifier_key: string;
  keys: Record<string, { id: string; secret: string; roles: string[]; revoked?: boolean }>;
  story: { proposal: string };
};
const keys = Object.values(release.keys);
const oldKeyIds = keys.map((key) => key.id).sort();

/** Run the dump's statements through the driver (no psql needed). */
async function restore(database: Database): Promise<void> {
  const { driver } = database;
  if (driver.kind === 'pglite') await driver.client.exec(dump);
  else await driver.client.unsafe(dump).simple();
}

// biome-ignore lint/suspicious/noExplicitAny: reports are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;
const unprovenIds = (failures: Json[]) =>
  failures
    .filter((failure) => failure.code === 'KEY_UNPROVEN')
    .map((failure) => failure.id as string)
    .sort();

describe.each(serverBackends())('an upgrade from release b0bc381 on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<typeof backend.setup>>;
  let processEnv: StorageEnv & Record<string, string>;
  let server: VouchServer | undefined;
  const vouch = (args: string[]) => runVouchWithEnv(args, processEnv, dir);
  const auditor = release.keys.auditor!.secret;

  const start = async () => {
    server = await startVouchServer({
      storage: env.storage,
      cwd: dir,
      adminKey: release.keys.admin!.secret,
      env: { VOUCH_LOG_SIGNING_KEY: release.signer_key },
    });
    return server;
  };
  const stop = async () => {
    expect(await server?.stop()).toBe(0);
    server = undefined;
  };
  /** The status of GET /v1/keys with each old key: 401 is a key that no longer authenticates. */
  const statuses = async (running: VouchServer) => {
    const seen: Record<string, number> = {};
    for (const key of keys)
      seen[key.id] = (await running.call('GET', '/v1/keys', { key: key.secret })).status;
    return seen;
  };
  /** What every check says about the system log (the database, the API, /readyz, a bundle), and the keys. */
  const everyCheck = async () => {
    const database = await vouch([
      'verify',
      '--log',
      'system',
      '--json',
      '--public-key',
      release.verifier_key,
    ]);
    const bundleFile = join(dir, `system-${Date.now()}.jsonl`);
    const exported = await vouch(['export', '--log', 'system']);
    expect(exported.code).toBe(0);
    writeFileSync(bundleFile, exported.stdout);
    const bundle = await vouch([
      'verify',
      '--bundle',
      bundleFile,
      '--json',
      '--public-key',
      release.verifier_key,
    ]);
    const running = await start();
    const api = (await (
      await running.call('GET', '/v1/logs/system/verify', { key: auditor })
    ).json()) as Json;
    const readyz = await running.call('GET', '/readyz');
    const story = await running.call('GET', `/v1/proposals/${release.story.proposal}`, { key: auditor });
    const keyStatuses = await statuses(running);
    await stop();
    return {
      database: { code: database.code, report: JSON.parse(database.stdout) as Json },
      bundle: { code: bundle.code, report: JSON.parse(bundle.stdout) as Json },
      api,
      readyz: { status: readyz.status, body: (await readyz.json()) as Json },
      story: story.status,
      keyStatuses,
    };
  };
  /** What each old key must get from GET /v1/keys: admin 200, other roles 403, revoked 401. */
  const expectedStatuses = Object.fromEntries(
    keys.map((key) => [key.id, key.revoked ? 401 : key.roles.includes('admin') ? 200 : 403]),
  );
  let before: Awaited<ReturnType<typeof everyCheck>>;
  let after: Awaited<ReturnType<typeof everyCheck>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-upgrade-${backend.name}-`));
    env = await backend.setup(dir);
    const database = await env.open();
    try {
      await restore(database);
    } finally {
      await database.close();
    }
    processEnv = { ...env.storage, VOUCH_LOG_SIGNING_KEY: release.signer_key };
  });
  afterAll(async () => {
    await server?.stop();
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('migrates, and says which step is next', async () => {
    const migrated = await vouch(['migrate']);
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/migration\(s\) applied/);
    expect(migrated.stderr).toContain(`${keys.length} API key(s) were issued before`);
    expect(migrated.stderr).toContain('vouch keys adopt');
  });

  it('before the keys are adopted, every check reports the same keys KEY_UNPROVEN, and only that', async () => {
    before = await everyCheck();
    expect(before.database.code).toBe(1);
    expect(before.database.report.failures.map((f: Json) => f.code)).toEqual(keys.map(() => 'KEY_UNPROVEN'));
    expect(unprovenIds(before.database.report.failures)).toEqual(oldKeyIds);
    expect(before.api).toMatchObject({ ok: false });
    expect(unprovenIds(before.api.failures)).toEqual(oldKeyIds);
    expect(before.bundle.code).toBe(1);
    expect(before.bundle.report.failures.map((f: Json) => f.code)).toEqual(keys.map(() => 'KEY_UNPROVEN'));
    expect(unprovenIds(before.bundle.report.failures)).toEqual(oldKeyIds);
    // Ready (an unproven key is no damage), and saying so.
    expect(before.readyz).toMatchObject({
      status: 200,
      body: { status: 'ready', keys: { unproven: keys.length } },
    });
  });

  it('the old keys authenticate and the revoked one does not', () => {
    expect(before.keyStatuses).toEqual(expectedStatuses);
    expect(before.story).toBe(200);
  });

  it('vouch keys adopt binds every old key, the revoked one included, once', async () => {
    const adopted = await vouch(['keys', 'adopt', '--json']);
    expect({ code: adopted.code, stderr: adopted.stderr }).toEqual({ code: 0, stderr: '' });
    const { adopted: ids, refused } = JSON.parse(adopted.stdout) as { adopted: string[]; refused: string[] };
    expect({ adopted: [...ids].sort(), refused }).toEqual({ adopted: oldKeyIds, refused: [] });
    const again = await vouch(['keys', 'adopt', '--json']);
    expect(JSON.parse(again.stdout)).toEqual({ adopted: [], refused: [] });
  });

  it('after the adoption every check is green', async () => {
    const all = await vouch(['verify', '--public-key', release.verifier_key]);
    expect({ code: all.code, stderr: all.stderr }).toEqual({ code: 0, stderr: '' });
    expect(all.stdout).toContain('all 2 logs intact');
    expect(all.stdout).not.toContain('signatures NOT checked');
    expect(all.stdout).not.toContain('record writers NOT checked');
    // The old release's decisions were written before any policy was pinned: said, not hidden.
    expect(all.stdout).toContain('decision sources NOT checked against a pinned policy');
    after = await everyCheck();
    expect(after.database).toMatchObject({ code: 0, report: { ok: true, failures: [] } });
    expect(after.api).toMatchObject({ ok: true, failures: [] });
    expect(after.bundle).toMatchObject({ code: 0, report: { ok: true, failures: [] } });
    expect(after.readyz).toMatchObject({ status: 200, body: { status: 'ready', keys: { unproven: 0 } } });
  });

  it('the old keys still authenticate, and the revoked one still does not', () => {
    expect(after.keyStatuses).toEqual(expectedStatuses);
    expect(after.story).toBe(200);
  });
});
