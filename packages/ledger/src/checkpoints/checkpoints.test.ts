import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventLeafHash, generateNoteKeys, openCheckpoint, parseSignerKey } from '@vouch/audit';
import { MemoryMerkleTree } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { merkleAppendHook } from '../merkle/merkle-append-hook';
import { testBackends } from '../testing';
import { checkpointAt, latestCheckpoint, type StoredCheckpoint } from './checkpoint-store';
import { createCheckpointer } from './checkpointer';
import { parseLogSigners, readOrCreateSigningKeyFile, verifierKeysOf } from './log-signing-key';
import { logOrigin, signLogCheckpoint } from './sign-log-checkpoint';

const PREFIX = 'vouch.test/log';
const keys = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(keys.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

/** Resolves with the next `count` checkpoints the checkpointer reports. */
function collector() {
  const seen: StoredCheckpoint[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  return {
    seen,
    onCheckpoint(checkpoint: StoredCheckpoint) {
      seen.push(checkpoint);
      for (const w of [...waiters]) if (seen.length >= w.count) w.resolve();
    },
    until(count: number) {
      return new Promise<void>((resolve) => {
        if (seen.length >= count) resolve();
        else waiters.push({ count, resolve });
      });
    },
  };
}

describe.each(testBackends())('checkpoints on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const append = (through: Ledger, log: string, i: number) =>
    through.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });

  describe('signLogCheckpoint', () => {
    describe('when a log has events', () => {
      it('signs the head with the Merkle root of every event and keeps it', async () => {
        const log = `cp-${++logNo}`;
        const events = [];
        for (let i = 1; i <= 5; i++) events.push(await append(ledger, log, i));
        const stored = await signLogCheckpoint(database, { log, origin, signers });
        const opened = openCheckpoint(stored.note, { verifiers: [keys.verifierKey], origin: origin(log) });
        const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
        expect(opened.ok).toBe(true);
        if (!opened.ok) return;
        expect(opened.checkpoint.treeSize).toBe(5);
        expect(Buffer.from(opened.checkpoint.rootHash).toString('hex')).toBe(
          Buffer.from(reference.root()).toString('hex'),
        );
        expect(stored.rootHash).toBe(Buffer.from(reference.root()).toString('hex'));
        expect(await latestCheckpoint(database, log)).toEqual(stored);
        expect(await checkpointAt(database, log, 5)).toEqual(stored);
        expect(await checkpointAt(database, log, 4)).toBeNull();
      });

      it('keeps the first checkpoint when a size is signed twice', async () => {
        const log = `cp-${++logNo}`;
        await append(ledger, log, 1);
        const first = await signLogCheckpoint(database, { log, origin, signers });
        const other = [parseSignerKey(generateNoteKeys(PREFIX).signerKey)];
        const second = await signLogCheckpoint(database, { log, origin, signers: other });
        expect(second).toEqual(first);
      });
    });

    describe('when a log has no events', () => {
      it('signs the empty tree at size 0', async () => {
        const stored = await signLogCheckpoint(database, { log: 'cp-empty', origin, signers });
        expect(stored.treeSize).toBe(0);
        expect(stored.rootHash).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      });
    });

    describe('when two keys sign during a rotation', () => {
      it('verifies under either key alone', async () => {
        const log = `cp-${++logNo}`;
        await append(ledger, log, 1);
        const next = generateNoteKeys(PREFIX);
        const both = parseLogSigners(`${keys.signerKey}\n${next.signerKey}`);
        const stored = await signLogCheckpoint(database, { log, origin, signers: both });
        expect(verifierKeysOf(both)).toEqual([keys.verifierKey, next.verifierKey]);
        for (const verifier of [keys.verifierKey, next.verifierKey]) {
          expect(openCheckpoint(stored.note, { verifiers: [verifier] }).ok).toBe(true);
        }
      });
    });
  });

  describe('createCheckpointer', () => {
    describe('when appends arrive', () => {
      it('signs the head after they commit, outside the append transaction', async () => {
        const log = `cp-${++logNo}`;
        const seen = collector();
        const checkpointer = createCheckpointer({
          database,
          origin,
          signers,
          onCheckpoint: seen.onCheckpoint,
        });
        const hooked = createLedger(database, { afterAppend: [merkleAppendHook, checkpointer.afterAppend] });
        await Promise.all([1, 2, 3].map((i) => append(hooked, log, i)));
        await seen.until(1);
        expect(seen.seen[0]).toMatchObject({ log, treeSize: 3 });
        await hooked.close();
        await checkpointer.close();
      });

      it('signs at most once per interval, and flush signs what is pending', async () => {
        const log = `cp-${++logNo}`;
        const seen = collector();
        const checkpointer = createCheckpointer({
          database,
          origin,
          signers,
          intervalMs: 3_600_000,
          onCheckpoint: seen.onCheckpoint,
        });
        const hooked = createLedger(database, { afterAppend: [merkleAppendHook, checkpointer.afterAppend] });
        await append(hooked, log, 1);
        await seen.until(1);
        for (let i = 2; i <= 6; i++) await append(hooked, log, i);
        expect(seen.seen).toHaveLength(1);
        await checkpointer.flush();
        expect(seen.seen.map((c) => c.treeSize)).toEqual([1, 6]);
        const rows = await database.rows<{ n: number }>(
          sql`select count(*)::int as n from checkpoints where log_id = ${log}`,
        );
        expect(rows[0]!.n).toBe(2);
        await hooked.close();
        await checkpointer.close();
      });
    });

    describe('when signing fails', () => {
      it('reports the error with the log and keeps going', async () => {
        const log = `cp-${++logNo}`;
        const plain = createLedger(database, { merkle: false });
        // Two events: a tree of one leaf needs no stored node, a tree of two needs (1, 0).
        await append(plain, log, 1);
        await append(plain, log, 2);
        const errors: Array<{ code?: string; log: string }> = [];
        const checkpointer = createCheckpointer({
          database,
          origin,
          signers,
          onError: (error, failed) => errors.push({ code: (error as { code?: string }).code, log: failed }),
        });
        // The log has events but no Merkle nodes (appended without the hook): no root to sign.
        checkpointer.notify(log);
        await checkpointer.flush();
        expect(errors).toEqual([{ code: 'NOT_FOUND', log }]);
        await plain.close();
        await checkpointer.close();
      });
    });
  });
});

describe('readOrCreateSigningKeyFile', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-key-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe('when no key file exists', () => {
    it('creates one readable only by its owner, and returns the same key afterwards', () => {
      const path = join(dir, 'a.key');
      const first = readOrCreateSigningKeyFile(path, PREFIX);
      expect(first).toMatchObject({ created: true, exposed: false });
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(parseSignerKey(first.signerKey).name).toBe(PREFIX);
      expect(readOrCreateSigningKeyFile(path, PREFIX)).toEqual({ ...first, created: false });
    });
  });

  describe('when the key file is readable by others', () => {
    it.skipIf(process.platform === 'win32')('says it is exposed', () => {
      const path = join(dir, 'b.key');
      writeFileSync(path, `${keys.signerKey}\n`, { mode: 0o644 });
      expect(readOrCreateSigningKeyFile(path, PREFIX)).toMatchObject({
        exposed: true,
        signerKey: keys.signerKey,
      });
    });
  });
});

describe('parseLogSigners', () => {
  describe('when a key does not parse', () => {
    it('throws MALFORMED_CHECKPOINT', () => {
      expect(() => parseLogSigners(`${keys.signerKey}, PRIVATE+KEY+x+00000000+AAAA`)).toThrow(
        expect.objectContaining({ code: 'MALFORMED_CHECKPOINT' }),
      );
    });
  });
});
