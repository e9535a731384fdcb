import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import { merkleAppendHook, openDatabase, SIGNING_KEY_FILE } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../logger';
import { transparencyConfig } from './config';
import { loadLogKeys } from './log-keys';
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
      expect(transparencyConfig({})).toEqual({ signingKey: undefined, origin: undefined, intervalMs: 1000 });
    });
  });
});

describe('loadLogKeys', () => {
  describe('when the key comes from the environment', () => {
    it('takes the origin prefix from VOUCH_LOG_ORIGIN, else from the key name', () => {
      const { signerKey, verifierKey } = generateNoteKeys('keys.example/log');
      const fromKey = loadLogKeys(transparencyConfig({ VOUCH_LOG_SIGNING_KEY: signerKey }), postgres);
      expect(fromKey).toMatchObject({ originPrefix: 'keys.example/log', verifierKeys: [verifierKey] });
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
      const started = startCheckpoints({
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
