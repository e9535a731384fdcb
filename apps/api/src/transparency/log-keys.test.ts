import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys, openCheckpoint, signCheckpoint } from '@vouch/audit';
import {
  createLedger,
  latestCheckpoint,
  logOrigin,
  merkleAppendHook,
  openDatabase,
  SIGNING_KEY_FILE,
  signLogCheckpoint,
  verifyChain,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../logger';
import { checkpointKeysFor } from './checkpoint-keys';
import { transparencyConfig } from './config';
import { loadLogKeys, logKeysOf } from './log-keys';
import { startCheckpoints } from './start-checkpoints';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-log-keys-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const postgres = { kind: 'postgres', url: 'postgres://unused' } as const;
const errorName = (work: () => unknown) => {
  try {
    work();
  } catch (error) {
    return (error as Error).name;
  }
  return undefined;
};

describe('transparencyConfig', () => {
  describe('when VOUCH_CHECKPOINT_INTERVAL_MS is not a whole number of ms up to an hour', () => {
    it.each(['-1', '1.5', 'soon', '3600001'])('refuses %s with a ConfigError', (value) => {
      expect(errorName(() => transparencyConfig({ VOUCH_CHECKPOINT_INTERVAL_MS: value }))).toBe(
        'ConfigError',
      );
    });
  });

  describe('when nothing is set', () => {
    it('signs at most once a second, with no key and no origin', () => {
      expect(transparencyConfig({})).toEqual({
        signingKey: undefined,
        origin: undefined,
        intervalMs: 1000,
        sharedSignature: true,
        witnessKeys: [],
        tilesPublic: false,
      });
    });
  });
});

describe('loadLogKeys', () => {
  describe('when the key comes from the environment', () => {
    it('takes the origin prefix from VOUCH_LOG_ORIGIN, else from the key name', () => {
      const { signerKey, verifierKey } = generateNoteKeys('keys.example/log');
      const fromKey = loadLogKeys(transparencyConfig({ VOUCH_LOG_SIGNING_KEY: signerKey }), postgres);
      expect(fromKey).toMatchObject({ originPrefix: 'keys.example/log', sharedVerifierKeys: [verifierKey] });
      const named = loadLogKeys(
        transparencyConfig({ VOUCH_LOG_SIGNING_KEY: signerKey, VOUCH_LOG_ORIGIN: 'other.example/x/' }),
        postgres,
      );
      expect(named?.originPrefix).toBe('other.example/x');
    });
  });

  describe('when Postgres has no key', () => {
    it('returns null: nothing is generated into the database', () => {
      expect(loadLogKeys(transparencyConfig({}), postgres)).toBeNull();
    });
  });

  describe('when the settings cannot work', () => {
    it.each([
      [{ VOUCH_LOG_ORIGIN: 'has space' }],
      [{ VOUCH_LOG_ORIGIN: 'a+b' }],
      [{ VOUCH_LOG_SIGNING_KEY: 'PRIVATE+KEY+x+00000000+AAAA' }],
    ])('refuses %j with a ConfigError', (env) => {
      expect(errorName(() => loadLogKeys(transparencyConfig(env), postgres))).toBe('ConfigError');
    });

    it.skipIf(process.platform === 'win32')('refuses a PGlite key file other users can read', () => {
      const dataDir = join(root, 'exposed');
      const target = { kind: 'pglite', dataDir } as const;
      loadLogKeys(transparencyConfig({}), target);
      chmodSync(join(dataDir, SIGNING_KEY_FILE), 0o644);
      expect(errorName(() => loadLogKeys(transparencyConfig({}), target))).toBe('ConfigError');
    });
  });
});

describe('startCheckpoints', () => {
  describe('when no key is configured', () => {
    it('keeps the Merkle tree, signs nothing, and warns once', async () => {
      const database = await openDatabase();
      const logger = createMemoryLogger();
      const started = await startCheckpoints({
        database,
        config: transparencyConfig({}),
        target: postgres,
        logger,
      });
      expect(started.keys).toBeNull();
      expect(started.afterAppend).toEqual([merkleAppendHook]);
      expect(logger.lines.map((l) => [l.level, l.msg])).toEqual([['warn', 'checkpoints disabled']]);
      await started.close();
      await database.close();
    });
  });
});

describe('per-log keys', () => {
  const master = generateNoteKeys('audit.example/vouch');
  const keysOf = (sharedSignature: boolean) =>
    logKeysOf({
      originPrefix: 'audit.example/vouch',
      masterKeys: master.signerKey,
      sharedSignature,
      source: { kind: 'env' },
    });

  describe('when two logs are signed', () => {
    it('gives each its own key, named after its checkpoint origin, the same on every load', () => {
      const keys = keysOf(false);
      const [orders] = keys.logVerifierKeys('orders');
      const [refunds] = keys.logVerifierKeys('refunds');
      expect(orders).toMatch(/^audit\.example\/vouch\/orders\+[0-9a-f]{8}\+/);
      expect(refunds).toMatch(/^audit\.example\/vouch\/refunds\+[0-9a-f]{8}\+/);
      expect(orders!.split('+')[2]).not.toBe(refunds!.split('+')[2]);
      expect(keysOf(false).logVerifierKeys('orders')).toEqual([orders]);
      expect(keys.signersFor('orders').map((s) => s.name)).toEqual(['audit.example/vouch/orders']);
    });

    it("refuses one log's checkpoint under another log's key", () => {
      const keys = keysOf(false);
      const note = signCheckpoint(
        { origin: 'audit.example/vouch/orders', treeSize: 1, rootHash: new Uint8Array(32) },
        keys.signersFor('orders'),
      );
      expect(openCheckpoint(note, { verifiers: keys.logVerifierKeys('orders') }).ok).toBe(true);
      expect(openCheckpoint(note, { verifiers: keys.logVerifierKeys('refunds') })).toMatchObject({
        ok: false,
        code: 'NO_TRUSTED_SIGNATURE',
      });
    });
  });

  describe('when VOUCH_LOG_SHARED_SIGNATURE is true (the default)', () => {
    it('signs with the shared key too, after the per-log key', () => {
      expect(transparencyConfig({}).sharedSignature).toBe(true);
      expect(
        keysOf(true)
          .signersFor('orders')
          .map((s) => s.name),
      ).toEqual(['audit.example/vouch/orders', 'audit.example/vouch']);
    });
  });

  describe('when VOUCH_LOG_SHARED_SIGNATURE is neither true nor false', () => {
    it('refuses it with a ConfigError', () => {
      expect(errorName(() => transparencyConfig({ VOUCH_LOG_SHARED_SIGNATURE: 'sometimes' }))).toBe(
        'ConfigError',
      );
    });
  });

  describe('when a deployment signed with the shared key before per-log keys', () => {
    it('keeps the old checkpoints verifiable and signs the next one with the per-log key alone', async () => {
      const database = await testBackends()[0]!.open();
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      const log = 'legacy';
      await ledger.append({ log, kind: 'note', entity: 'e1', actor: 'user:alice', payload: { i: 1 } });
      const keys = keysOf(false);
      // What an older version stored: signed by the master key only.
      const old = await signLogCheckpoint(database, {
        log,
        origin: (l) => logOrigin(keys.originPrefix, l),
        signers: keys.masterSigners,
      });
      await ledger.append({ log, kind: 'note', entity: 'e2', actor: 'user:alice', payload: { i: 2 } });
      const logger = createMemoryLogger();
      const started = await startCheckpoints({
        database,
        config: transparencyConfig({
          VOUCH_LOG_SIGNING_KEY: master.signerKey,
          VOUCH_LOG_SHARED_SIGNATURE: 'false',
        }),
        target: postgres,
        logger,
      });
      await started.close();
      const next = await latestCheckpoint(database, log);
      expect(next?.treeSize).toBe(2);
      expect(openCheckpoint(next!.note, { verifiers: keys.logVerifierKeys(log) }).ok).toBe(true);
      expect(openCheckpoint(next!.note, { verifiers: keys.sharedVerifierKeys }).ok).toBe(false);
      expect(openCheckpoint(old.note, { verifiers: keys.verifierKeysFor(log) }).ok).toBe(true);
      expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
      // verifyChain trusts both: the old shared signature and the new per-log one.
      const report = await verifyChain(database, { log, checkpointKeys: checkpointKeysFor(keys)(log) });
      expect(report).toMatchObject({ ok: true, checkpoints: { checked: 2, signatures: 'verified' } });
      await ledger.close();
      await database.close();
    });
  });
});
