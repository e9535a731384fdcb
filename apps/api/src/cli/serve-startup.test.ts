import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingIo, runVouch } from '../testing/cli-io';
import { runCli } from './main';

// `vouch serve` on a fresh install must not leave half an install behind when it cannot
// start: settings are checked before the data directory is touched, and the first admin key
// is created (and printed) only once the port is bound.

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-serve-startup-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Run `vouch serve`; it stops as soon as it has started (a SIGTERM already pending). */
function serve(env: NodeJS.ProcessEnv) {
  return runVouch(['serve'], { env, cwd: root, stop: Promise.resolve('SIGTERM') });
}

const ANNOUNCED = 'created the first admin API key';

describe('vouch serve start-up', () => {
  describe('when a signal comes as soon as it says it is listening', () => {
    it('was already listening for it: it asked for stop requests before it started', async () => {
      let said = '';
      let askedAfter: string | undefined;
      const dataDir = join(root, 'signals');
      const { io, out } = recordingIo({ env: { VOUCH_DATA_DIR: dataDir, PORT: '0' }, cwd: root });
      const run = runCli(['serve'], {
        ...io,
        out: (text) => {
          said += text;
          io.out(text);
        },
        stopRequested: () => {
          askedAfter = said;
          return Promise.resolve('SIGTERM');
        },
      });
      expect(await run).toBe(0);
      expect(out()).toContain('"msg":"stopped"');
      expect(askedAfter).toBeDefined();
      expect(askedAfter).not.toContain('"msg":"listening"');
    }, 60_000);
  });

  describe('when VOUCH_ADMIN_KEY is too short', () => {
    it('exits 2 naming the setting, before it creates the data directory', async () => {
      const dataDir = join(root, 'short-key');
      const run = await serve({ VOUCH_DATA_DIR: dataDir, PORT: '0', VOUCH_ADMIN_KEY: 'short' });
      expect(run.code).toBe(2);
      expect(run.err).toContain('VOUCH_ADMIN_KEY');
      expect(run.err).not.toContain('INVALID_REQUEST');
      expect(existsSync(dataDir)).toBe(false);
    }, 60_000);
  });

  describe('when the port is in use on a fresh install', () => {
    let busy: Server;
    let port: number;
    beforeAll(async () => {
      busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
      port = (busy.address() as { port: number }).port;
    });
    afterAll(async () => {
      await new Promise((resolve) => busy.close(resolve));
    });

    it('prints no admin key; the next start that listens prints the first one', async () => {
      const dataDir = join(root, 'busy-port');
      const failed = await serve({ VOUCH_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
      expect(failed.code).toBe(2);
      expect(failed.err).toContain('EADDRINUSE');
      expect(failed.err).not.toContain(ANNOUNCED);
      expect(failed.out).not.toContain('bootstrap admin key created');

      const started = await serve({ VOUCH_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' });
      expect(started.err).toContain(ANNOUNCED);
      expect(started.code).toBe(0);
    }, 120_000);
  });
});
