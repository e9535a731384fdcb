import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  root = mkdtempSync(join(tmpdir(), 'vouch-server-'));
  const config = serveConfig(
    { VOUCH_DATA_DIR: join(root, 'data'), PORT: '0', VOUCH_ADMIN_KEY: adminKey },
    root,
  );
  server = await startServer({
    config,
    logger,
    announceAdminKey: () => expect.unreachable('key was supplied'),
  });
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

describe('startServer', () => {
  describe('when it starts on a database that enrols no signing key yet', () => {
    it("enrols the server's own key, derived from the log signing key, for vouch:server", async () => {
      const listed = await fetch(`${server.url}/v1/signing-keys`, {
        headers: { authorization: `Bearer ${adminKey}` },
      });
      const { keys } = (await listed.json()) as { keys: Array<{ identity: string; key_id: string }> };
      expect(keys.map((k) => k.identity)).toEqual(['vouch:server']);
      const said = logger.lines.find((l) => l.msg === 'the server signs its own records');
      expect(said).toMatchObject({ key_id: keys[0]!.key_id, enrolled: 'enrolled' });
    });
  });

  describe('when it is asked to stop with a request in flight', () => {
    it('lets that request finish, then stops and closes the database', async () => {
      const { port } = new URL(server.url);
      const body = JSON.stringify({ identity: 'user:late', roles: ['auditor'] });
      const half = Math.floor(body.length / 2);
      // A request whose body is still arriving when shutdown begins.
      const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/keys',
            method: 'POST',
            headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (c: string) => {
              text += c;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        // Registered after the app's own listener: by the time it runs, the request is in flight.
        server.httpServer.once('request', () => {
          void server.close();
          req.end(body.slice(half));
        });
        req.write(body.slice(0, half));
      });
      const result = await response;
      expect(result.status).toBe(201);
      await server.close();
      const messages = logger.lines.map((l) => l.msg);
      expect(messages.indexOf('shutting down')).toBeGreaterThanOrEqual(0);
      expect(messages.at(-1)).toBe('stopped');
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    });
  });
});
