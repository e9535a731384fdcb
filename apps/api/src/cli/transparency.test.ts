import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys, openCheckpoint, parseSignerKey, signNote } from '@vouch/audit';
import {
  createLedger,
  type Database,
  issueApiKey,
  merkleAppendHook,
  migrate,
  OPERATOR_ACTOR,
  SIGNING_KEY_FILE,
  signLogCheckpoint,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { recordingIo, runVouch } from '../testing/cli-io';
import { cliStorages } from '../testing/cli-storages';
import { verifySinceCommand } from './verify-since';

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-transparency-cli-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const fakeIo = (env: NodeJS.ProcessEnv) => recordingIo({ env, cwd: root });

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  return runVouch(argv, { env, cwd: root });
}

const note = (log: string, i: number) => ({
  log,
  kind: 'note',
  entity: `e${i}`,
  actor: 'user:alice',
  payload: { i },
});

describe('vouch keys log-new and log-public', () => {
  describe('when PGlite has no key yet', () => {
    it('log-public makes one in the data directory (0600) and prints its verifier key, the same each time', async () => {
      const dataDir = join(root, 'keys-data');
      const first = await run(['keys', 'log-public'], {
        VOUCH_DATA_DIR: dataDir,
        VOUCH_LOG_ORIGIN: 'audit.example/v',
      });
      expect(first.code).toBe(0);
      expect(first.out).toMatch(/^audit\.example\/v\+[0-9a-f]{8}\+\S+\n$/);
      expect(statSync(join(dataDir, SIGNING_KEY_FILE)).mode & 0o777).toBe(0o600);
      const again = await run(['keys', 'log-public', '--json'], { VOUCH_DATA_DIR: dataDir });
      expect(JSON.parse(again.out)).toMatchObject({
        origin_prefix: 'audit.example/v',
        verifier_keys: [first.out.trim()],
      });
    });
  });

  describe('when the key comes from VOUCH_LOG_SIGNING_KEY', () => {
    it('log-new prints a signer key whose verifier log-public prints, one per rotated key', async () => {
      const made = await run(['keys', 'log-new', '--origin', 'audit.example/v']);
      const next = await run(['keys', 'log-new', '--origin', 'audit.example/v']);
      expect(made.code).toBe(0);
      const env = {
        DATABASE_URL: 'postgres://unused',
        VOUCH_LOG_SIGNING_KEY: `${made.out.trim()} ${next.out.trim()}`,
      };
      const shown = await run(['keys', 'log-public'], env);
      expect(shown.out.trim().split('\n')).toHaveLength(2);
      expect(made.err).toContain(shown.out.split('\n')[0]);
    });

    it('exits 2 for a key that does not parse, and on Postgres without one', async () => {
      expect((await run(['keys', 'log-public'], { VOUCH_LOG_SIGNING_KEY: 'PRIVATE+KEY+nope' })).code).toBe(2);
      const none = await run(['keys', 'log-public'], { DATABASE_URL: 'postgres://unused' });
      expect(none.code).toBe(2);
      expect(none.err).toContain('VOUCH_LOG_SIGNING_KEY');
    });
  });
});

const storages = cliStorages(() => root);

describe.each(storages)('vouch export and vouch verify --bundle on $name', (storage) => {
  const keys = generateNoteKeys('audit.example/v');
  let env: NodeJS.ProcessEnv;
  let drop: () => Promise<void>;
  let bundle: string;
  const file = (name: string, text: string) => {
    const path = join(root, `${storage.name}-${name}`);
    writeFileSync(path, text);
    return path;
  };

  beforeAll(async () => {
    const made = await storage.make();
    env = { ...made.env, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
    drop = made.drop;
    const database = await made.open();
    await migrate(database);
    const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    for (let i = 1; i <= 6; i++) await ledger.append(note('orders', i));
    // A history every hash of which is right, and that the server would never have written:
    // the requester answers their own approval request (appended around the records service).
    const agent = 'agent:billing';
    const payload_hash = 'aa'.repeat(32);
    const at = { server_id: 'payments', tool_name: 'refund' };
    for (const [kind, entity, payload] of [
      ['proposal', 'prop_1', { id: 'prop_1', requester: agent, payload_hash, ...at, postconditions: [] }],
      [
        'approval_request',
        'req_1',
        { id: 'req_1', proposal_id: 'prop_1', requester: agent, payload_hash, ...at },
      ],
      [
        'approval_resolution',
        'res_1',
        {
          id: 'res_1',
          request_id: 'req_1',
          resolution: 'approved',
          resolver: agent,
          validity: 'once',
          valid_until: null,
        },
      ],
    ] as const) {
      await ledger.append({ log: 'forged', kind, entity, actor: agent, payload });
    }
    // A log pinned to the built-in policy, and then an external engine's allow in it.
    await ledger.append({
      log: 'pinned',
      kind: 'policy.configured',
      entity: 'policy',
      actor: 'vouch:server',
      payload: { format: 'policy/1', policy: { engine: 'built_in' } },
    });
    await ledger.append({
      log: 'pinned',
      kind: 'decision',
      entity: 'dec_1',
      actor: 'service:opa',
      payload: {
        id: 'dec_1',
        proposal_id: 'prop_1',
        verdict: 'allow',
        source: 'opa',
        decided_by: 'service:opa',
      },
    });
    // A key in the system log that no admin issued: every hash right, and the issuer no admin.
    await issueApiKey(ledger, {
      id: 'key_forged',
      identity: 'user:mallory',
      roles: ['admin'],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: 'user:mallory',
      keyHash: 'cd'.repeat(32),
    });
    await ledger.close();
    await database.close();
  });
  afterAll(async () => {
    await drop?.();
  });

  describe('when no signing key is configured and the log has no checkpoint', () => {
    // Runs first: the exports below store checkpoints of this log.
    // PGlite makes a key in its data directory; only Postgres has no key by default.
    it.runIf(storage.name === 'postgres')('exits 2 and says how to make and set a key', async () => {
      const { VOUCH_LOG_SIGNING_KEY: _key, ...withoutKey } = env;
      const { code, err } = await run(['export', '--log', 'orders'], withoutKey);
      expect(code).toBe(2);
      expect(err).toContain('vouch keys log-new');
      expect(err).toContain('VOUCH_LOG_SIGNING_KEY');
    });
  });

  describe('when a log is exported', () => {
    it('writes a bundle that verifies offline with the public key, and reports progress on stderr', async () => {
      const exported = await run(['export', '--log', 'orders'], env);
      expect(exported.code).toBe(0);
      expect(exported.err).toContain('6 events');
      bundle = exported.out;
      const lines = bundle.trimEnd().split('\n');
      expect(JSON.parse(lines[0]!)).toMatchObject({ format: 'vouch-bundle/2', log: 'orders', treeSize: 6 });
      expect(lines).toHaveLength(8);
      const path = file('bundle.jsonl', bundle);
      const verified = await run(['verify', '--bundle', path, '--public-key', keys.verifierKey]);
      expect(verified.code).toBe(0);
      expect(verified.out).toMatch(
        /INTACT — 6 events verified; checkpoint audit\.example\/v\/orders at 6 events/,
      );
      const json = await run(['verify', '--bundle', path, '--public-key', keys.verifierKey, '--json']);
      expect(JSON.parse(json.out)).toMatchObject({ ok: true, checked: 6, checkpoint: { treeSize: 6 } });
    });
  });

  describe('when the bundle was edited', () => {
    it('exits 1 and names the edited event', async () => {
      const edited = bundle.replace('{\\"i\\":3}', '{\\"i\\":33}');
      expect(edited).not.toBe(bundle);
      const path = file('edited.jsonl', edited);
      const { code, out } = await run([
        'verify',
        '--bundle',
        path,
        '--public-key',
        keys.verifierKey,
        '--json',
      ]);
      expect(code).toBe(1);
      expect(
        JSON.parse(out).failures.map((f: { seq: number; code: string }) => [f.seq, f.code]),
      ).toContainEqual([3, 'PAYLOAD_HASH_MISMATCH']);
    });
  });

  describe('when a record in the bundle breaks a rule the server enforces', () => {
    it('exits 1 with RECORD_RULE_VIOLATION naming the rule, though every hash and signature holds', async () => {
      const exported = await run(['export', '--log', 'forged'], env);
      expect(exported.code).toBe(0);
      const path = file('forged.jsonl', exported.out);
      const { code, out } = await run([
        'verify',
        '--bundle',
        path,
        '--public-key',
        keys.verifierKey,
        '--json',
      ]);
      expect(code).toBe(1);
      const report = JSON.parse(out);
      expect(report.checkpoint).toMatchObject({ treeSize: 3 });
      // The forged records break other rules too (a payload hash of nothing it shows, an
      // answer without its bounds): every failure is a rule, the self-approval among them.
      expect(report.failures.map((f: { code: string }) => f.code)).toEqual(
        report.failures.map(() => 'RECORD_RULE_VIOLATION'),
      );
      expect(report.failures).toContainEqual(
        expect.objectContaining({
          seq: 3,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'SELF_APPROVAL',
          id: 'res_1',
        }),
      );
    });
  });

  describe('when a decision comes from another source than the policy the log pinned', () => {
    it('exits 1 with DECISION_SOURCE_NOT_PINNED at the decision', async () => {
      const exported = await run(['export', '--log', 'pinned'], env);
      expect(exported.code).toBe(0);
      const path = file('pinned.jsonl', exported.out);
      const args = ['verify', '--bundle', path, '--public-key', keys.verifierKey, '--json'];
      const { code, out } = await run(args);
      expect(code).toBe(1);
      expect(JSON.parse(out).failures).toContainEqual(
        expect.objectContaining({
          seq: 2,
          code: 'RECORD_RULE_VIOLATION',
          rule: 'DECISION_SOURCE_NOT_PINNED',
        }),
      );
    });
  });

  describe('when the system log holds a key no admin issued', () => {
    it('exits 1 with KEY_ISSUER_FORBIDDEN, though every hash and signature holds', async () => {
      const exported = await run(['export', '--log', 'system'], env);
      expect(exported.code).toBe(0);
      const path = file('system.jsonl', exported.out);
      const { code, out } = await run([
        'verify',
        '--bundle',
        path,
        '--public-key',
        keys.verifierKey,
        '--json',
      ]);
      expect(code).toBe(1);
      expect(JSON.parse(out).failures).toEqual([
        expect.objectContaining({
          code: 'RECORD_RULE_VIOLATION',
          rule: 'KEY_ISSUER_FORBIDDEN',
          table: 'api_keys',
          id: 'key_forged',
        }),
      ]);
    });
  });

  describe('when the number of threads is chosen', () => {
    it.each(['1', '2', '3'])('gives the same report with --threads %s', async (threads) => {
      const path = file('forged.jsonl', (await run(['export', '--log', 'forged'], env)).out);
      const args = ['verify', '--bundle', path, '--public-key', keys.verifierKey, '--json'];
      const [chosen, fallback] = await Promise.all([run([...args, '--threads', threads]), run(args)]);
      expect(chosen.code).toBe(1);
      expect(JSON.parse(chosen.out)).toEqual(JSON.parse(fallback.out));
      expect(JSON.parse(chosen.out).failures).toContainEqual(
        expect.objectContaining({ code: 'RECORD_RULE_VIOLATION', rule: 'SELF_APPROVAL' }),
      );
    });

    it.each(['0', 'two', '1.5'])('exits 2 naming --threads for --threads %s', async (threads) => {
      const path = file('bundle.jsonl', bundle);
      const { code, err } = await run([
        'verify',
        '--bundle',
        path,
        '--public-key',
        keys.verifierKey,
        '--threads',
        threads,
      ]);
      expect(code).toBe(2);
      expect(err).toContain(`--threads ${threads}`);
    });
  });

  describe('when the auditor trusts another key', () => {
    it('exits 1 with NO_TRUSTED_SIGNATURE', async () => {
      const path = file('other.jsonl', bundle);
      const other = generateNoteKeys('audit.example/v').verifierKey;
      const { code, out } = await run(['verify', '--bundle', path, '--public-key', other, '--json']);
      expect(code).toBe(1);
      expect(JSON.parse(out).failures.map((f: { code: string }) => f.code)).toContain('NO_TRUSTED_SIGNATURE');
    });
  });

  describe('when the arguments are wrong', () => {
    it.each([
      [['export']],
      [['export', '--log', 'bad log']],
      [['verify', '--bundle', '/nonexistent/bundle.jsonl', '--public-key', keys.verifierKey]],
      [['verify', '--bundle', '/nonexistent/bundle.jsonl']],
      [['verify', '--bundle', '/nonexistent/bundle.jsonl', '--public-key', 'not-a-key']],
    ])('exits 2 for %j', async (argv) => {
      const { code, err } = await run(argv, env);
      expect(code).toBe(2);
      expect(err.length).toBeGreaterThan(10);
    });
  });
});

describe('vouch verify --since against a server', () => {
  const keys = generateNoteKeys('audit.example/v');
  const signers = [parseSignerKey(keys.signerKey)];
  let database: Database;
  let app: VouchApp;
  let auditor: string;
  /**
   * Which stored log plays "orders" for the server the tool talks to. The others are forged
   * histories: their events hash another log id, so none of them extends the real one.
   */
  let serving = 'orders';
  /** What the server does to the checkpoint note it serves, when it lies about it. */
  let rewriteCheckpoint: ((note: string) => string) | null = null;
  const fetchFromApp: typeof fetch = async (input, init) => {
    const response = await app.request(
      String(input).replace('/v1/logs/orders/', `/v1/logs/${serving}/`),
      init,
    );
    if (rewriteCheckpoint === null || !String(input).endsWith('/checkpoint') || !response.ok) return response;
    return new Response(rewriteCheckpoint(await response.text()), {
      status: response.status,
      headers: response.headers,
    });
  };

  async function history(log: string, payloads: number[]): Promise<void> {
    const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    for (const i of payloads) await ledger.append(note(log, i));
    await ledger.close();
    // Every history claims to be log "orders": a forger signs with the real origin and key.
    await signLogCheckpoint(database, { log, origin: () => 'audit.example/v/orders', signers });
  }

  async function since(file: string, extra: string[] = []) {
    const f = fakeIo({ VOUCH_API_KEY: auditor });
    const argv = [
      '--since',
      file,
      '--url',
      'http://vouch.test',
      '--public-key',
      keys.verifierKey,
      '--json',
      ...extra,
    ];
    const code = await verifySinceCommand.run(argv, { ...f.io, fetch: fetchFromApp });
    return { code, out: f.out(), err: f.err(), report: code === 2 ? null : JSON.parse(f.out()) };
  }

  beforeAll(async () => {
    database = await testBackends()[0]!.open();
    const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    const store = createKeyStore(ledger);
    app = createApp({ ledger, keys: store });
    auditor = (await store.create({ identity: 'user:audrey', roles: ['auditor'], createdBy: OPERATOR_ACTOR }))
      .secret;
    await history('orders', [1, 2, 3, 4, 5]);
  });
  afterAll(async () => {
    await database.close();
  });

  describe('when the auditor has no checkpoint yet', () => {
    it('--init trusts the current one after checking its signature, and saves it', async () => {
      const file = join(root, 'init.checkpoint');
      const { code, report } = await since(file, ['--init', '--log', 'orders']);
      expect(code).toBe(0);
      expect(report).toMatchObject({ ok: true, status: 'CONSISTENT', latest: { tree_size: 5 }, saved: file });
      expect(openCheckpoint(readFileSync(file, 'utf8'), { verifiers: [keys.verifierKey] }).ok).toBe(true);
    });

    it('exits 2 without --init, so a mistyped path is never trusted silently', async () => {
      expect((await since(join(root, 'typo.checkpoint'))).code).toBe(2);
    });
  });

  describe('when the log only grew', () => {
    it('reports CONSISTENT and replaces the trusted checkpoint atomically', async () => {
      const dir = mkdtempSync(join(root, 'witness-'));
      const file = join(dir, 'orders.checkpoint');
      await since(file, ['--init', '--log', 'orders']);
      await history('orders', [6, 7]);
      const { code, report } = await since(file);
      expect(code).toBe(0);
      expect(report).toMatchObject({
        status: 'CONSISTENT',
        trusted: { tree_size: 5 },
        latest: { tree_size: 7 },
      });
      expect(readFileSync(file, 'utf8')).toContain('\n7\n');
      expect(readdirSync(dir)).toEqual(['orders.checkpoint']);
    });
  });

  describe('when the history was rewritten', () => {
    let file: string;
    beforeAll(async () => {
      file = join(root, 'rewritten.checkpoint');
      serving = 'orders';
      await since(file, ['--init', '--log', 'orders']);
    });

    it('reports TRUNCATED for a log whose checkpoint is behind the trusted one, and keeps the trusted file', async () => {
      const before = readFileSync(file, 'utf8');
      serving = 'orders-truncated';
      await history('orders-truncated', [1, 2, 3]);
      const { code, report } = await since(file);
      expect([code, report.status]).toEqual([1, 'TRUNCATED']);
      expect(readFileSync(file, 'utf8')).toBe(before);
    });

    it('reports FORKED for a longer log that does not extend the trusted tree', async () => {
      serving = 'orders-forked';
      await history('orders-forked', [1, 2, 99, 4, 5, 6, 7, 8]);
      const { code, report } = await since(file);
      expect([code, report.status]).toEqual([1, 'FORKED']);
    });

    it('reports FORKED for a log of the same size with another root', async () => {
      serving = 'orders-same-size';
      await history('orders-same-size', [1, 2, 3, 4, 5, 6, 77]);
      const { code, report } = await since(file);
      expect([code, report.status]).toEqual([1, 'FORKED']);
    });

    it('reports NO_TRUSTED_SIGNATURE for a checkpoint signed by another key', async () => {
      serving = 'orders-other-key';
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      for (const i of [1, 2, 3, 4, 5, 6]) await ledger.append(note('orders-other-key', i));
      await ledger.close();
      const other = [parseSignerKey(generateNoteKeys('audit.example/v').signerKey)];
      await signLogCheckpoint(database, {
        log: 'orders-other-key',
        origin: () => 'audit.example/v/orders',
        signers: other,
      });
      const { code, report } = await since(file);
      expect([code, report.status]).toEqual([1, 'NO_TRUSTED_SIGNATURE']);
    });
  });

  describe('when the server withholds what it must serve', () => {
    it('exits 1 with WITHHELD for a log without a checkpoint, and keeps the trusted file', async () => {
      serving = 'orders';
      const file = join(root, 'withheld.checkpoint');
      await since(file, ['--init', '--log', 'orders']);
      const before = readFileSync(file, 'utf8');
      serving = 'orders-unsigned';
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      for (const i of [1, 2, 3, 4, 5, 6]) await ledger.append(note('orders-unsigned', i));
      await ledger.close();
      const { code, report } = await since(file);
      expect([code, report.status]).toEqual([1, 'WITHHELD']);
      expect(readFileSync(file, 'utf8')).toBe(before);
    });
  });

  describe('when the server refuses the key', () => {
    it('exits 2, and --json still prints one answer that says nothing was concluded', async () => {
      serving = 'orders';
      const f = fakeIo({ VOUCH_API_KEY: 'vch_not_a_key' });
      const argv = ['--since', join(root, 'init.checkpoint'), '--url', 'http://vouch.test', '--json'];
      const code = await verifySinceCommand.run([...argv, '--public-key', keys.verifierKey], {
        ...f.io,
        fetch: fetchFromApp,
      });
      expect(code).toBe(2);
      expect(JSON.parse(f.out())).toMatchObject({ ok: false, error: { code: 'SERVER_REFUSED' } });
      expect(f.err()).toContain('UNAUTHENTICATED');
    });
  });

  describe('when the trusted checkpoint carries another witness cosignature', () => {
    it('keeps it rather than the log-only note the server serves for the same tree', async () => {
      serving = 'orders';
      const file = join(root, 'cosigned.checkpoint');
      await since(file, ['--init', '--log', 'orders']);
      const served = readFileSync(file, 'utf8');
      const text = served.slice(0, served.lastIndexOf('\n\n') + 1);
      const cosig = signNote(text, [parseSignerKey(generateNoteKeys('witness.example/w1').signerKey)]);
      const cosigned = served + cosig.slice(cosig.lastIndexOf('\n\n') + 2);
      writeFileSync(file, cosigned);
      const { code, report } = await since(file);
      expect([code, report.status, report.saved]).toEqual([0, 'CONSISTENT', null]);
      expect(readFileSync(file, 'utf8')).toBe(cosigned);
    });

    it('still advances past it, so a line anyone can add does not blind the witness to a truncation', async () => {
      serving = 'orders';
      const file = join(root, 'frozen.checkpoint');
      const { report: first } = await since(file, ['--init', '--log', 'orders']);
      const size = first.latest.tree_size as number;
      const signedBefore = readFileSync(file, 'utf8');
      // The server serves the same checkpoint with one line more, by a "witness" whose key is
      // the server's own choice: the witness merges it, as it merges real cosignatures.
      const text = signedBefore.slice(0, signedBefore.lastIndexOf('\n\n') + 1);
      const line = signNote(text, [parseSignerKey(generateNoteKeys('evil.example/w').signerKey)]);
      rewriteCheckpoint = (note) => note + line.slice(line.lastIndexOf('\n\n') + 2);
      try {
        expect((await since(file)).report).toMatchObject({ status: 'CONSISTENT', saved: file });
      } finally {
        rewriteCheckpoint = null;
      }
      const withLine = readFileSync(file, 'utf8');
      expect(withLine).toContain('evil.example/w');
      // The log grows: the file keeps its lines, and the newer checkpoint goes beside it.
      await history('orders', [100, 101]);
      const grown = await since(file);
      expect([grown.code, grown.report.status, grown.report.saved]).toEqual([
        0,
        'CONSISTENT',
        `${file}.ahead`,
      ]);
      expect(grown.report.kept).toContain('evil.example/w');
      expect(readFileSync(file, 'utf8')).toBe(withLine);
      expect(readFileSync(`${file}.ahead`, 'utf8')).toContain(`\n${size + 2}\n`);
      // Cut back to the size in the file: the witness checks from the newer one, and says so.
      rewriteCheckpoint = () => signedBefore;
      try {
        const cut = await since(file);
        expect([cut.code, cut.report.status, cut.report.trusted.tree_size]).toEqual([
          1,
          'TRUNCATED',
          size + 2,
        ]);
        expect(cut.report.checked_from).toBe(`${file}.ahead`);
      } finally {
        rewriteCheckpoint = null;
      }
      // The honest log again: consistent from the newer one, and nothing moves.
      const again = await since(file);
      expect([again.code, again.report.status, again.report.saved]).toEqual([0, 'CONSISTENT', null]);
      // Starting over needs both files gone: a left .ahead would be checked from.
      rmSync(file);
      const restart = await since(file, ['--init', '--log', 'orders']);
      expect(restart.code).toBe(2);
      expect(restart.err).toContain(`${file}.ahead is left from an earlier witness`);
      // An .ahead no trusted key signed is refused by name, not checked from.
      writeFileSync(file, withLine);
      writeFileSync(`${file}.ahead`, signedBefore.replace(/\n— .*\n$/, '\n— audit.example/v AAAA\n'));
      const unsigned = await since(file);
      expect(unsigned.code).toBe(2);
      expect(unsigned.err).toContain(`${file}.ahead is not a checkpoint signed by a key you trust`);
    });
  });

  describe('without --json', () => {
    it('prints the verdict, both checkpoints and how many events were recomputed', async () => {
      serving = 'orders';
      const file = join(root, 'plain.checkpoint');
      await since(file, ['--init', '--log', 'orders']);
      const f = fakeIo({ VOUCH_API_KEY: auditor });
      const argv = ['--since', file, '--url', 'http://vouch.test', '--public-key', keys.verifierKey];
      expect(await verifySinceCommand.run(argv, { ...f.io, fetch: fetchFromApp })).toBe(0);
      expect(f.out()).toMatch(/^log orders: CONSISTENT — unchanged at \d+ events\n {2}trusted: /);
      expect(f.out()).toMatch(/checked: \d+ events recomputed/);
    });
  });

  describe('when the arguments are wrong', () => {
    it.each([[['--url', 'http://x', '--bundle', 'b']], [['--url', 'http://x', '--init']], [[]]])(
      'exits 2 for %j',
      async (extra) => {
        const f = fakeIo({});
        const argv = ['--since', join(root, 'nothing'), '--public-key', keys.verifierKey, ...extra];
        expect(await verifySinceCommand.run(argv, { ...f.io, fetch: fetchFromApp })).toBe(2);
      },
    );

    it('exits 2 when the trusted file is not signed by the given key', async () => {
      const file = join(root, 'init.checkpoint');
      expect(existsSync(file)).toBe(true);
      const f = fakeIo({ VOUCH_API_KEY: auditor });
      const other = generateNoteKeys('audit.example/v').verifierKey;
      const argv = ['--since', file, '--url', 'http://vouch.test', '--public-key', other];
      expect(await verifySinceCommand.run(argv, { ...f.io, fetch: fetchFromApp })).toBe(2);
    });
  });
});
