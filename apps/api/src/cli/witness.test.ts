import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateCosignerKeys,
  generateNoteKeys,
  parseSignerKey,
  signCheckpoint,
  verifyCosignatures,
} from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  OPERATOR_ACTOR,
  signLogCheckpoint,
} from '@vouch/ledger';
import { rewriteEvent, testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { recordingIo } from '../testing/cli-io';
import { verifySinceCommand } from './verify-since';
import { witnessCommand } from './witness';

// `vouch witness follow` against the API: it checks the served events like `verify --since`,
// cosigns what is consistent, hands the cosignature in, and the server serves it; a client
// then requires it with `verify --witness --threshold`.

const PREFIX = 'audit.example/vouch';
const logKey = generateNoteKeys(PREFIX);
const signing = {
  origin: (log: string) => logOrigin(PREFIX, log),
  signers: [parseSignerKey(logKey.signerKey)],
};
const w1 = generateCosignerKeys('witness.example/w1');
const w2 = generateCosignerKeys('witness.example/w2');

let root: string;
let database: Database;
let ledger: Ledger;
let app: VouchApp;
let auditor: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'vouch-witness-'));
  database = await testBackends()[0]!.open();
  ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
  const store = createKeyStore(ledger);
  app = createApp({ ledger, keys: store, witnessKeys: [w1.verifierKey, w2.verifierKey] });
  auditor = (await store.create({ identity: 'user:wanda', roles: ['auditor'], createdBy: OPERATOR_ACTOR }))
    .secret;
});
afterAll(async () => {
  await ledger?.close();
  await database?.close();
  rmSync(root, { recursive: true, force: true });
});

const fetchApp = (input: string, init: RequestInit) => Promise.resolve(app.request(String(input), init));

async function append(log: string, n: number) {
  for (let i = 0; i < n; i++) {
    await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'agent:a', payload: { i } });
  }
  await signLogCheckpoint(database, { log, ...signing });
}

async function follow(log: string, witnessKey: string, state = join(root, `state-${log}`)) {
  const f = recordingIo({
    env: { VOUCH_API_KEY: auditor, VOUCH_WITNESS_SIGNING_KEY: witnessKey },
    cwd: root,
  });
  const argv = ['follow', '--url', 'http://vouch.test', '--log', log, '--public-key', logKey.verifierKey];
  const code = await witnessCommand.run([...argv, '--state', state, '--once', '--json'], {
    ...f.io,
    fetch: fetchApp,
  });
  return { code, report: f.out() ? JSON.parse(f.out()) : null, err: f.err(), state };
}

async function servedNote(log: string): Promise<string> {
  const response = await app.request(`/v1/logs/${log}/checkpoint`, {
    headers: { authorization: `Bearer ${auditor}`, accept: 'text/plain' },
  });
  return response.text();
}

describe('vouch witness follow', () => {
  describe('when the log only grows', () => {
    it('cosigns each new checkpoint once and hands it in, and the server serves it', async () => {
      await append('orders', 3);
      const first = await follow('orders', w1.signerKey);
      expect(first.code).toBe(0);
      expect(first.report).toMatchObject({ status: 'CONSISTENT', delivered: true, latest: { tree_size: 3 } });
      expect(
        verifyCosignatures(await servedNote('orders'), { witnesses: [w1.verifierKey], threshold: 1 }).ok,
      ).toBe(true);

      // Same checkpoint: the same cosignature, not a second one.
      const again = await follow('orders', w1.signerKey);
      expect(again.report.cosignature).toBe(first.report.cosignature);

      await append('orders', 2);
      const grown = await follow('orders', w1.signerKey);
      expect(grown.report).toMatchObject({ status: 'CONSISTENT', delivered: true, latest: { tree_size: 5 } });
      expect(readFileSync(join(grown.state, 'orders.checkpoint'), 'utf8')).toContain(
        grown.report.cosignature,
      );
    });
  });

  describe('when a client requires the cosignature (verify --since --witness --threshold)', () => {
    it('accepts the checkpoint one witness cosigned, and refuses it at a threshold of two', async () => {
      const since = async (file: string, threshold: string) => {
        const f = recordingIo({ env: { VOUCH_API_KEY: auditor }, cwd: root });
        const argv = ['--since', file, '--init', '--log', 'orders', '--url', 'http://vouch.test'];
        const witnesses = [
          '--witness',
          w1.verifierKey,
          '--witness',
          w2.verifierKey,
          '--threshold',
          threshold,
        ];
        const code = await verifySinceCommand.run(
          [...argv, '--public-key', logKey.verifierKey, ...witnesses, '--json'],
          {
            ...f.io,
            fetch: fetchApp,
          },
        );
        return { code, report: JSON.parse(f.out()) };
      };
      expect((await since(join(root, 'one.checkpoint'), '1')).code).toBe(0);
      const two = await since(join(root, 'two.checkpoint'), '2');
      expect(two.code).toBe(3);
      expect(two.report.status).toBe('NOT_WITNESSED');
      expect(existsSync(join(root, 'two.checkpoint'))).toBe(false);
    });
  });

  describe('when the server rewrote history it had shown the witness', () => {
    it('exits 1, cosigns nothing, and keeps its state', async () => {
      await append('refunds', 4);
      const first = await follow('refunds', w2.signerKey);
      expect(first.code).toBe(0);
      const before = readFileSync(join(first.state, 'refunds.checkpoint'), 'utf8');
      // A table owner rewrites event 2 (every later hash recomputed), appends, and the log is signed again.
      await rewriteEvent(database, { log: 'refunds', seq: 2, payload: '{"i":99}' });
      await ledger.append({
        log: 'refunds',
        kind: 'note',
        entity: 'e9',
        actor: 'agent:a',
        payload: { i: 9 },
      });
      await signLogCheckpoint(database, { log: 'refunds', ...signing, guard: async () => {} });
      const after = await follow('refunds', w2.signerKey);
      expect(after.code).toBe(1);
      expect(after.report).toMatchObject({ ok: false, cosignature: null, delivered: false });
      expect(['FORKED', 'BROKEN']).toContain(after.report.status);
      expect(readFileSync(join(first.state, 'refunds.checkpoint'), 'utf8')).toBe(before);
    });
  });

  describe('when the settings cannot work', () => {
    it('exits 2 without a witness signing key', async () => {
      const f = recordingIo({ env: { VOUCH_API_KEY: auditor }, cwd: root });
      const code = await witnessCommand.run(
        [
          'follow',
          '--url',
          'http://x',
          '--log',
          'orders',
          '--public-key',
          logKey.verifierKey,
          '--state',
          root,
          '--once',
        ],
        f.io,
      );
      expect(code).toBe(2);
    });
  });
});

describe('vouch witness new-key', () => {
  it('prints a signer key whose verifier key (on stderr) checks its cosignatures', async () => {
    const f = recordingIo({ env: {}, cwd: root });
    expect(await witnessCommand.run(['new-key', '--name', 'witness.example/w9'], f.io)).toBe(0);
    expect(f.out()).toMatch(/^PRIVATE\+KEY\+witness\.example\/w9\+[0-9a-f]{8}\+/);
    expect(f.err()).toMatch(/witness\.example\/w9\+[0-9a-f]{8}\+B/);
  });
});

describe('vouch witness serve', () => {
  describe('when a log submits its checkpoints (c2sp.org/tlog-witness add-checkpoint)', () => {
    it('cosigns the first one, and answers a second view of the same size with 409 and the size it holds', async () => {
      let stop: (signal: string) => void = () => {};
      const stopped = new Promise<string>((resolve) => {
        stop = resolve;
      });
      const f = recordingIo({ env: { VOUCH_WITNESS_SIGNING_KEY: w1.signerKey }, cwd: root, stop: stopped });
      const orders = logOrigin(PREFIX, 'served');
      const perLog = generateNoteKeys(orders);
      const running = witnessCommand.run(
        [
          'serve',
          '--listen',
          '127.0.0.1:0',
          '--state',
          join(root, 'serve-state'),
          '--log-key',
          perLog.verifierKey,
        ],
        f.io,
      );
      const [, url] = (await f.waitForOut(/listening on (\S+)\n/)) as unknown as [string, string];
      const note = (root: number) =>
        signCheckpoint({ origin: orders, treeSize: 4, rootHash: new Uint8Array(32).fill(root) }, [
          parseSignerKey(perLog.signerKey),
        ]);
      const submit = (body: string) => fetch(`${url}/add-checkpoint`, { method: 'POST', body });
      const first = await submit(`old 0\n\n${note(1)}`);
      expect(first.status).toBe(200);
      const line = await first.text();
      expect(verifyCosignatures(note(1) + line, { witnesses: [w1.verifierKey], threshold: 1 }).ok).toBe(true);
      const split = await submit(`old 4\n\n${note(2)}`);
      expect(split.status).toBe(409);
      expect(split.headers.get('content-type')).toBe('text/x.tlog.size');
      expect(await split.text()).toBe('4\n');
      expect(
        (
          await submit(
            `old 0\n\n${signCheckpoint({ origin: 'other/log', treeSize: 1, rootHash: new Uint8Array(32) }, [parseSignerKey(generateNoteKeys('other/log').signerKey)])}`,
          )
        ).status,
      ).toBe(404);
      stop('SIGTERM');
      expect(await running).toBe(0);
    });
  });
});
