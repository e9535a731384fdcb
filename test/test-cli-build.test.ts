import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_CACHE } from './helpers/cli-build';
import { runVouchWithEnv, VOUCH_BIN, vouchCli } from './helpers/server';

// The end-to-end tests run the `vouch` CLI bundled once by test/global-setup.ts rather than
// the launcher `npx --no-install vouch` runs (which compiles the sources with tsx at every start). The
// bundle must be that same CLI: it is used, and it answers as the launcher does.
describe('the CLI build the end-to-end tests run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vouch-test-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is what the helpers spawn under this configuration', () => {
    expect(vouchCli()).not.toBe(VOUCH_BIN);
    expect(vouchCli().startsWith(CLI_CACHE)).toBe(true);
  });

  it('prints the same help and config schema as the launcher', async () => {
    for (const args of [['--help'], ['config', 'schema']]) {
      const [built, launcher] = await Promise.all([
        runVouchWithEnv(args, {}, dir),
        runVouchWithEnv(args, {}, dir, VOUCH_BIN),
      ]);
      expect(built.stderr).toBe(launcher.stderr);
      expect(built.code).toBe(0);
      expect(launcher.code).toBe(0);
      expect(built.stdout.length).toBeGreaterThan(100);
      expect(built.stdout).toBe(launcher.stdout);
    }
  });

  it('migrates a PGlite data directory, reading the migrations beside the ledger sources', async () => {
    const env = { VOUCH_DATA_DIR: join(dir, 'data') };
    const migrated = await runVouchWithEnv(['migrate'], env, dir);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    const verified = await runVouchWithEnv(['verify'], env, dir);
    expect(verified.code, verified.stderr).toBe(0);
  });
});
