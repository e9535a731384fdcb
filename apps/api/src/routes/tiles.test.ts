import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { serve } from '@hono/node-server';
import { generateCosignerKeys, generateNoteKeys, parseCosignerSignerKey, parseSignerKey } from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  OPERATOR_ACTOR,
  signLogCheckpoint,
  storeCosignatures,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { parseTilePath } from './tiles';

const run = promisify(execFile);
const PREFIX = 'audit.example/vouch';
const logKey = generateNoteKeys(PREFIX);
const signing = {
  origin: (log: string) => logOrigin(PREFIX, log),
  signers: [parseSignerKey(logKey.signerKey)],
};
const witness = generateCosignerKeys('witness.example/w1');

describe('parseTilePath', () => {
  it.each([
    ['0/000', { level: 0, index: 0, width: 256 }],
    ['1/x001/234.p/5', { level: 1, index: 1234, width: 5 }],
    ['entries/x001/x234/067.p/255', { level: 'entries', index: 1234067, width: 255 }],
  ])('reads %s', (path, tile) => {
    expect(parseTilePath(path)).toEqual(tile);
  });

  it.each(['0/0', '0/000.p/256', '0/000.p/0', '0/x000/001', '01/000', '0/000/', 'data/000', '0/1234'])(
    'refuses %s',
    (path) => {
      expect(parseTilePath(path)).toBeUndefined();
    },
  );
});

describe('the tlog-tiles endpoints', () => {
  let root: string;
  let database: Database;
  let ledger: Ledger;
  let app: VouchApp;
  let publicApp: VouchApp;
  let auditor: string;
  let gateway: string;
  let oldCheckpoint: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'vouch-tiles-'));
    database = await testBackends()[0]!.open();
    ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    const store = createKeyStore(ledger);
    // The witness is configured: only cosignatures that verify with a configured key are served.
    const witnessKeys = [witness.verifierKey];
    app = createApp({ ledger, keys: store, witnessKeys });
    publicApp = createApp({ ledger, keys: store, tiles: 'public', witnessKeys });
    auditor = (await store.create({ identity: 'user:t', roles: ['auditor'], createdBy: OPERATOR_ACTOR }))
      .secret;
    gateway = (await store.create({ identity: 'user:g', roles: ['gateway'], createdBy: OPERATOR_ACTOR }))
      .secret;
    // 600 events: two full level-0 tiles and a partial one, and a partial level-1 tile of 2.
    const appendRange = async (from: number, to: number) => {
      const pending = [];
      for (let i = from; i < to; i++) {
        pending.push(
          ledger.append({ log: 'orders', kind: 'note', entity: `e${i}`, actor: 'agent:a', payload: { i } }),
        );
      }
      await Promise.all(pending);
    };
    await appendRange(0, 300);
    oldCheckpoint = (await signLogCheckpoint(database, { log: 'orders', ...signing })).note;
    await appendRange(300, 600);
    const latest = await signLogCheckpoint(database, { log: 'orders', ...signing });
    const line = parseCosignerSignerKey(witness.signerKey).cosign(latest.note, 1_764_547_200);
    await storeCosignatures(database, [
      {
        log: 'orders',
        treeSize: 600,
        witness: 'witness.example/w1',
        keyId: witness.verifierKey.split('+')[1]!,
        line,
        createdAt: new Date().toISOString(),
      },
    ]);
  }, 120_000);
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const fetchTile = (target: VouchApp, path: string, key?: string) =>
    target.request(path, key ? { headers: { authorization: `Bearer ${key}` } } : {});

  describe('when the tiles are for auditors (the default)', () => {
    it('answers 401 without a key, 403 for a gateway key, and the tile for an auditor key', async () => {
      expect((await fetchTile(app, '/tlog/orders/tile/0/000')).status).toBe(401);
      expect((await fetchTile(app, '/tlog/orders/tile/0/000', gateway)).status).toBe(403);
      const tile = await fetchTile(app, '/tlog/orders/tile/0/000', auditor);
      expect(tile.status).toBe(200);
      expect((await tile.arrayBuffer()).byteLength).toBe(256 * 32);
    });
  });

  describe('when the tiles are public', () => {
    it('serves the checkpoint with its cosignature, tiles and entry bundles without a key', async () => {
      const checkpoint = await (await fetchTile(publicApp, '/tlog/orders/checkpoint')).text();
      expect(checkpoint).toMatch(/^audit\.example\/vouch\/orders\n600\n/);
      expect(checkpoint).toContain('\u2014 witness.example/w1 ');
      const partial = await fetchTile(publicApp, '/tlog/orders/tile/1/000.p/2');
      expect((await partial.arrayBuffer()).byteLength).toBe(64);
      const entries = await fetchTile(publicApp, '/tlog/orders/tile/entries/002.p/88');
      expect((await entries.arrayBuffer()).byteLength).toBe(88 * 34);
    });

    it('answers 404 for a tile past the latest checkpoint and for a path that is no tile', async () => {
      expect((await fetchTile(publicApp, '/tlog/orders/tile/0/002')).status).toBe(404);
      expect((await fetchTile(publicApp, '/tlog/orders/tile/0/002.p/89')).status).toBe(404);
      expect((await fetchTile(publicApp, '/tlog/orders/tile/8/0/000')).status).toBe(404);
      expect((await fetchTile(publicApp, '/tlog/nope/checkpoint')).status).toBe(404);
    });
  });

  // Go's golang.org/x/mod (Debian's golang-golang-x-mod-dev, Go 1.19), which .ci/run installs.
  const gopath = '/usr/share/gocode';
  const hasGo = existsSync(join(gopath, 'src/golang.org/x/mod/sumdb/tlog')) && existsSync('/usr/bin/go');
  // Outside CI a machine without Go skips this; in CI (.ci/run installs Go) a missing Go fails.
  describe.skipIf(!hasGo && !process.env.CI)('when a Go tlog client (golang.org/x/mod) reads the log', () => {
    let url: string;
    let server: ReturnType<typeof serve>;
    let binary: string;

    beforeAll(async () => {
      server = serve({ fetch: publicApp.fetch, port: 0, hostname: '127.0.0.1' });
      await new Promise((done) => server.once('listening', done));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      binary = join(root, 'go-tlog-client');
      const env = {
        ...process.env,
        GO111MODULE: 'off',
        GOPATH: gopath,
        GOCACHE: join(root, 'gocache'),
        GOFLAGS: '',
      };
      await run('go', ['build', '-o', binary, '.'], {
        cwd: resolve(__dirname, '../../../../test/go-tlog-client'),
        env,
      });
      writeFileSync(join(root, 'old.checkpoint'), oldCheckpoint);
    }, 300_000);
    afterAll(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

    const client = (args: string[]) =>
      run(binary, ['-url', url, '-log', 'orders', ...args]).then(
        (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({
          code: e.code,
          out: e.stdout,
          err: e.stderr,
        }),
      );

    it('verifies the checkpoint, the cosignature, every tile, inclusion of every entry and consistency', async () => {
      const result = await client([
        '-vkey',
        logKey.verifierKey,
        '-witness',
        witness.verifierKey,
        '-threshold',
        '1',
        '-old',
        join(root, 'old.checkpoint'),
      ]);
      expect(result.err).toBe('');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toMatchObject({
        size: 600,
        entries: 600,
        cosignatures: 1,
        consistency: 1,
      });
    });

    it('fails under another log key, and below a threshold the cosignatures do not meet', async () => {
      const other = await client(['-vkey', generateNoteKeys(PREFIX).verifierKey]);
      expect(other.code).toBe(1);
      const second = generateCosignerKeys('witness.example/w2');
      const short = await client([
        '-vkey',
        logKey.verifierKey,
        '-witness',
        witness.verifierKey,
        '-witness',
        second.verifierKey,
        '-threshold',
        '2',
      ]);
      expect(short.code).toBe(1);
      expect(short.err).toContain('1 valid cosignatures, threshold 2');
    });
  });
});
