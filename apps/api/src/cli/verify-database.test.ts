import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys, parseSignerKey, signCheckpoint } from '@vouch/audit';
import {
  checkpointAt,
  createLedger,
  type Database,
  logOrigin,
  migrate,
  signLogCheckpoint,
} from '@vouch/ledger';
import { editCheckpoint, editMerkleNode, rewriteEvent } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';
import { cliStorages } from '../testing/cli-storages';

// `vouch verify` and `vouch export` against a database an owner has tampered with: the
// attacks of the threat model (docs/chain.md), each caught with its code and exit 1.

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-verify-cli-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function run(argv: string[], env: NodeJS.ProcessEnv) {
  return runVouch(argv, { env, cwd: root });
}

const storages = cliStorages(() => root);

const PREFIX = 'audit.example/v';

describe.each(storages)('vouch verify on $name', (storage) => {
  const keys = generateNoteKeys(PREFIX);
  const signers = [parseSignerKey(keys.signerKey)];
  const origin = (log: string) => logOrigin(PREFIX, log);
  let env: NodeJS.ProcessEnv;
  let keyed: NodeJS.ProcessEnv;
  let open: () => Promise<Database>;
  let drop: () => Promise<void>;

  /** Work on the database while no command has it open (PGlite serves one process at a time). */
  const withDatabase = async (work: (database: Database) => Promise<unknown>) => {
    const database = await open();
    try {
      await work(database);
    } finally {
      await database.close();
    }
  };

  beforeAll(async () => {
    const made = await storage.make();
    env = made.env;
    keyed = { ...env, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
    open = made.open;
    drop = made.drop;
    await withDatabase(async (database) => {
      await migrate(database);
      const ledger = createLedger(database);
      for (const log of ['intact', 'rewritten', 'leaf', 'checkpoint', 'forged']) {
        for (let i = 1; i <= 8; i++) {
          await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
          if (i === 4 || i === 8) await signLogCheckpoint(database, { log, origin, signers });
        }
      }
      await ledger.close();
    });
  });
  afterAll(async () => {
    await drop?.();
  });

  const failuresOf = (out: string) =>
    (JSON.parse(out) as { failures: Array<{ seq: number; code: string; table?: string }> }).failures.map(
      (f) => [f.seq, f.code, f.table],
    );

  describe('when nothing was tampered with', () => {
    it('exits 0 and says the checkpoint signatures were checked with the configured log key', async () => {
      const { code, out } = await run(['verify', '--log', 'intact'], keyed);
      expect(code).toBe(0);
      expect(out).toMatch(/INTACT — 8 events verified/);
      expect(out).toMatch(/7 Merkle nodes, 2 checkpoint\(s\), signatures checked/);
    });

    it('says the signatures were NOT checked when it has no key', async () => {
      const { code, out } = await run(['verify', '--log', 'intact'], env);
      expect(code).toBe(0);
      expect(out).toMatch(/signatures NOT checked/);
      const json = await run(['verify', '--log', 'intact', '--json'], env);
      expect(JSON.parse(json.out).checkpoints).toEqual({ checked: 2, signatures: 'not_checked' });
    });

    it('exits 1 with CHECKPOINT_SIGNATURE_INVALID for a --public-key that did not sign them', async () => {
      const other = generateNoteKeys(PREFIX).verifierKey;
      const { code, out } = await run(['verify', '--log', 'intact', '--public-key', other, '--json'], env);
      expect(code).toBe(1);
      expect(failuresOf(out)).toEqual([
        [4, 'CHECKPOINT_SIGNATURE_INVALID', 'checkpoints'],
        [8, 'CHECKPOINT_SIGNATURE_INVALID', 'checkpoints'],
      ]);
    });
  });

  describe('when an owner rewrote an event and recomputed every later hash', () => {
    it('exits 1 with MERKLE_MISMATCH and CHECKPOINT_MISMATCH', async () => {
      await withDatabase((database) =>
        rewriteEvent(database, { log: 'rewritten', seq: 3, payload: '{"i":33}' }),
      );
      const { code, out } = await run(['verify', '--log', 'rewritten'], keyed);
      expect(code).toBe(1);
      // Seq 4 completes (1, 1), the first node over the rewritten leaf.
      expect(out).toMatch(/seq 4 {2}MERKLE_MISMATCH \[merkle_nodes\]/);
      expect(out).toMatch(/seq 4 {2}CHECKPOINT_MISMATCH \[checkpoints\]/);
      const json = await run(['verify', '--log', 'rewritten', '--json'], keyed);
      expect(failuresOf(json.out)).toEqual([
        [4, 'MERKLE_MISMATCH', 'merkle_nodes'],
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
        [8, 'CHECKPOINT_MISMATCH', 'checkpoints'],
      ]);
    });
  });

  describe('when an owner edited a Merkle node', () => {
    it('exits 1 with MERKLE_MISMATCH at the seq that completes it', async () => {
      // (1, 3) is the hash of leaves 6 and 7, completed by seq 8.
      await withDatabase((database) => editMerkleNode(database, { log: 'leaf', level: 1, idx: 3 }));
      const { code, out } = await run(['verify', '--log', 'leaf', '--json'], keyed);
      expect(code).toBe(1);
      expect(failuresOf(out)).toEqual([[8, 'MERKLE_MISMATCH', 'merkle_nodes']]);
    });
  });

  describe('when an owner edited a checkpoint', () => {
    it('exits 1 with CHECKPOINT_MISMATCH for a root column that no longer matches', async () => {
      await withDatabase((database) =>
        editCheckpoint(database, { log: 'checkpoint', treeSize: 4, rootHash: 'ab'.repeat(32) }),
      );
      const { code, out } = await run(['verify', '--log', 'checkpoint', '--json'], keyed);
      expect(code).toBe(1);
      expect(failuresOf(out)).toEqual([
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
      ]);
    });

    it('exits 1 with CHECKPOINT_SIGNATURE_INVALID for a note re-signed with another key', async () => {
      await withDatabase(async (database) => {
        const stored = (await checkpointAt(database, 'forged', 8))!;
        const note = signCheckpoint(
          { origin: origin('forged'), treeSize: 8, rootHash: Buffer.from(stored.rootHash, 'hex') },
          [parseSignerKey(generateNoteKeys(PREFIX).signerKey)],
        );
        await editCheckpoint(database, { log: 'forged', treeSize: 8, note });
      });
      const { code, out } = await run(['verify', '--log', 'forged', '--json'], keyed);
      expect(code).toBe(1);
      expect(failuresOf(out)).toEqual([[8, 'CHECKPOINT_SIGNATURE_INVALID', 'checkpoints']]);
    });
  });

  describe('when the log id is unknown', () => {
    it('verify exits 2 with LOG_NOT_FOUND instead of INTACT', async () => {
      const { code, out, err } = await run(['verify', '--log', 'no-such-log'], keyed);
      expect(code).toBe(2);
      expect(out).toBe('');
      expect(err).toMatch(/LOG_NOT_FOUND/);
    });

    it('export exits 2 and signs nothing', async () => {
      const { code, out, err } = await run(['export', '--log', 'no-such-log'], keyed);
      expect(code).toBe(2);
      expect(out).toBe('');
      expect(err).toMatch(/LOG_NOT_FOUND/);
      await withDatabase(async (database) => {
        const rows = await database.rows(sql`select 1 from checkpoints where log_id = 'no-such-log'`);
        expect(rows).toEqual([]);
      });
    });
  });
});
