import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventHashOf, generateNoteKeys, parseSignerKey, payloadHashOf, signCheckpoint } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointAt } from './checkpoints/checkpoint-store';
import { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
import type { Database } from './database';
import { createLedger, type Ledger } from './ledger';
import { verifyBothWays } from './tamper-testing';
import {
  createTestDatabase,
  editCheckpoint,
  editMerkleNode,
  rewriteEvent,
  tamper,
  testBackends,
} from './testing';
import type { LogVerificationReport } from './verify-chain';

const PREFIX = 'vouch.test/log';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);
const checkpointKeys = (log: string) => ({ verifiers: [logKey.verifierKey], origin: origin(log) });

/**
 * Every check below runs twice: with the tree hashed on the main thread (small logs always
 * are), and with every page of events, three at a time, hashed ahead on the worker thread,
 * the path a large log takes.
 */
const TREE_HASHING = [
  { where: 'main thread', hashing: {} },
  { where: 'worker thread', hashing: { merkleWorkerMinLeaves: 1, pageSize: 3 } },
] as const;

const codes = (report: LogVerificationReport) => report.failures.map((f) => [f.seq, f.code]);

describe.each(testBackends())('verifyChain on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const note = (log: string, i: number) => ({
    log,
    kind: 'note',
    entity: `e${i}`,
    actor: 'user:alice',
    payload: { i },
  });

  /** A fresh log of `n` events, with a signed checkpoint after each size in `signedAt`. */
  async function freshLog(
    n = 8,
    signedAt: readonly number[] = [],
    through: Ledger = ledger,
  ): Promise<string> {
    const log = `tamper-${++logNo}`;
    for (let i = 1; i <= n; i++) {
      await through.append(note(log, i));
      if (signedAt.includes(i)) await signLogCheckpoint(database, { log, origin, signers });
    }
    return log;
  }

  describe.each(TREE_HASHING)('when the tree is hashed on the $where', ({ hashing }) => {
    describe('when the chain is intact', () => {
      it('reports ok with the head, every event, Merkle node and checkpoint checked', async () => {
        const log = await freshLog(8, [3, 5, 8]);
        const head = await ledger.head(log);
        const progress: number[] = [];
        const report = await verifyBothWays(database, {
          ...hashing,
          log,
          expectHead: head!,
          checkpointKeys: checkpointKeys(log),
          onProgress: (n) => progress.push(n),
        });
        expect(report).toEqual({
          ok: true,
          log,
          checked: 8,
          head,
          failures: [],
          // 8 leaves: 4 + 2 + 1 complete subtrees above the leaves (leaves are not stored).
          merkle: { nodes: 7 },
          checkpoints: { checked: 3, signatures: 'verified' },
          // No key was ever issued here: nothing authorizes by keys, so no writer is judged.
          writers: 'not_checked',
          // Nor was a policy pinned, and there is no decision to judge.
          policy: 'no_decisions',
          authors: { signed: 0, unsigned: 0 },
        });
        expect(progress.at(-1)).toBe(8);
      });

      it('says the checkpoint signatures were not checked when it has no public key', async () => {
        const log = await freshLog(5, [5]);
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report).toMatchObject({ ok: true, checkpoints: { checked: 1, signatures: 'not_checked' } });
      });

      it.each([1, 3, 4, 16])(
        'checks every node when stored nodes are read %i leaves at a time',
        async (leaves) => {
          const log = await freshLog(37, [1, 16, 37]);
          const report = await verifyBothWays(database, {
            ...hashing,
            log,
            merkleBlockLeaves: leaves,
            checkpointKeys: checkpointKeys(log),
          });
          // 37 = 0b100101 leaves: 37 - 3 complete subtrees above the leaves.
          expect(report).toMatchObject({ ok: true, merkle: { nodes: 34 }, checkpoints: { checked: 3 } });
          await editMerkleNode(database, { log, level: 3, idx: 2 });
          const broken = await verifyBothWays(database, { ...hashing, log, merkleBlockLeaves: leaves });
          // Node (3, 2) covers leaves 16..23: seq 24 completes it.
          expect(broken.failures).toMatchObject([{ seq: 24, code: 'MERKLE_MISMATCH', level: 3, idx: 2 }]);
        },
      );
    });

    describe('when the log id is unknown', () => {
      it('refuses with LOG_NOT_FOUND instead of calling an empty log intact', async () => {
        await expect(verifyBothWays(database, { ...hashing, log: 'no-such-log' })).rejects.toMatchObject({
          name: 'LedgerError',
          code: 'LOG_NOT_FOUND',
        });
      });
    });

    describe('when history was edited in the database', () => {
      it('finds an edited payload at its seq', async () => {
        const log = await freshLog();
        await tamper(
          database,
          sql`update audit_events set payload = '{"i":999}' where log_id = ${log} and seq = 3`,
        );
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.ok).toBe(false);
        expect(codes(report)).toEqual([[3, 'PAYLOAD_HASH_MISMATCH']]);
      });

      it('finds edited metadata at its seq', async () => {
        const log = await freshLog();
        await tamper(
          database,
          sql`update audit_events set actor = 'user:mallory' where log_id = ${log} and seq = 5`,
        );
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(codes(report)).toEqual([[5, 'HASH_MISMATCH']]);
      });

      it('finds a deleted row as a gap', async () => {
        const log = await freshLog();
        await tamper(database, sql`delete from audit_events where log_id = ${log} and seq = 4`);
        const report = await verifyBothWays(database, { ...hashing, log });
        // Past the gap the tree is undefined: the Merkle checks stop there.
        expect(codes(report)).toEqual([
          [5, 'SEQ_GAP'],
          [5, 'PREV_HASH_MISMATCH'],
        ]);
      });

      it('finds reordered rows', async () => {
        const log = await freshLog();
        // Swap rows 3 and 4 (through a free seq: the primary key checks every statement).
        await tamper(database, sql`update audit_events set seq = 1000 where log_id = ${log} and seq = 3`);
        await tamper(database, sql`update audit_events set seq = 3 where log_id = ${log} and seq = 4`);
        await tamper(database, sql`update audit_events set seq = 4 where log_id = ${log} and seq = 1000`);
        const report = await verifyBothWays(database, { ...hashing, log });
        // Also TIME_REGRESSION at 4 when the two were recorded at different milliseconds.
        expect(codes(report).filter(([, code]) => code !== 'TIME_REGRESSION')).toEqual([
          [3, 'HASH_MISMATCH'],
          [3, 'PREV_HASH_MISMATCH'],
          [4, 'HASH_MISMATCH'],
          [4, 'PREV_HASH_MISMATCH'],
          // Seq 4 completes (1, 1) and (2, 0), over both swapped leaves.
          [4, 'MERKLE_MISMATCH'],
          [5, 'PREV_HASH_MISMATCH'],
          // Seq 8 completes the root node (3, 0), which covers both swapped leaves.
          [8, 'MERKLE_MISMATCH'],
        ]);
      });

      it('finds a replaced row whose own hashes were recomputed, by the link after it and the Merkle nodes above it', async () => {
        const log = await freshLog();
        const [original] = await ledger.events(log, { after: 5, limit: 1 });
        const payload = '{"i":"forged"}';
        const forged = { ...original!, payload, payload_hash: payloadHashOf(payload) };
        const hash = eventHashOf(forged);
        await tamper(
          database,
          sql`update audit_events set payload = ${payload}, payload_hash = ${forged.payload_hash}, hash = ${hash} where log_id = ${log} and seq = 6`,
        );
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([
          // Its leaf's parent (1, 2), completed by seq 6, and (2, 1) and (3, 0) above it,
          // completed by seq 8 (seq 7 completes no node): one run.
          { seq: 6, code: 'MERKLE_MISMATCH', table: 'merkle_nodes', level: 1, idx: 2, through: 8, nodes: 3 },
          { seq: 7, code: 'PREV_HASH_MISMATCH' },
        ]);
      });

      it('finds a truncated head against the head the auditor trusts, the tree and the checkpoint', async () => {
        const log = await freshLog(8, [8]);
        const trusted = (await ledger.head(log))!;
        await tamper(database, sql`delete from audit_events where log_id = ${log} and seq > 6`);
        const report = await verifyBothWays(database, { ...hashing, log, expectHead: trusted });
        // The first stored node past seq 6 is (1, 3), over leaves 6 and 7: seq 8 completed it.
        expect(codes(report)).toEqual([
          [8, 'TRUNCATED'],
          [8, 'MERKLE_BEYOND_CHAIN'],
          [8, 'CHECKPOINT_MISMATCH'],
        ]);
        expect(report.head?.seq).toBe(6);
      });

      it('keeps going after a break and reports every one', async () => {
        const log = await freshLog();
        await tamper(
          database,
          sql`update audit_events set payload = '{}' where log_id = ${log} and seq in (2, 7)`,
        );
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.checked).toBe(8);
        expect(report.failures.map((f) => f.seq)).toEqual([2, 7]);
      });
    });

    describe('when history was rewritten and every later hash recomputed', () => {
      it('finds it where the stored tree and the signed checkpoints disagree with the events', async () => {
        const log = await freshLog(8, [3, 5, 8]);
        const rewritten = await rewriteEvent(database, { log, seq: 4, payload: '{"i":"forged"}' });
        expect(rewritten.map((e) => e.seq)).toEqual([4, 5, 6, 7, 8]);
        const report = await verifyBothWays(database, {
          ...hashing,
          log,
          checkpointKeys: checkpointKeys(log),
        });
        // The chain alone is consistent again; everything stored beside it is not.
        expect(report.failures).toMatchObject([
          { seq: 4, code: 'MERKLE_MISMATCH', table: 'merkle_nodes', level: 1, idx: 1, through: 8 },
          { seq: 5, code: 'CHECKPOINT_MISMATCH', table: 'checkpoints', tree_size: 5 },
          { seq: 8, code: 'CHECKPOINT_MISMATCH', table: 'checkpoints', tree_size: 8 },
        ]);
        expect(report.ok).toBe(false);
      });
    });

    describe('when a Merkle node was edited, deleted or added', () => {
      it('has no leaf row to edit: the database refuses one, and the leaf is its event', async () => {
        const log = await freshLog();
        await expect(
          tamper(
            database,
            sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, 0, 5, ${'cd'.repeat(32)})`,
          ),
        ).rejects.toMatchObject({ cause: { message: expect.stringContaining('merkle_nodes_interior') } });
        await editMerkleNode(database, { log, level: 1, idx: 2 });
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([
          { seq: 6, code: 'MERKLE_MISMATCH', table: 'merkle_nodes', level: 1, idx: 2 },
        ]);
      });

      it('finds an edited interior node at the seq that completes it', async () => {
        const log = await freshLog();
        await editMerkleNode(database, { log, level: 2, idx: 0 });
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([{ seq: 4, code: 'MERKLE_MISMATCH', level: 2, idx: 0 }]);
      });

      it('finds a hash that is not hex at all', async () => {
        const log = await freshLog();
        await editMerkleNode(database, { log, level: 1, idx: 1, hash: 'not a hash' });
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([{ seq: 4, code: 'MERKLE_MISMATCH', level: 1, idx: 1 }]);
      });

      it('finds a deleted node as missing', async () => {
        const log = await freshLog();
        await tamper(database, sql`delete from merkle_nodes where log_id = ${log} and level = 1 and idx = 2`);
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([{ seq: 6, code: 'MERKLE_MISSING', level: 1, idx: 2 }]);
      });

      it('finds a node past the last event', async () => {
        const log = await freshLog();
        await tamper(
          database,
          sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, 1, 4, ${'cd'.repeat(32)})`,
        );
        const report = await verifyBothWays(database, { ...hashing, log });
        // (1, 4) covers leaves 8 and 9: seq 10 would complete it.
        expect(report.failures).toMatchObject([
          { seq: 10, code: 'MERKLE_BEYOND_CHAIN', level: 1, idx: 4, nodes: 1 },
        ]);
      });

      it('reports a log whose tree was never stored once, not once per node', async () => {
        const plain = createLedger(database, { merkle: false });
        const log = await freshLog(8, [], plain);
        await plain.close();
        const report = await verifyBothWays(database, { ...hashing, log });
        expect(report.failures).toMatchObject([
          { seq: 2, code: 'MERKLE_MISSING', level: 1, idx: 0, through: 8, nodes: 7 },
        ]);
      });
    });

    describe('when a stored checkpoint was edited', () => {
      it('finds a root column that disagrees with its note and with the events', async () => {
        const log = await freshLog(8, [5, 8]);
        await editCheckpoint(database, { log, treeSize: 5, rootHash: 'ef'.repeat(32) });
        const report = await verifyBothWays(database, {
          ...hashing,
          log,
          checkpointKeys: checkpointKeys(log),
        });
        expect(codes(report)).toEqual([
          [5, 'CHECKPOINT_MISMATCH'],
          [5, 'CHECKPOINT_MISMATCH'],
        ]);
      });

      it('finds a tree size column that disagrees with its note', async () => {
        const log = await freshLog(8, [5]);
        await editCheckpoint(database, { log, treeSize: 5, newTreeSize: 6 });
        const report = await verifyBothWays(database, { ...hashing, log });
        // The note says 5; at 6 the root differs too.
        expect(codes(report)).toEqual([
          [6, 'CHECKPOINT_MISMATCH'],
          [6, 'CHECKPOINT_MISMATCH'],
        ]);
      });

      it('finds a note signed by another key, and says so only when it has the public key', async () => {
        const log = await freshLog(8, [5]);
        const stored = (await checkpointAt(database, log, 5))!;
        const mallory = parseSignerKey(generateNoteKeys(PREFIX).signerKey);
        const forged = signCheckpoint(
          { origin: origin(log), treeSize: 5, rootHash: Buffer.from(stored.rootHash, 'hex') },
          [mallory],
        );
        await editCheckpoint(database, { log, treeSize: 5, note: forged });
        const checked = await verifyBothWays(database, {
          ...hashing,
          log,
          checkpointKeys: checkpointKeys(log),
        });
        expect(checked.failures).toMatchObject([
          {
            seq: 5,
            code: 'CHECKPOINT_SIGNATURE_INVALID',
            table: 'checkpoints',
            reason: 'NO_TRUSTED_SIGNATURE',
          },
        ]);
        const unchecked = await verifyBothWays(database, { ...hashing, log });
        expect(unchecked).toMatchObject({ ok: true, checkpoints: { signatures: 'not_checked' } });
      });

      it('finds a note for another log', async () => {
        const log = await freshLog(5, [5]);
        const stored = (await checkpointAt(database, log, 5))!;
        const other = signCheckpoint(
          { origin: origin('other'), treeSize: 5, rootHash: Buffer.from(stored.rootHash, 'hex') },
          signers,
        );
        await editCheckpoint(database, { log, treeSize: 5, note: other });
        const report = await verifyBothWays(database, {
          ...hashing,
          log,
          checkpointKeys: checkpointKeys(log),
        });
        expect(report.failures).toMatchObject([
          { seq: 5, code: 'CHECKPOINT_SIGNATURE_INVALID', reason: 'ORIGIN_MISMATCH' },
        ]);
      });

      it('finds a note that is not a checkpoint', async () => {
        const log = await freshLog(5, [5]);
        await editCheckpoint(database, { log, treeSize: 5, note: 'hello\n' });
        const report = await verifyBothWays(database, {
          ...hashing,
          log,
          checkpointKeys: checkpointKeys(log),
        });
        expect(codes(report)).toEqual([[5, 'CHECKPOINT_MISMATCH']]);
      });
    });
  });
});

const postgresUrl = process.env.DATABASE_URL;
// Several processes need a shared server: PGlite is embedded in one process by design.
describe.runIf(postgresUrl)('appends from two processes on one Postgres', () => {
  const worker = fileURLToPath(new URL('./__fixtures__/append-worker.ts', import.meta.url));
  const run = promisify(execFile);
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(postgresUrl!);
    const { openDatabase } = await import('./database');
    const { migrate } = await import('./migrate');
    database = await openDatabase({ url: testDb.url });
    await migrate(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('keeps one gapless chain when 2 processes x 16 appenders write at once', async () => {
    const spawnWorker = (id: string) =>
      run(process.execPath, ['--import', 'tsx', '--conditions=@vouch/source', worker], {
        env: {
          ...process.env,
          DATABASE_URL: testDb.url,
          LOG: 'multi',
          COUNT: '150',
          CONCURRENCY: '16',
          WORKER: id,
        },
      });
    const results = await Promise.all([spawnWorker('a'), spawnWorker('b')]);
    const acknowledged = results.map((r) => JSON.parse(r.stdout).acknowledged as number);
    expect(acknowledged).toEqual([150, 150]);
    const report = await verifyBothWays(database, { log: 'multi' });
    expect(report).toMatchObject({ ok: true, checked: 300, head: { seq: 300 } });
    const [row] = await database.rows<{ n: number; max: number }>(
      sql`select count(*)::int as n, max(seq)::int as max from audit_events where log_id = 'multi'`,
    );
    expect(row).toEqual({ n: 300, max: 300 });
  }, 60_000);
});
