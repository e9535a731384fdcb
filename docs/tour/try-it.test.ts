import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVouchServer, type VouchServer } from '../../test/helpers/server';

const TOUR = fileURLToPath(new URL('./try-it.sh', import.meta.url));

// The README's five-minute tour, run as a newcomer runs it: bash and curl against a real
// `vouch serve` on its default embedded PGlite.
describe('the five-minute tour (docs/tour/try-it.sh)', { timeout: 120_000 }, () => {
  let dir: string;
  let server: VouchServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-tour-'));
    server = await startVouchServer({ storage: { VOUCH_DATA_DIR: join(dir, 'data') }, cwd: dir });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const tour = (run: string) =>
    promisify(execFile)('bash', [TOUR], {
      env: { PATH: process.env.PATH, ADMIN: server.adminKey, VOUCH_URL: server.url, RUN: run },
    });

  it('walks a refund from proposal to a verified outcome and an intact log', async () => {
    const { stdout } = await tour('first');
    expect(stdout).toContain('verdict: require_approval');
    expect(stdout).toContain('outcome before any check: awaiting_verification');
    expect(stdout).toMatch(/^passed$/m);
    expect(stdout).toContain('7. the story: stage executed, outcome verified');
    expect(stdout).toContain('ok: true');
  });

  it('runs again on the same server', async () => {
    const { stdout } = await tour('second');
    expect(stdout).toContain('outcome verified');
  });

  it('stops at the first refused call, with the error', async () => {
    const failed = await promisify(execFile)('bash', [TOUR], {
      env: { PATH: process.env.PATH, ADMIN: 'vch_not-a-key', VOUCH_URL: server.url, RUN: 'bad' },
    }).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('POST /v1/keys failed');
    expect(failed.stderr).toContain('UNAUTHENTICATED');
    expect(failed.stdout).not.toContain('2. the admin registers');
  });
});
