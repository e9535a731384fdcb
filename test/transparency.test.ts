import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { generateNoteKeys, openCheckpoint, parseSignerKey, signNote } from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  migrate,
  signLogCheckpoint,
} from '@vouch/ledger';
import { rewriteLog, tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { runVouchWithEnv, startVouchServer, type VouchServer } from './helpers/server';

// The done-when of issue 6, end to end: a real `vouch serve` process signs checkpoints after
// appends; an auditor keeps one and runs the real `vouch verify --since` against the server
// and against exported bundles; an operator with full database access and the signing key
// rewrites history in three ways. Each rewrite is caught with its own verdict, including
// the full rewrite that recomputes the chain, which plain chain verification cannot see.

const backends = serverBackends();

const PREFIX = 'audit.example/vouch';
const keys = generateNoteKeys(PREFIX);
const signing = {
  origin: (log: string) => logOrigin(PREFIX, log),
  signers: [parseSignerKey(keys.signerKey)],
};
/** The logs an operator will tamper with, each 8 events with checkpoints at 4 and 8. */
const LOGS = ['truncated', 'truncated-under-checkpoint', 'rewritten', 'forked'] as const;
/**
 * The logs an owner rewrites underneath an untouched Merkle tree and untouched checkpoints
 * (the server keeps serving valid proofs), or whose checkpoints it withholds, plus two the
 * auditor keeps with another witness's cosignature. Same shape as LOGS.
 */
const WITNESS_LOGS = [
  'edited',
  'edited-after-trust',
  'deleted',
  'swapped',
  'withheld',
  'cosigned',
  'cosigned-grown',
] as const;

const note = (log: string, i: number, text = `event ${i}`) => ({
  log,
  kind: 'note',
  entity: `e${i}`,
  actor: 'user:alice',
  payload: { i, text },
});

/** Run `vouch` to completion with exactly this environment. */
const vouch = runVouchWithEnv;

describe.each(backends)('transparency end to end on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer | undefined;
  let auditor: string;
  const serverEnv = { VOUCH_LOG_SIGNING_KEY: keys.signerKey, VOUCH_CHECKPOINT_INTERVAL_MS: '0' };
  const trustFile = (log: string) => join(dir, `${log}.checkpoint`);

  /** Work on the database as its operator, with the server stopped (PGlite serves one process). */
  async function asOperator(work: (database: Database, ledger: Ledger) => Promise<void>): Promise<void> {
    await server?.stop();
    server = undefined;
    const database = await env.open();
    const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    try {
      await work(database, ledger);
    } finally {
      await ledger.close();
      await database.close();
    }
  }

  async function start(): Promise<VouchServer> {
    server = await startVouchServer({ storage: env.storage, cwd: dir, env: serverEnv });
    return server;
  }

  /** `vouch verify --since` against the running server, with the JSON report parsed. */
  async function sinceUrl(log: string, extra: string[] = []) {
    const result = await vouch(
      [
        'verify',
        '--since',
        trustFile(log),
        '--url',
        server!.url,
        '--key',
        auditor,
        '--public-key',
        keys.verifierKey,
        '--json',
        ...extra,
      ],
      {},
      dir,
    );
    return { ...result, report: result.code === 2 ? result.stderr : JSON.parse(result.stdout) };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-transparency-${backend.name}-`));
    env = await backend.setup(dir);
    const database = await env.open();
    await migrate(database);
    await database.close();
    await asOperator(async (db, ledger) => {
      for (const log of [...LOGS, ...WITNESS_LOGS]) {
        for (let i = 1; i <= 8; i++) {
          await ledger.append(note(log, i));
          if (i === 4 || i === 8) await signLogCheckpoint(db, { log, ...signing });
        }
      }
    });
    const running = await start();
    const created = await running.call('POST', '/v1/keys', {
      key: running.adminKey,
      body: { identity: 'user:audrey', roles: ['auditor'] },
    });
    expect(created.status).toBe(201);
    auditor = ((await created.json()) as { secret: string }).secret;
  });
  afterAll(async () => {
    await server?.stop();
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The server's latest checkpoint of `log` once it covers `size` events (it signs after the append commits). */
  async function checkpointAtLeast(log: string, size: number): Promise<{ tree_size: number; note: string }> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const response = await server!.call('GET', `/v1/logs/${log}/checkpoint`, { key: auditor });
      if (response.status === 200) {
        const body = (await response.json()) as { tree_size: number; note: string };
        if (body.tree_size >= size) return body;
      }
      // Signing happens in the server process: there is no event to await over HTTP.
      await delay(25);
    }
    throw new Error(`no checkpoint of ${log} at ${size} events`);
  }

  const headOf = async (log: string) =>
    (
      (await (await server!.call('GET', `/v1/logs/${log}/head`, { key: auditor })).json()) as {
        head: { seq: number };
      }
    ).head.seq;

  describe('when the server appends', () => {
    it('signs a checkpoint of the head, and verify --since follows the log as it only grows', async () => {
      const first = await checkpointAtLeast('system', await headOf('system'));
      expect(
        openCheckpoint(first.note, { verifiers: [keys.verifierKey], origin: `${PREFIX}/system` }).ok,
      ).toBe(true);
      const init = await sinceUrl('system', ['--init', '--log', 'system']);
      expect([init.code, init.report.status]).toEqual([0, 'CONSISTENT']);

      await server!.call('POST', '/v1/keys', {
        key: server!.adminKey,
        body: { identity: 'user:ann', roles: ['auditor'] },
      });
      const grown = await checkpointAtLeast('system', first.tree_size + 1);
      const again = await sinceUrl('system');
      expect([again.code, again.report.status]).toEqual([0, 'CONSISTENT']);
      expect(again.report.latest.tree_size).toBe(grown.tree_size);
      expect(readFileSync(trustFile('system'), 'utf8')).toBe(grown.note);
    });

    it('serves the checkpoint note an auditor keeps for each log', async () => {
      // What --init saves, fetched as a witness would: the bare signed note.
      for (const log of [...LOGS, ...WITNESS_LOGS]) {
        const response = await server!.call('GET', `/v1/logs/${log}/checkpoint`, {
          key: auditor,
          headers: { accept: 'text/plain' },
        });
        const text = await response.text();
        const opened = openCheckpoint(text, { verifiers: [keys.verifierKey], origin: `${PREFIX}/${log}` });
        expect(opened.ok && opened.checkpoint.treeSize).toBe(8);
        writeFileSync(trustFile(log), text);
      }
    });
  });

  describe('when the operator rewrites history with database access and the signing key', () => {
    const trusted: Record<string, string> = {};
    /** Cut `log` back to `size` events: events, the Merkle nodes over later leaves, and optionally later checkpoints. */
    const cutBack = async (database: Database, log: string, size: number, checkpoints = true) => {
      await tamper(
        database,
        sql`delete from audit_events where log_id = ${log} and seq > ${size}`,
        sql`delete from merkle_nodes where log_id = ${log} and (idx + 1) * (1::bigint << level) > ${size}`,
        ...(checkpoints ? [sql`delete from checkpoints where log_id = ${log} and tree_size > ${size}`] : []),
      );
    };

    beforeAll(async () => {
      for (const log of LOGS) trusted[log] = readFileSync(trustFile(log), 'utf8');
      await asOperator(async (database, ledger) => {
        // 1. Delete the last 2 events, and every trace of them.
        await cutBack(database, 'truncated', 6);
        // 2. Delete the last 2 events, but leave the checkpoints that covered them.
        await cutBack(database, 'truncated-under-checkpoint', 6, false);
        // 3. Rewrite event 3 and recompute the chain, the Merkle tree and a checkpoint after it.
        await cutBack(database, 'rewritten', 2);
        await ledger.append(note('rewritten', 3, 'refund approved by nobody'));
        for (let i = 4; i <= 8; i++) await ledger.append(note('rewritten', i));
        await signLogCheckpoint(database, { log: 'rewritten', ...signing });
        // 4. Fork from the old checkpoint at 4 events into a longer, different history.
        await cutBack(database, 'forked', 4);
        for (let i = 5; i <= 10; i++) await ledger.append(note('forked', i, 'another history'));
        await signLogCheckpoint(database, { log: 'forked', ...signing });

        // The full rewrite is a valid chain: plain chain verification cannot tell.
        expect(await ledger.verifyChain({ log: 'rewritten' })).toMatchObject({ ok: true, checked: 8 });
      });
    });

    it('verify --since --bundle catches each rewrite in an exported bundle', {
      timeout: 90_000,
    }, async () => {
      const exportEnv = { ...env.storage, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
      // Export signs at the head, so both truncations look alike in a bundle: export one.
      const logs = ['truncated', 'rewritten', 'forked'] as const;
      const bundle = (log: string) => join(dir, `${log}.bundle.jsonl`);
      for (const log of logs) {
        // One at a time: a PGlite data directory serves one process.
        const exported = await vouch(['export', '--log', log], exportEnv, dir);
        expect(exported.code).toBe(0);
        writeFileSync(bundle(log), exported.stdout);
      }
      const [alone, ...checked] = await Promise.all([
        // On its own, the rewritten bundle is intact: only the trusted checkpoint exposes it.
        vouch(['verify', '--bundle', bundle('rewritten'), '--public-key', keys.verifierKey], {}, dir),
        ...logs.map((log) =>
          vouch(
            [
              'verify',
              '--since',
              trustFile(log),
              '--bundle',
              bundle(log),
              '--public-key',
              keys.verifierKey,
              '--json',
            ],
            {},
            dir,
          ),
        ),
      ]);
      expect(alone!.code).toBe(0);
      expect(
        Object.fromEntries(
          logs.map((log, i) => [log, [checked[i]!.code, JSON.parse(checked[i]!.stdout).status]]),
        ),
      ).toEqual({
        truncated: [1, 'TRUNCATED'],
        rewritten: [1, 'FORKED'],
        forked: [1, 'FORKED'],
      });
    });

    it('verify --since --url catches each rewrite on the live server and keeps the trusted checkpoints', async () => {
      await start();
      const results = await Promise.all(LOGS.map((log) => sinceUrl(log)));
      expect(
        Object.fromEntries(LOGS.map((log, i) => [log, [results[i]!.code, results[i]!.report.status]])),
      ).toEqual({
        truncated: [1, 'TRUNCATED'],
        'truncated-under-checkpoint': [1, 'TRUNCATED'],
        rewritten: [1, 'FORKED'],
        forked: [1, 'FORKED'],
      });
      for (const log of LOGS) expect(readFileSync(trustFile(log), 'utf8')).toBe(trusted[log]);
    });
  });

  describe('when the owner rewrites events under the stored tree and checkpoints', () => {
    const witness = generateNoteKeys('witness.example/w1');
    const trusted: Record<string, string> = {};
    /** The note with another witness's signature line added, as a cosigning witness network would hand it out. */
    const cosign = (noteText: string) => {
      const text = noteText.slice(0, noteText.lastIndexOf('\n\n') + 1);
      const signed = signNote(text, [parseSignerKey(witness.signerKey)]);
      return noteText + signed.slice(signed.lastIndexOf('\n\n') + 2);
    };
    const changed = (i: number) => JSON.stringify({ i, text: 'refund approved by nobody' });

    beforeAll(async () => {
      // edited-after-trust: the auditor last saw 4 events; the rewrite is after them.
      const atFour = await server!.call('GET', '/v1/logs/edited-after-trust/checkpoints/4', {
        key: auditor,
        headers: { accept: 'text/plain' },
      });
      writeFileSync(trustFile('edited-after-trust'), await atFour.text());
      for (const log of ['cosigned', 'cosigned-grown'])
        writeFileSync(trustFile(log), cosign(readFileSync(trustFile(log), 'utf8')));
      for (const log of WITNESS_LOGS) trusted[log] = readFileSync(trustFile(log), 'utf8');

      await asOperator(async (database, ledger) => {
        // Rewrite event 3 and recompute every later hash: a valid chain, the same length.
        await rewriteLog(database, 'edited', (events) =>
          events.map((e) => (e.seq === 3 ? { ...e, payload: changed(3) } : e)),
        );
        await rewriteLog(database, 'edited-after-trust', (events) =>
          events.map((e) => (e.seq === 6 ? { ...e, payload: changed(6) } : e)),
        );
        // Delete event 3, renumber, and forge one at the tail so the log has its old length.
        await rewriteLog(database, 'deleted', (events) => [
          ...events.filter((e) => e.seq !== 3),
          { ...events[7]!, entity: 'e9', payload: changed(9) },
        ]);
        // Swap events 3 and 5, each taking the other's time so the times still never go back
        // (a careful attacker's swap: verifyChain would report TIME_REGRESSION otherwise).
        await rewriteLog(database, 'swapped', (events) =>
          events.map((e, i) =>
            i === 2 ? { ...events[4]!, at: e.at } : i === 4 ? { ...events[2]!, at: e.at } : e,
          ),
        );
        // Its events and checkpoints gone (a server that lost only its checkpoints signs its
        // intact events again at start-up): the server has nothing to serve for it.
        await tamper(database, sql`delete from checkpoints where log_id = 'withheld'`);
        await tamper(database, sql`delete from audit_events where log_id = 'withheld'`);
        // An honest append to a log the auditor keeps cosigned.
        for (let i = 9; i <= 10; i++) await ledger.append(note('cosigned-grown', i));
        await signLogCheckpoint(database, { log: 'cosigned-grown', ...signing });

        // Each rewrite is a valid chain: every event recomputes and links. Only what was kept
        // from earlier shows it: the stored tree and checkpoints left as they were (here), and
        // the witness's trusted checkpoint (below) once those are rewritten too.
        for (const log of ['edited', 'deleted', 'swapped']) {
          const report = await ledger.verifyChain({ log });
          expect(report.checked).toBe(8);
          expect([...new Set(report.failures.map((f) => f.code))].sort()).toEqual([
            'CHECKPOINT_MISMATCH',
            'MERKLE_MISMATCH',
          ]);
        }
      });
      await start();
    });

    it('catches a rewritten, a deleted and a reordered event although the served proofs verify', async () => {
      const logs = ['edited', 'edited-after-trust', 'deleted', 'swapped'] as const;
      // The server still proves its stored tree: the proof from 4 to 8 events verifies.
      const proof = await server!.call('GET', '/v1/logs/edited/proofs/consistency?first=4&second=8', {
        key: auditor,
      });
      expect(proof.status).toBe(200);
      const results = await Promise.all(logs.map((log) => sinceUrl(log)));
      expect(
        Object.fromEntries(logs.map((log, i) => [log, [results[i]!.code, results[i]!.report.status]])),
      ).toEqual({
        edited: [1, 'FORKED'],
        // The 4 trusted events are intact; the served events no longer hash to the signed root at 8.
        'edited-after-trust': [1, 'BROKEN'],
        deleted: [1, 'FORKED'],
        swapped: [1, 'FORKED'],
      });
      expect(results[0]!.report).toMatchObject({ checked: 8, latest: { tree_size: 8 }, saved: null });
      expect(results[1]!.report.failures).toContainEqual(expect.objectContaining({ code: 'ROOT_MISMATCH' }));
      for (const log of logs) expect(readFileSync(trustFile(log), 'utf8')).toBe(trusted[log]);
    });

    it('says FORKED in plain words without --json, and exits 1', async () => {
      const plain = await vouch(
        [
          'verify',
          '--since',
          trustFile('edited'),
          '--url',
          server!.url,
          '--key',
          auditor,
          '--public-key',
          keys.verifierKey,
        ],
        {},
        dir,
      );
      expect(plain.code).toBe(1);
      expect(plain.stdout).toMatch(/^log edited: FORKED — /);
      expect(plain.stdout).toContain('checked: 8 events');
    });

    it('exits 1 with WITHHELD when the server has no checkpoint to serve', async () => {
      const result = await sinceUrl('withheld');
      expect([result.code, result.report.status]).toEqual([1, 'WITHHELD']);
      expect(readFileSync(trustFile('withheld'), 'utf8')).toBe(trusted.withheld);
    });

    it('exits 2 when nothing answers, and keeps the trusted file', async () => {
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as { port: number };
          probe.close(() => resolve(port));
        });
      });
      const result = await vouch(
        [
          'verify',
          '--since',
          trustFile('edited'),
          '--url',
          `http://127.0.0.1:${port}`,
          '--key',
          auditor,
          '--public-key',
          keys.verifierKey,
          '--json',
        ],
        {},
        dir,
      );
      expect(result.code).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, error: { code: 'SERVER_UNREACHABLE' } });
      expect(result.stderr).toContain('cannot reach');
      expect(readFileSync(trustFile('edited'), 'utf8')).toBe(trusted.edited);
    });

    it('never replaces a cosigned trusted checkpoint with the log-only one it is served', async () => {
      const [same, grown] = await Promise.all([sinceUrl('cosigned'), sinceUrl('cosigned-grown')]);
      expect([same.code, same.report.status, same.report.saved]).toEqual([0, 'CONSISTENT', null]);
      // The grown log's checkpoint goes beside the file, to check from next time.
      const ahead = `${trustFile('cosigned-grown')}.ahead`;
      expect([grown.code, grown.report.status, grown.report.saved]).toEqual([0, 'CONSISTENT', ahead]);
      expect(grown.report.latest.tree_size).toBe(10);
      expect(grown.report.kept).toContain('witness.example/w1');
      expect(readFileSync(ahead, 'utf8')).toContain('\n10\n');
      for (const log of ['cosigned', 'cosigned-grown'])
        expect(readFileSync(trustFile(log), 'utf8')).toBe(trusted[log]);
    });
  });
});
