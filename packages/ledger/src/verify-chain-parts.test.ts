import { eventHashOf, generateNoteKeys, parseSignerKey, type StoredEvent } from '@vouch/audit';
import { SubtreeStack } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
import type { Database } from './database';
import { createLedger, type Ledger } from './ledger';
import { refund, refundTool } from './records/__fixtures__/refund';
import { createRecords, type Records } from './records/create-records';
import { editCheckpoint, editMerkleNode, rewriteEvent, tamper, testBackends } from './testing';
import { verifyChain } from './verify-chain';
import {
  type PartRunner,
  type PartsContext,
  type PartsOutcome,
  runParts,
  type VerifyInParts,
  verifyInParts,
} from './verify-chain-parts';
import { verifyEventRange } from './verify-part';

const PREFIX = 'vouch.test/parts';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);
const checkpointKeys = (log: string) => ({ verifiers: [logKey.verifierKey], origin: origin(log) });

/** Parts of four events (the tree's levels 1 and 2 inside a part, 3 and up across parts). */
const ON_THIS_THREAD: VerifyInParts = { events: 4, threads: 0, minParts: 1 };
const KINDS = ['proposal', 'decision'];

describe.each(testBackends())('verifyChain in parts, on $name', ({ name, open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let n = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /**
   * A log of 23 events (five parts of four, the last one short): notes, a tool and two
   * proposals with their decisions, signed at sizes inside a part, at a part's end and at
   * the head.
   */
  async function intactLog(): Promise<{ log: string; size: number }> {
    const log = `parts-${++n}`;
    const note = (i: number) =>
      ledger.append({ log, kind: 'note', entity: `n${i}`, actor: 'user:alice', payload: { i } });
    for (let i = 1; i <= 3; i++) await note(i);
    await signLogCheckpoint(database, { log, origin, signers });
    await records.registerTool({ log, caller: { identity: 'user:ops' } }, refundTool());
    const agent = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    for (const key of ['a', 'b']) await records.propose(agent, refund(`${key}${n}`));
    let size = (await ledger.head(log))!.seq;
    while (size < 8) size = (await note(size + 1)).seq;
    await signLogCheckpoint(database, { log, origin, signers });
    while (size < 23) size = (await note(size + 1)).seq;
    await signLogCheckpoint(database, { log, origin, signers });
    return { log, size };
  }

  /** What the parts of `log` need from their caller, with the events fed kept in `fed`. */
  const partsContext = (log: string, fed: StoredEvent[]): PartsContext => ({
    log,
    pageSize: 3,
    checkpointKeys: checkpointKeys(log),
    forwardKinds: KINDS,
    feed: async (events) => {
      fed.push(...events);
    },
  });

  async function inParts(log: string, plan: VerifyInParts = ON_THIS_THREAD) {
    const fed: StoredEvent[] = [];
    const progress: number[] = [];
    const outcome = await verifyInParts(database, plan, {
      ...partsContext(log, fed),
      onProgress: (checked) => progress.push(checked),
    });
    return { outcome, fed, progress };
  }

  /**
   * What an owner could do that only the seam between two parts shows: event `seq` links to a
   * hash that is not its predecessor's, every hash from it on is recomputed, the Merkle tree is
   * rebuilt from the new hashes and the checkpoints past `seq` are dropped.
   */
  async function relinkFrom(log: string, seq: number) {
    const events = await ledger.events(log);
    let prev = 'cd'.repeat(32);
    const statements = [];
    for (const event of events.slice(seq - 1)) {
      const { hash: _, ...header } = { ...event, prev_hash: prev };
      prev = eventHashOf(header);
      statements.push(
        sql`update audit_events set prev_hash = ${header.prev_hash}, hash = ${prev} where log_id = ${log} and seq = ${event.seq}`,
      );
      event.hash = prev;
    }
    const tree = new SubtreeStack();
    const nodes: Array<{ level: number; index: number; hash: Uint8Array }> = [];
    for (const event of events) tree.appendEventHash(event.hash, (node) => nodes.push(node));
    statements.push(sql`delete from merkle_nodes where log_id = ${log}`);
    for (const node of nodes) {
      statements.push(
        sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, ${node.level}, ${node.index}, ${Buffer.from(node.hash).toString('hex')})`,
      );
    }
    statements.push(sql`delete from checkpoints where log_id = ${log} and tree_size >= ${seq}`);
    await tamper(database, ...statements);
  }

  const sequential = (log: string) =>
    verifyChain(database, { log, checkpointKeys: checkpointKeys(log), parts: false });

  describe('an intact log', () => {
    it('is proven in parts: the same head, nodes and checkpoints as event by event', async () => {
      const { log, size } = await intactLog();
      const report = await sequential(log);
      expect(report.ok).toBe(true);
      const { outcome, fed, progress } = await inParts(log);
      expect(outcome).toEqual<PartsOutcome>({
        checked: size,
        head: report.head!,
        redactions: [],
        nodes: report.merkle.nodes,
        checkpointsChecked: 3,
      });
      expect(report.checkpoints.checked).toBe(3);
      // Progress at the end of each part, and the events the payload checks read, in order.
      expect(progress).toEqual([4, 8, 12, 16, 20, 23]);
      const all = await ledger.events(log);
      expect(fed).toEqual(all.filter((event) => KINDS.includes(event.kind)));
      expect(fed.map((event) => event.kind)).toEqual(['proposal', 'decision', 'proposal', 'decision']);
    });

    it('gives verifyChain the same report either way', async () => {
      const { log } = await intactLog();
      const report = await verifyChain(database, {
        log,
        checkpointKeys: checkpointKeys(log),
        parts: ON_THIS_THREAD,
      });
      expect(report).toEqual(await sequential(log));
    });

    describe('when the workers fail', () => {
      /** The parts through `runner`, with what was fed to the caller's checks. */
      async function onRunner(log: string, runner: PartRunner) {
        const fed: StoredEvent[] = [];
        const head = (await ledger.head(log))!;
        const outcome = await runParts(
          database,
          { partEvents: 4, threads: 2, head },
          partsContext(log, fed),
          runner,
        );
        return { outcome, fed };
      }
      const dies = (from: number): PartRunner => ({
        run: (part) =>
          part.after < from ? verifyEventRange(database, part) : Promise.reject(new Error('the worker died')),
        end: async () => {},
      });

      it('runs the parts again on this thread when nothing was fed yet', async () => {
        const { log } = await intactLog();
        const { outcome, fed } = await onRunner(log, dies(0));
        const parts = await inParts(log);
        expect(outcome).toEqual(parts.outcome);
        expect(fed).toEqual(parts.fed);
      });

      it('leaves the log to the event-by-event run once events were fed, feeding none twice', async () => {
        const { log } = await intactLog();
        // Parts 0 and 1 (seqs 1–8, the proposals and their decisions) are fed; part 2 fails.
        const { outcome, fed } = await onRunner(log, dies(8));
        expect(outcome).toBeNull();
        expect(fed.map((event) => event.kind)).toEqual(['proposal', 'decision', 'proposal', 'decision']);
      });
    });

    it('is left to the event-by-event run when it has fewer than minParts parts', async () => {
      const { log } = await intactLog();
      expect((await inParts(log, { ...ON_THIS_THREAD, minParts: 6 })).outcome).toBeNull();
      expect((await inParts(log, { ...ON_THIS_THREAD, minParts: 5 })).outcome).not.toBeNull();
    });

    it.each([6, 3 * 2 ** 31, 2 ** 41])(
      'refuses %d events per part: not a power of two up to 2^40',
      async (events) => {
        const { log } = await intactLog();
        await expect(inParts(log, { ...ON_THIS_THREAD, events })).rejects.toThrow(/power of two/);
      },
    );

    it.each([-1, 1.5, Number.NaN])('refuses %d threads', async (threads) => {
      const { log } = await intactLog();
      await expect(inParts(log, { ...ON_THIS_THREAD, threads })).rejects.toThrow(/threads/);
    });
  });

  // Each edit leaves the parts path without a verdict (null): verifyChain then reports the
  // log event by event, and its report is the same whichever path it started on.
  describe.each([
    {
      what: 'an event rewritten with every later hash recomputed (the stored tree kept)',
      edit: (log: string) => rewriteEvent(database, { log, seq: 10, payload: '{"i":99}' }),
      code: 'MERKLE_MISMATCH',
    },
    {
      what: 'the first event of a part relinked (a seam between parts)',
      edit: (log: string) =>
        tamper(
          database,
          sql`update audit_events set prev_hash = ${'cd'.repeat(32)} where log_id = ${log} and seq = 9`,
        ),
      code: 'PREV_HASH_MISMATCH',
    },
    {
      what: 'a part whose chain is whole but starts from another hash, the tree rebuilt to match',
      edit: (log: string) => relinkFrom(log, 9),
      code: 'PREV_HASH_MISMATCH',
    },
    {
      what: 'a row deleted in the middle',
      edit: (log: string) =>
        tamper(database, sql`delete from audit_events where log_id = ${log} and seq = 14`),
      code: 'SEQ_GAP',
    },
    {
      what: 'a Merkle node inside a part edited',
      edit: (log: string) => editMerkleNode(database, { log, level: 1, idx: 5 }),
      code: 'MERKLE_MISMATCH',
    },
    {
      what: 'a Merkle node above the parts edited',
      edit: (log: string) => editMerkleNode(database, { log, level: 3, idx: 1 }),
      code: 'MERKLE_MISMATCH',
    },
    {
      what: 'a Merkle node above the parts deleted',
      edit: (log: string) =>
        tamper(database, sql`delete from merkle_nodes where log_id = ${log} and level = 4 and idx = 0`),
      code: 'MERKLE_MISSING',
    },
    {
      what: 'a Merkle node forged beyond the last event',
      edit: (log: string) =>
        tamper(
          database,
          sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, 1, 40, ${'ab'.repeat(32)})`,
        ),
      code: 'MERKLE_BEYOND_CHAIN',
    },
    {
      what: 'the root of a checkpoint inside a part edited',
      edit: (log: string) => editCheckpoint(database, { log, treeSize: 3, rootHash: 'ef'.repeat(32) }),
      code: 'CHECKPOINT_MISMATCH',
    },
  ])('$what', ({ edit, code }) => {
    it(`leaves the verdict to the event-by-event run, which reports ${code}`, async () => {
      const { log } = await intactLog();
      expect((await inParts(log)).outcome).not.toBeNull();
      await edit(log);
      expect((await inParts(log)).outcome).toBeNull();
      const report = await sequential(log);
      expect(report.ok).toBe(false);
      expect(report.failures.map((failure) => failure.code)).toContain(code);
      const seen: Array<number | 'restart'> = [];
      expect(
        await verifyChain(database, {
          log,
          checkpointKeys: checkpointKeys(log),
          parts: ON_THIS_THREAD,
          onProgress: (checked) => seen.push(checked),
          onRestart: () => seen.push('restart'),
        }),
      ).toEqual(report);
      // Progress never runs backwards unannounced: the parts' count, then (if they had counted
      // anything) a restart, then the event-by-event run's.
      const restart = seen.indexOf('restart');
      const runs = restart < 0 ? [seen] : [seen.slice(0, restart), seen.slice(restart + 1)];
      expect(seen.lastIndexOf('restart')).toBe(restart);
      for (const run of runs) expect(run).toEqual([...run].sort((a, b) => Number(a) - Number(b)));
    });
  });

  it('announces the restart when the parts had counted events before the damage', async () => {
    const { log, size } = await intactLog();
    // Level 1, idx 10 is the node over seqs 21 and 22: inside the last part.
    await editMerkleNode(database, { log, level: 1, idx: 10 });
    const seen: Array<number | 'restart'> = [];
    const report = await verifyChain(database, {
      log,
      checkpointKeys: checkpointKeys(log),
      parts: ON_THIS_THREAD,
      onProgress: (checked) => seen.push(checked),
      onRestart: () => seen.push('restart'),
    });
    expect(report.ok).toBe(false);
    const restart = seen.indexOf('restart');
    expect(restart).toBeGreaterThan(0);
    expect(seen.slice(0, restart)).toEqual([4, 8, 12, 16, 20]);
    expect(seen.slice(restart + 1).at(-1)).toBe(size);
  });

  describe.runIf(name === 'postgres')('on worker threads with their own connections', () => {
    const connections = async () => {
      const [row] = await database.rows<{ count: number }>(
        sql`select count(*)::int as count from pg_stat_activity where datname = current_database()`,
      );
      return row!.count;
    };

    it('proves an intact log, and closes its connections before it returns', async () => {
      const { log, size } = await intactLog();
      const before = await connections();
      const { outcome } = await inParts(log, { events: 4, threads: 2, minParts: 1 });
      expect(outcome?.checked).toBe(size);
      expect(await connections()).toBe(before);
      const report = await verifyChain(database, {
        log,
        checkpointKeys: checkpointKeys(log),
        parts: { events: 4, threads: 2, minParts: 1 },
      });
      expect(report).toEqual(await sequential(log));
      expect(await connections()).toBe(before);
    });

    it('runs the parts on this thread when a worker cannot connect', async () => {
      const { log, size } = await intactLog();
      if (database.driver.kind !== 'postgres') throw new Error('a Postgres test');
      // Nothing listens on port 1: each worker's connection is refused.
      const refused: Database = {
        ...database,
        driver: { ...database.driver, reopen: () => 'postgres://postgres@127.0.0.1:1/refused' },
      };
      const outcome = await verifyInParts(
        refused,
        { events: 4, threads: 2, minParts: 1 },
        {
          log,
          pageSize: 3,
          checkpointKeys: checkpointKeys(log),
          forwardKinds: KINDS,
          feed: async () => {},
        },
      );
      expect(outcome?.checked).toBe(size);
      expect(outcome).toEqual((await inParts(log)).outcome);
    });

    it('leaves a rewritten log to the event-by-event run', async () => {
      const { log } = await intactLog();
      await rewriteEvent(database, { log, seq: 6, payload: '{"i":42}' });
      expect((await inParts(log, { events: 4, threads: 2, minParts: 1 })).outcome).toBeNull();
    });
  });
});
