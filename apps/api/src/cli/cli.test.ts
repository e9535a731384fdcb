import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@vouch/ledger';
import { tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../auth/api-key';
import { recordingIo, runVouch } from '../testing/cli-io';
import { runCli } from './main';

let root: string;
let dataDir: string;

function fakeIo(env: NodeJS.ProcessEnv = {}, stop?: Promise<string>) {
  return recordingIo({ env: { VOUCH_DATA_DIR: dataDir, ...env }, cwd: root, ...(stop ? { stop } : {}) });
}

function run(argv: string[], env?: NodeJS.ProcessEnv) {
  return runVouch(argv, { env: { VOUCH_DATA_DIR: dataDir, ...env }, cwd: root });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-cli-'));
  dataDir = join(root, 'data');
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('vouch (CLI)', () => {
  describe('when the arguments are wrong', () => {
    it.each([
      [['frobnicate']],
      [[]],
      [['verify', '--nope']],
      [['verify', '--expect-head', '12:not-a-hash', '--log', 'x']],
      [['verify', '--expect-head', `3:${'a'.repeat(64)}`]],
      [['keys']],
      [['keys', 'create', '--identity', 'alice', '--role', 'approver']],
      [['keys', 'create', '--identity', 'user:alice', '--role', 'root']],
      [['keys', 'create', '--identity', 'user:alice']],
      [['keys', 'revoke']],
      [['serve', '--port']],
      [['restore', 'check', '--checkpoint', 'trusted.note']],
      [['restore', 'accept']],
    ])('exits 2 with a message for %j', async (argv) => {
      const { code, err } = await run(argv);
      expect(code).toBe(2);
      expect(err.length).toBeGreaterThan(10);
    });

    it('restore check --checkpoint without --log says why, and creates no data directory', async () => {
      const { code, err } = await run(['restore', 'check', '--checkpoint', 'trusted.note']);
      expect(code).toBe(2);
      expect(err).toContain('--checkpoint needs --log');
      expect(existsSync(dataDir)).toBe(false);
    });

    it('prints help with exit 0', async () => {
      const { code, out } = await run(['--help']);
      expect(code).toBe(0);
      expect(out).toContain('vouch verify');
    });

    it.each([
      [['keys', '--help'], 'vouch keys log-public'],
      [['verify', '--help'], 'vouch verify --since'],
    ])('prints the usage of %j with exit 0, auditor commands included', async (argv, line) => {
      const { code, out } = await run(argv);
      expect(code).toBe(0);
      expect(out).toContain(line);
    });
  });

  describe('when the database cannot be reached', () => {
    it('exits 2 and names DATABASE_URL', async () => {
      const { code, err } = await run(['verify'], {
        DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/none',
      });
      expect(code).toBe(2);
      expect(err).toContain('DATABASE_URL');
      expect(err).not.toContain('secret');
    });

    it('exits 2 for a data directory that does not exist', async () => {
      const { code, err } = await run(['verify'], { VOUCH_DATA_DIR: join(root, 'missing') });
      expect(code).toBe(2);
      expect(err).toContain('VOUCH_DATA_DIR');
    });
  });

  describe('when a ledger is migrated, written and verified', () => {
    let secret: string;

    it('migrate applies the migrations', async () => {
      const { code, out } = await run(['migrate']);
      expect(code).toBe(0);
      expect(out).toMatch(/migration\(s\) applied/);
    });

    it('keys create prints a key whose hash is the only thing stored', async () => {
      const { code, out, err } = await run([
        'keys',
        'create',
        '--scope',
        'billing:write',
        '--identity',
        'user:alice',
        '--role',
        'approver',
        '--env',
        'staging',
      ]);
      expect(code).toBe(0);
      secret = out.trim();
      expect(secret).toMatch(/^vch_[A-Za-z0-9_-]{43}$/);
      expect(err).toContain('shown this once');
      const listed = await run(['keys', 'list', '--json']);
      expect(listed.out).not.toContain(secret);
      expect(JSON.parse(listed.out).keys[0]).toMatchObject({
        scopes: ['billing:write'],
        identity: 'user:alice',
        roles: ['approver'],
        environments: ['staging'],
      });
    });

    it('verify reports the chain intact with exit 0', async () => {
      const { code, out } = await run(['verify']);
      expect(code).toBe(0);
      expect(out).toMatch(/log system: INTACT — 1 events verified/);
      const json = await run(['verify', '--log', 'system', '--json']);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.out)).toMatchObject({ ok: true, log: 'system', checked: 1, failures: [] });
    });

    it('verify exits 1 and names the seq once an event is edited', async () => {
      const database = await openDatabase({ dataDir });
      try {
        expect(
          (await database.rows<{ key_hash: string }>(sql`select key_hash from api_keys`))[0]?.key_hash,
        ).toBe(hashApiKey(secret));
        await tamper(
          database,
          sql`update audit_events set payload = replace(payload, 'approver', 'admin') where log_id = 'system' and seq = 1`,
        );
      } finally {
        await database.close();
      }
      const { code, out } = await run(['verify', '--log', 'system']);
      expect(code).toBe(1);
      expect(out).toMatch(/BROKEN/);
      expect(out).toMatch(/seq 1 {2}PAYLOAD_HASH_MISMATCH/);
      const json = await run(['verify', '--json']);
      expect(json.code).toBe(1);
      expect(
        JSON.parse(json.out).reports[0].failures.map((f: { seq: number; code: string }) => [f.seq, f.code]),
      ).toContainEqual([1, 'PAYLOAD_HASH_MISMATCH']);
    });

    it('verify --expect-head reports a log that ends before the trusted head', async () => {
      const { code, out } = await run([
        'verify',
        '--log',
        'system',
        '--expect-head',
        `5:${'a'.repeat(64)}`,
        '--json',
      ]);
      expect(code).toBe(1);
      expect(JSON.parse(out).failures.map((f: { code: string }) => f.code)).toContain('TRUNCATED');
    });

    it('verify --expect-head names another event at the trusted seq REWRITTEN, not TRUNCATED', async () => {
      const { code, out } = await run(['verify', '--log', 'system', '--expect-head', `1:${'a'.repeat(64)}`]);
      expect(code).toBe(1);
      expect(out).toMatch(
        /seq 1 {2}REWRITTEN {2}event 1 is not the trusted head: history up to it was rewritten/,
      );
      expect(out).not.toContain('TRUNCATED');
    });
  });

  describe('when another live process holds the PGlite data directory', () => {
    it('exits 2 instead of opening it twice', async () => {
      writeFileSync(`${dataDir}.lock`, String(process.ppid));
      try {
        const { code, err } = await run(['verify']);
        expect(code).toBe(2);
        expect(err).toContain(`pid ${process.ppid}`);
      } finally {
        rmSync(`${dataDir}.lock`, { force: true });
      }
    });

    it('takes over a lock whose process is gone', async () => {
      writeFileSync(`${dataDir}.lock`, '999999999');
      const { code } = await run(['keys', 'list']);
      expect(code).toBe(0);
    });
  });

  describe('vouch serve', () => {
    it('prints the first admin key once, serves, and stops on a signal', async () => {
      const serveDir = join(root, 'serve-data');
      let stop!: (signal: string) => void;
      const stopped = new Promise<string>((resolve) => {
        stop = resolve;
      });
      const first = fakeIo({ VOUCH_DATA_DIR: serveDir, PORT: '0' }, stopped);
      const exit = runCli(['serve'], first.io);
      const url = (await first.waitForOut(/"url":"([^"]+)"/))[1];
      const key = /\n {2}(vch_\S+)\n/.exec(first.err())?.[1];
      expect(key).toBeDefined();
      expect(first.out()).not.toContain(key);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/v1/keys`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(
        200,
      );
      stop('SIGTERM');
      expect(await exit).toBe(0);
      expect(first.out()).toContain('"msg":"stopped"');

      let stopAgain!: (signal: string) => void;
      const second = fakeIo(
        { VOUCH_DATA_DIR: serveDir, PORT: '0' },
        new Promise((resolve) => (stopAgain = resolve)),
      );
      const again = runCli(['serve'], second.io);
      await second.waitForOut(/"msg":"listening"/);
      expect(second.err()).not.toContain('vch_');
      stopAgain('SIGINT');
      expect(await again).toBe(0);
    });

    it('refuses a VOUCH_ADMIN_KEY that is too short, with exit 2', async () => {
      const { code, err } = await run(['serve'], {
        VOUCH_DATA_DIR: join(root, 'short-key'),
        PORT: '0',
        VOUCH_ADMIN_KEY: 'short',
      });
      expect(code).toBe(2);
      expect(err).toContain('VOUCH_ADMIN_KEY');
    });
  });
});
