import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { startVouchServer, type VouchServer } from './helpers/server';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// Third-party plugins that go after the server itself (packages/verifiers): its secrets, its
// process, its memory. Configured in vouch.config.json and run by a real `vouch serve`.
const logKeys = generateNoteKeys('vouch.test/plugins');
const plugins = resolve(import.meta.dirname, '../packages/verifiers/src/plugin/fixtures/hostile-plugins.mjs');

/** The server's resident memory in MB, from /proc. */
function residentMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1]) / 1024;
}

describe.each(serverBackends())(
  'third-party plugins run outside `vouch serve` on $name',
  (backend: ServerBackend) => {
    let dir: string;
    let env: Awaited<ReturnType<ServerBackend['setup']>>;
    let server: VouchServer;
    let gateway: string;
    let configFile: string;
    let n = 0;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `vouch-e2e-plugins-${backend.name}-`));
      env = await backend.setup(dir);
      configFile = join(dir, 'vouch.config.json');
      const entry = (exportName: string, handles: string[], extra: Json = {}) => ({
        use: plugins,
        export: exportName,
        handles,
        options: { url: 'http://127.0.0.1:9' },
        ...extra,
      });
      const dataDir = 'VOUCH_DATA_DIR' in env.storage ? env.storage.VOUCH_DATA_DIR : join(dir, 'data');
      const files = [configFile, join(dataDir, 'vouch-log-signing.key')];
      writeFileSync(
        configFile,
        JSON.stringify({
          verifiers: [
            entry('secrets', ['secrets'], { options: { url: 'http://127.0.0.1:9', files } }),
            entry('signals', ['signals']),
            entry('bigBuffer', ['big'], { memoryMb: 64 }),
            entry('crasher', ['abort', 'after']),
          ],
        }),
      );
      // On Postgres the master signing key comes from the environment; PGlite keeps it in a file
      // of its data directory. Either way it is a secret a plugin must not reach.
      const keyEnv: Record<string, string> =
        'DATABASE_URL' in env.storage ? { VOUCH_LOG_SIGNING_KEY: logKeys.signerKey } : {};
      server = await startVouchServer({ storage: env.storage, cwd: dir, env: keyEnv });
      const admin = { key: server.adminKey };
      const issued = await server.call('POST', '/v1/keys', {
        ...admin,
        body: { identity: 'agent:gw', roles: ['gateway'] },
      });
      gateway = ((await issued.json()) as Json).secret;
      const tool = await server.call('POST', '/v1/tools', {
        ...admin,
        body: { server_id: 'tickets-mcp', tool_name: 'close', side_effect: 'compensatable' },
      });
      expect(tool.status).toBe(201);
    });
    afterAll(async () => {
      await server?.stop();
      await env?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Propose, execute and verify one call with `postcondition`; the verification's answer. */
    async function verified(postcondition: string): Promise<Json> {
      const proposed = (await (
        await server.call('POST', '/v1/proposals', {
          key: gateway,
          body: {
            idempotency_key: `plugins-${++n}`,
            action: 'tickets.close',
            server_id: 'tickets-mcp',
            tool_name: 'close',
            target: { kind: 'ticket', id: `t_${n}`, env: 'test' },
            arguments: {},
            side_effect: 'compensatable',
            postconditions: [{ name: postcondition }],
          },
        })
      ).json()) as Json;
      expect(proposed.decision?.verdict).toBe('allow');
      const authorized = await server.call('POST', `/v1/proposals/${proposed.proposal.id}/authorize`, {
        key: gateway,
        body: {},
      });
      expect(authorized.status).toBe(200);
      const observed = (await (
        await server.call('POST', '/v1/observations', {
          key: gateway,
          body: { proposal_id: proposed.proposal.id, outcome: 'succeeded', result: {} },
        })
      ).json()) as Json;
      const answer = await server.call('POST', `/v1/observations/${observed.observation.id}/verify`, {
        key: gateway,
      });
      expect(answer.status).toBe(201);
      return (await answer.json()) as Json;
    }

    function alive(): boolean {
      return server.child.exitCode === null && server.child.signalCode === null;
    }

    it("puts none of the server's secrets in the ledger: environment, /proc, configuration, key file", async () => {
      const body = await verified('secrets');
      expect(body.checks[0]).toMatchObject({ status: 'pass' });
      const published = JSON.stringify(body.checks[0].observed);
      expect(published).not.toContain(server.adminKey);
      expect(published).not.toContain(logKeys.signerKey.split('+').at(-1));
      if ('DATABASE_URL' in env.storage) expect(published).not.toContain(env.storage.DATABASE_URL);
      expect(published).not.toMatch(/VOUCH_|DATABASE_URL|PRIVATE\+KEY/);
      expect(body.checks[0].observed).toMatchObject({
        env: {},
        selfEnviron: 'denied: ERR_ACCESS_DENIED',
        parentEnviron: 'denied: ERR_ACCESS_DENIED',
        parentCmdline: 'denied: ERR_ACCESS_DENIED',
      });
      for (const value of Object.values(body.checks[0].observed.files as Record<string, string>)) {
        expect(value).toBe('denied: ERR_ACCESS_DENIED');
      }
    });

    it('does not let a plugin signal the server: SIGTERM by every route is refused and the server answers', async () => {
      const body = await verified('signals');
      expect(Object.values(body.checks[0].observed)).toEqual(Array(6).fill('PLUGIN_PROCESS_DENIED'));
      await new Promise((r) => setTimeout(r, 200));
      expect(alive()).toBe(true);
      expect((await verified('after')).checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
    });

    it("records a plugin's 2 GB Buffer as an error check; the server stays up and does not grow", async () => {
      const before = residentMb(server.child.pid!);
      const body = await verified('big');
      expect(body.status).toBe('inconclusive');
      expect(body.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
      expect(residentMb(server.child.pid!) - before).toBeLessThan(256);
      expect(alive()).toBe(true);
    });

    it('replaces a plugin that aborts its process; the next verification works', async () => {
      const body = await verified('abort');
      expect(body.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
      expect(body.checks[0].message).toMatch(/SIGABRT/);
      expect(alive()).toBe(true);
      expect((await verified('after')).checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
    });

    it('the files the plugin tried hold real secrets of this server (guards the secrets test against an empty target)', () => {
      expect(readFileSync(configFile, 'utf8')).toContain('secrets');
      if ('VOUCH_DATA_DIR' in env.storage) {
        // PGlite keeps the master signing key in its data directory.
        expect(existsSync(join(env.storage.VOUCH_DATA_DIR, 'vouch-log-signing.key'))).toBe(true);
      }
    });
  },
);
