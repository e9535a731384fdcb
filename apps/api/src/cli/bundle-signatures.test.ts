import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AuthorKey,
  authorStatement,
  type DsseEnvelope,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  generateNoteKeys,
  parseDetachedSignature,
  signAuthorStatement,
} from '@vouch/audit';
import {
  createLedger,
  createRecords,
  enrollSigningKey,
  issueApiKey,
  type Ledger,
  merkleAppendHook,
  migrate,
  OPERATOR_ACTOR,
  type Records,
} from '@vouch/ledger';
import { forgeRecords } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';
import { cliStorages } from '../testing/cli-storages';

// A bundle carries the system log's keys, so `vouch verify --bundle` judges every author
// signature offline as `vouch verify` (verifyChain) does online: a record in an enrolled
// approver's name without their signature, or signed with another key, is reported with the
// same rule; an honest one passes.

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-bundle-signatures-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => runVouch(argv, { env, cwd: root });

const signedBy = (key: AuthorKey, log: string, action: string, signer: string, claims: unknown) =>
  parseDetachedSignature(
    detachedSignature(signAuthorStatement(authorStatement(log, action, signer, claims), key)),
  )!;

const tool = {
  server_id: 'payments',
  tool_name: 'refund',
  side_effect: 'compensatable',
  required_scopes: ['payments:write'],
  allowed_environments: ['prod'],
  approval_required: true,
} as const;
const proposal = (key: string) => ({
  idempotency_key: key,
  action: 'refund',
  server_id: 'payments',
  tool_name: 'refund',
  target: { kind: 'payment', id: 'pay_1', env: 'prod' },
  arguments: { amount: 5, currency: 'EUR' },
  side_effect: 'compensatable' as const,
});

describe.each(cliStorages(() => root))(
  'vouch verify --bundle judges author signatures on $name',
  (storage) => {
    const keys = generateNoteKeys('audit.example/v');
    const alice = generateAuthorKey();
    const mallory = generateAuthorKey();
    let env: NodeJS.ProcessEnv;
    let drop: () => Promise<void>;

    /** A log with a proposal awaiting approval; `answer` then writes (or forges) the approval. */
    const pending = async (records: Records, log: string, answer: (requestId: string) => Promise<void>) => {
      await records.registerTool({ log, caller: { identity: 'user:ops' } }, tool);
      const agent = { log, caller: { identity: 'agent:billing', scopes: ['payments:write'] } };
      const { approval } = await records.propose(agent, proposal('k1'));
      await answer(approval!.id);
    };

    /** The approval the runtime role appends in Alice's name, with `signature` or none. */
    const forged = (ledger: Ledger, log: string, signature?: DsseEnvelope) => async (requestId: string) =>
      forgeRecords(ledger, log, (tx, now) => {
        tx.write('approval_resolution', 'user:alice', {
          id: 'res_forged',
          request_id: requestId,
          resolution: 'approved',
          resolver: 'user:alice',
          validity: 'once',
          window_seconds: 3600,
          window_source: 'policy',
          valid_until: new Date(Date.parse(now) + 3_600_000).toISOString(),
          comment: null,
          resolved_at: now,
          ...(signature === undefined ? {} : { signature }),
        });
      });

    beforeAll(async () => {
      const made = await storage.make();
      env = { ...made.env, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
      drop = made.drop;
      const database = await made.open();
      await migrate(database);
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      const records = createRecords(ledger);
      for (const [identity, role] of [
        ['user:ops', 'admin'],
        ['agent:billing', 'gateway'],
        ['user:alice', 'approver'],
      ] as const) {
        await issueApiKey(ledger, {
          id: `key_${identity}`,
          keyHash: randomBytes(32).toString('hex'),
          identity,
          roles: [role],
          scopes: [],
          environments: null,
          logs: null,
          createdBy: OPERATOR_ACTOR,
        });
      }
      await enrollSigningKey(ledger, {
        identity: 'user:alice',
        publicKey: formatAuthorPublicKey(alice.publicKey),
        enrolledBy: OPERATOR_ACTOR,
      });
      await pending(records, 'honest', async (request_id) => {
        const signature = signedBy(alice, 'honest', 'approval.approve', 'user:alice', { request_id });
        await records.approve(
          { log: 'honest', caller: { identity: 'user:alice', signature } },
          { request_id },
        );
      });
      await pending(records, 'unsigned', forged(ledger, 'unsigned'));
      // Signed over exactly what the record says, but with a key that is not Alice's.
      const otherKey = (log: string) => async (requestId: string) => {
        const claims = { request_id: requestId, validity: 'once' };
        const envelope = signAuthorStatement(
          authorStatement(log, 'approval.approve', 'user:alice', claims),
          mallory,
        );
        await forged(ledger, log, envelope)(requestId);
      };
      await pending(records, 'other-key', otherKey('other-key'));
      await ledger.close();
      await database.close();
    });
    afterAll(async () => {
      await drop?.();
    });

    const exported = async (log: string) => {
      const { code, out, err } = await run(['export', '--log', log], env);
      expect(code, err).toBe(0);
      return out;
    };
    const verifyText = async (name: string, text: string, more: string[] = []) => {
      const path = join(root, `${storage.name}-${name}.jsonl`);
      writeFileSync(path, text);
      const { code, out } = await run([
        'verify',
        '--bundle',
        path,
        '--public-key',
        keys.verifierKey,
        ...more,
      ]);
      return { code, out };
    };
    const signatureRules = (report: { failures: Array<{ code: string; rule?: string; seq: number }> }) =>
      report.failures
        .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && String(f.rule).startsWith('SIGN'))
        .map((f) => [f.seq, f.rule]);
    /** The signature rules `vouch verify` (verifyChain, with the database) reports for `log`. */
    const onlineRules = async (log: string) => {
      const { out } = await run(['verify', '--log', log, '--json'], env);
      return signatureRules(JSON.parse(out));
    };

    describe('when every record is signed by its author', () => {
      it('exits 0 and counts the signed and unsigned authors, as verifyChain does', async () => {
        const bundle = await exported('honest');
        const { code, out } = await verifyText('honest', bundle, ['--json']);
        expect(code).toBe(0);
        const report = JSON.parse(out);
        expect(report.signatures).toMatchObject({ checked: true, authors: { signed: 1, unsigned: 1 } });
        const online = JSON.parse((await run(['verify', '--log', 'honest', '--json'], env)).out);
        expect(report.signatures.authors).toEqual(online.authors);
        const text = await verifyText('honest-text', bundle);
        expect(text.out).toContain('author signatures: 1 record(s) signed by their author, 1 unsigned');
      });
    });

    describe.each([
      ['without a signature', 'unsigned', 'SIGNATURE_MISSING'],
      ['signed with another key', 'other-key', 'SIGNER_KEY_UNKNOWN'],
    ])('when an approval in an enrolled approver’s name is forged %s', (_what, log, rule) => {
      it(`exits 1 with ${rule} at the approval, the rule verifyChain reports`, async () => {
        const { code, out } = await verifyText(log, await exported(log), ['--json']);
        expect(code).toBe(1);
        const rules = signatureRules(JSON.parse(out));
        expect(rules).toEqual([[expect.any(Number), rule]]);
        expect(rules).toEqual(await onlineRules(log));
      });
    });

    describe('when the bundle carries no keys (written before they were carried)', () => {
      it('still verifies (the forgery unseen), and says the author signatures were not checked', async () => {
        const [header, ...rest] = (await exported('unsigned')).split('\n');
        const { system: _system, ...older } = JSON.parse(header!);
        const { code, out } = await verifyText('older', [JSON.stringify(older), ...rest].join('\n'));
        expect(out).toContain('author signatures: NOT CHECKED');
        expect(code).toBe(0);
      });
    });

    describe("when the system log's part was altered", () => {
      it("exits 1 with SYSTEM_PART_INVALID: Alice's enrolment cannot be taken out", async () => {
        const [header, ...rest] = (await exported('unsigned')).split('\n');
        const parsed = JSON.parse(header!);
        const system = (parsed.system as string[]).filter((line) => !line.includes('signing_key.enrolled'));
        expect(system).toHaveLength((parsed.system as string[]).length - 1);
        const edited = JSON.stringify({ ...parsed, system });
        const { code, out } = await verifyText('cut', [edited, ...rest].join('\n'), ['--json']);
        expect(code).toBe(1);
        const report = JSON.parse(out);
        expect(report.failures.map((f: { code: string }) => f.code)).toContain('SYSTEM_PART_INVALID');
        expect(report.signatures).toMatchObject({ checked: false });
      });
    });
  },
);
