import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type AuditError,
  createChainChecker,
  eventHashOf,
  GENESIS_PREV_HASH,
  isAuditError,
  payloadHashOf,
  type StoredEvent,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from './database';
import { createLedger } from './ledger';
import { migrate } from './migrate';
import { checkRecordTables } from './records/check-record-tables';
import { createRecords } from './records/create-records';
import { createTestDatabase, tamper, testBackends } from './testing';

const appender = fileURLToPath(new URL('./__fixtures__/durable-appender.ts', import.meta.url));
const recordsWorker = fileURLToPath(new URL('./__fixtures__/records-worker.ts', import.meta.url));

/** A running durable-appender child and the lines it has printed so far. */
interface Appender {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first line that starts with `prefix` (now or later). */
  line(prefix: string): Promise<string>;
  /** Resolves when the process has exited and its output is read to the end. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startAppender(env: Record<string, string>): Appender {
  return startChild(appender, env);
}

/** A child process running `script` under tsx, its stdout split into lines as they come. */
function startChild(script: string, env: Record<string, string>): Appender {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@vouch/source', script], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ prefix: string; resolve: (line: string) => void }> = [];
  let partial = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const waiter of waiters.filter((w) => line.startsWith(w.prefix))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  return {
    child,
    lines,
    exited,
    line: (prefix) => {
      const seen = lines.find((l) => l.startsWith(prefix));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        waiters.push({ prefix, resolve });
        void exited.then(() =>
          reject(new Error(`appender exited without "${prefix}": ${stderr.slice(-2000)}`)),
        );
      });
    },
  };
}

/** The `ack <seq> <hash>` lines of an appender as a map seq -> hash. */
function acknowledged(lines: readonly string[]): Map<number, string> {
  const acks = new Map<number, string>();
  for (const line of lines) {
    const [word, seq, hash] = line.split(' ');
    if (word === 'ack') acks.set(Number(seq), hash!);
  }
  return acks;
}

async function storedChain(database: Database, log: string): Promise<Map<number, string>> {
  const rows = await database.rows<{ seq: number; hash: string }>(
    sql`select seq, hash from audit_events where log_id = ${log} order by seq`,
  );
  return new Map(rows.map((r) => [Number(r.seq), r.hash]));
}

/**
 * Every batch the child reported inserted (`batch <first> <last>`) is wholly in the chain or
 * wholly gone; `after` is the parent's own append, which may reuse a rolled-back seq.
 */
function expectWholeBatches(lines: readonly string[], stored: Map<number, string>, after: StoredEvent): void {
  const mine = (seq: number) => stored.has(seq) && !(seq === after.seq && stored.get(seq) === after.hash);
  for (const line of lines.filter((l) => l.startsWith('batch '))) {
    const [, first, last] = line.split(' ').map(Number);
    for (let seq = first!; seq <= last!; seq++) expect(mine(seq)).toBe(mine(first!));
  }
}

const postgresUrl = process.env.DATABASE_URL;

// Several processes and a crash need a server: PGlite is embedded in one process by design.
describe.runIf(postgresUrl)('group commit on Postgres', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(postgresUrl!);
    database = await openDatabase({ url: testDb.url });
    await migrate(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  describe('when 2 processes x 64 concurrent appenders write one log', () => {
    it('gives one gapless chain that verifies, holding every acknowledged append', async () => {
      const log = 'two-processes';
      const perProcess = 1_000;
      const appenders = ['a', 'b'].map((worker) =>
        startAppender({
          DATABASE_URL: testDb.url,
          LOG: log,
          COUNT: String(perProcess),
          CONCURRENCY: '64',
          WORKER: worker,
          GATE: '1',
        }),
      );
      await Promise.all(appenders.map((a) => a.line('ready')));
      for (const a of appenders) a.child.stdin!.end('go\n');
      const exits = await Promise.all(appenders.map((a) => a.exited));
      expect(exits).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);
      const acks = appenders.map((a) => acknowledged(a.lines));
      expect(acks.map((a) => a.size)).toEqual([perProcess, perProcess]);

      const stored = await storedChain(database, log);
      expect([...stored.keys()]).toEqual(Array.from({ length: 2 * perProcess }, (_, i) => i + 1));
      for (const ack of acks) for (const [seq, hash] of ack) expect(stored.get(seq)).toBe(hash);
      // Both processes really interleaved: each got seqs in the other's range.
      const [a, b] = acks.map((ack) => [...ack.keys()]);
      expect(Math.min(...a!)).toBeLessThan(Math.max(...b!));
      expect(Math.min(...b!)).toBeLessThan(Math.max(...a!));

      const report = await createLedger(database).verifyChain({ log });
      expect(report).toMatchObject({ ok: true, checked: 2 * perProcess, failures: [] });
    }, 20_000);
  });

  describe('when 2 processes race over the same idempotency keys with records operations', () => {
    it('keeps one proposal and one observation per key, and record tables that agree with the chain', async () => {
      const log = 'two-processes-records';
      const keys = 300;
      await createRecords(createLedger(database)).registerTool(
        { log, caller: { identity: 'user:ops' } },
        {
          server_id: 'payments',
          tool_name: 'refund',
          side_effect: 'compensatable',
          required_scopes: ['payments:write'],
          allowed_environments: ['prod'],
        },
      );
      const workers = ['a', 'b'].map(() =>
        startChild(recordsWorker, { DATABASE_URL: testDb.url, LOG: log, COUNT: String(keys) }),
      );
      await Promise.all(workers.map((w) => w.line('ready')));
      for (const w of workers) w.child.stdin!.end('go\n');
      const exits = await Promise.all(workers.map((w) => w.exited));
      expect(exits).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);

      const proposalOf = new Map<string, Set<string>>();
      const observationOf = new Map<string, Set<string>>();
      let fresh = 0;
      for (const line of workers.flatMap((w) => w.lines)) {
        const [word, a, b, replayed] = line.split(' ');
        const into = word === 'proposal' ? proposalOf : word === 'observed' ? observationOf : null;
        if (!into) continue;
        into.set(a!, (into.get(a!) ?? new Set()).add(b!));
        if (word === 'proposal' && replayed === 'false') fresh++;
      }
      // Each key was answered in both processes, always with one and the same proposal.
      expect(proposalOf.size).toBe(keys);
      for (const ids of proposalOf.values()) expect(ids.size).toBe(1);
      expect(fresh).toBe(keys);
      expect(observationOf.size).toBe(keys);
      for (const ids of observationOf.values()) expect(ids.size).toBe(1);

      const count = async (table: string) =>
        (
          await database.rows<{ n: number }>(
            sql`select count(*)::int as n from ${sql.identifier(table)} where log_id = ${log}`,
          )
        )[0]!.n;
      expect(await count('proposals')).toBe(keys);
      expect(await count('decisions')).toBe(keys);
      expect(await count('observations')).toBe(keys);
      const report = await createLedger(database).verifyChain({ log });
      expect(report).toMatchObject({ ok: true, failures: [], checked: 1 + 4 * keys });
      const failures: unknown[] = [];
      for await (const failure of checkRecordTables(database, log)) failures.push(failure);
      expect(failures).toEqual([]);
    }, 30_000);
  });

  describe('when an appender is killed with SIGKILL in the middle of a batch', () => {
    it('leaves no partial batch, keeps every acknowledged append, and the chain goes on', async () => {
      const log = 'killed';
      const proc = startAppender({
        DATABASE_URL: testDb.url,
        LOG: log,
        COUNT: '0',
        CONCURRENCY: '64',
        STALL_AFTER: '300',
      });
      // The stalled batch's rows are inserted and its transaction is open when we kill.
      const [, first, last] = (await proc.line('stalled ')).split(' ').map(Number);
      proc.child.kill('SIGKILL');
      expect(await proc.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(last! - first!).toBeGreaterThan(0);

      const acks = acknowledged(proc.lines);
      expect(acks.size).toBeGreaterThanOrEqual(300);
      // The next append waits for the dead batch's lock, i.e. for the server to roll it back.
      const ledger = createLedger(database);
      const after = await ledger.append({ log, kind: 'note', entity: 'after', actor: 'test', payload: {} });
      expect(after.seq).toBe(first);

      const stored = await storedChain(database, log);
      expect([...stored.keys()]).toEqual(Array.from({ length: first! }, (_, i) => i + 1));
      for (const [seq, hash] of acks) expect(stored.get(seq)).toBe(hash);
      expectWholeBatches(proc.lines, stored, after);
      const report = await ledger.verifyChain({ log });
      expect(report).toMatchObject({ ok: true, checked: first, failures: [] });
      await ledger.close();
    }, 20_000);

    it('keeps every acknowledged append when the kill lands at an arbitrary moment', async () => {
      const log = 'killed-anytime';
      const proc = startAppender({ DATABASE_URL: testDb.url, LOG: log, COUNT: '0', CONCURRENCY: '64' });
      // Kill somewhere in the stream of batches: acks and commits are racing the signal.
      await proc.line('ack 500 ');
      proc.child.kill('SIGKILL');
      await proc.exited;

      // Taking the lock after the dead process settles its last batch: committed or rolled back.
      const ledger = createLedger(database);
      const after = await ledger.append({ log, kind: 'note', entity: 'after', actor: 'test', payload: {} });
      const stored = await storedChain(database, log);
      expect([...stored.keys()]).toEqual(Array.from({ length: after.seq }, (_, i) => i + 1));
      const acks = acknowledged(proc.lines);
      expect(acks.size).toBeGreaterThanOrEqual(500);
      for (const [seq, hash] of acks) expect(stored.get(seq)).toBe(hash);
      expectWholeBatches(proc.lines, stored, after);
      expect((await ledger.verifyChain({ log })).ok).toBe(true);
      await ledger.close();
    }, 20_000);
  });
});

/** A header as a forger or a broken exporter might write it: any strings, any seq. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string(),
  fc.constantFrom('', '\\ud800', '\u2028', 'é😀'),
);
const anyHeader = fc.record({
  log: anyText,
  seq: fc.oneof(fc.integer(), fc.double(), fc.constantFrom(1, -0, 2 ** 53, 1e21)),
  kind: anyText,
  entity: anyText,
  actor: anyText,
  at: anyText,
  payload_hash: fc.oneof(
    anyText,
    fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }),
  ),
  prev_hash: fc.oneof(anyText, fc.constant(GENESIS_PREV_HASH)),
});

// The checker hashes headers with eventHashOf (fast path included); it
// must agree with what the ledger writes on every input: same hash,
// or the same refusal.
describe('createChainChecker', () => {
  describe('when an event header holds arbitrary strings and numbers', () => {
    it('accepts the hash eventHashOf gives it, or refuses it as eventHashOf does', () => {
      fc.assert(
        fc.property(anyHeader, (header) => {
          const payload = '{}';
          let expected: string | AuditError;
          try {
            expected = eventHashOf(header);
          } catch (error) {
            if (!isAuditError(error)) throw error;
            expected = error;
          }
          const checker = createChainChecker({ log: header.log });
          const event: StoredEvent = {
            ...header,
            payload,
            payload_hash: header.payload_hash,
            hash: typeof expected === 'string' ? expected : '0'.repeat(64),
          };
          if (typeof expected === 'string') {
            checker.check(event);
            const codes = checker.finish().failures.map((f) => f.code);
            expect(codes).not.toContain('HASH_MISMATCH');
          } else {
            expect(() => checker.check(event)).toThrow(expect.objectContaining({ code: expected.code }));
          }
        }),
        { numRuns: 2_000 },
      );
    });

    it('reports HASH_MISMATCH when any header member differs from what was hashed', () => {
      fc.assert(
        fc.property(
          anyHeader,
          fc.constantFrom('actor', 'at', 'entity', 'kind', 'payload_hash', 'prev_hash', 'seq'),
          (header, field) => {
            fc.pre(!(typeof header.seq === 'number' && !Number.isFinite(header.seq)));
            let hash: string;
            try {
              hash = eventHashOf(header);
            } catch {
              return;
            }
            const edited = {
              ...header,
              [field]: field === 'seq' ? Number(header.seq) + 1 : `${header[field]}x`,
            };
            fc.pre(JSON.stringify(edited) !== JSON.stringify(header));
            const checker = createChainChecker({ log: header.log });
            checker.check({ ...edited, payload: '{}', hash });
            expect(checker.finish().failures.map((f) => f.code)).toContain('HASH_MISMATCH');
          },
        ),
        { numRuns: 1_000 },
      );
    });
  });

  describe('when the stored payload is checked', () => {
    it('hashes the stored bytes as they are', () => {
      const payload = '{"b":1,"a":2}';
      const header = {
        log: 'l',
        seq: 1,
        kind: 'k',
        entity: 'e',
        actor: 'a',
        at: '2026-01-01T00:00:00.000Z',
        payload_hash: payloadHashOf(payload),
        prev_hash: GENESIS_PREV_HASH,
      };
      const checker = createChainChecker({ log: 'l' });
      // Not canonical (keys unsorted), yet these are the bytes that were hashed: no failure.
      checker.check({ ...header, payload, hash: eventHashOf(header) });
      expect(checker.finish()).toMatchObject({ ok: true, checked: 1 });
    });
  });
});

// Reads page by seq range (not ORDER BY ... LIMIT, whose plan is O(n) without statistics):
// a gap as wide as several pages must be skipped over, never taken for the end of the log.
describe.each(testBackends())('reading a damaged log on $name', ({ open }) => {
  let database: Database;
  const log = 'gappy';

  beforeAll(async () => {
    database = await open();
    const ledger = createLedger(database);
    for (let i = 1; i <= 20; i++) {
      await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'test', payload: { i } });
    }
    await ledger.close();
    // As the database owner could: delete seq 4..11 with the append-only triggers off.
    await tamper(database, sql`delete from audit_events where log_id = ${log} and seq between 4 and 11`);
  });
  afterAll(async () => {
    await database?.close();
  });

  describe('when a gap spans whole pages', () => {
    it('verifies past it and reports the gap at the first row after it', async () => {
      const ledger = createLedger(database);
      const report = await ledger.verifyChain({ log, pageSize: 2 });
      expect(report.checked).toBe(12);
      expect(report.head?.seq).toBe(20);
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([
        [12, 'SEQ_GAP'],
        [12, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('streams every remaining event in seq order', async () => {
      const ledger = createLedger(database);
      const seqs: number[] = [];
      for await (const event of ledger.streamEvents(log, { pageSize: 3 })) seqs.push(event.seq);
      expect(seqs).toEqual([1, 2, 3, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    });

    it('fills a page of events from past the gap', async () => {
      const ledger = createLedger(database);
      expect((await ledger.events(log, { after: 2, limit: 3 })).map((e) => e.seq)).toEqual([3, 12, 13]);
      expect((await ledger.events(log, { after: 17, limit: 5 })).map((e) => e.seq)).toEqual([18, 19, 20]);
    });
  });
});
