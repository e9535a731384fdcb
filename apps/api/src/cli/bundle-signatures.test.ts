import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateAuthorKey, generateNoteKeys } from '@vouch/audit';
import { createLedger, merkleAppendHook, migrate } from '@vouch/ledger';
import { SIGNED_APPROVAL_LOGS, writeSignedApprovalLogs } from '@vouch/ledger/testing';
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

type Failure = { code: string; rule?: string; seq: number };
const signatureRules = (report: { failures: Failure[] }) =>
  report.failures
    .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && String(f.rule).startsWith('SIGN'))
    .map((f) => [f.seq, f.rule]);

describe.each(cliStorages(() => root))(
  'vouch verify --bundle judges author signatures on $name',
  (storage) => {
    const keys = generateNoteKeys('audit.example/v');
    let env: NodeJS.ProcessEnv;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      const made = await storage.make();
      env = { ...made.env, VOUCH_LOG_SIGNING_KEY: keys.signerKey };
      drop = made.drop;
      const database = await made.open();
      await migrate(database);
      const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      await writeSignedApprovalLogs(ledger, { approver: generateAuthorKey(), other: generateAuthorKey() });
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
      return run(['verify', '--bundle', path, '--public-key', keys.verifierKey, ...more]);
    };
    /** What `vouch verify` (verifyChain, with the database) reports for `log`. */
    const online = async (log: string) =>
      JSON.parse((await run(['verify', '--log', log, '--json'], env)).out);

    describe('when every record is signed by its author', () => {
      it('exits 0 and counts the signed and unsigned authors, as verifyChain does', async () => {
        const bundle = await exported('honest');
        const { code, out } = await verifyText('honest', bundle, ['--json']);
        expect(code).toBe(0);
        const report = JSON.parse(out);
        expect(report.signatures).toMatchObject({ checked: true, authors: { signed: 1, unsigned: 2 } });
        expect(report.signatures.authors).toEqual((await online('honest')).authors);
        const text = await verifyText('honest-text', bundle);
        expect(text.out).toContain('author signatures: 1 record(s) signed by their author, 2 unsigned');
      });
    });

    describe.each([
      ['without a signature', 'unsigned'],
      ['signed with another key', 'other-key'],
      ['with the signature of an approval in another log', 'replayed'],
    ] as const)('when an approval in an enrolled approver’s name is forged %s', (_what, log) => {
      const rule = SIGNED_APPROVAL_LOGS[log];
      it(`exits 1 with ${rule} at the approval, the rule verifyChain reports`, async () => {
        const { code, out } = await verifyText(log, await exported(log), ['--json']);
        expect(code).toBe(1);
        const rules = signatureRules(JSON.parse(out));
        expect(rules).toEqual([[expect.any(Number), rule]]);
        expect(rules).toEqual(signatureRules(await online(log)));
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
        expect(report.failures.map((f: Failure) => f.code)).toContain('SYSTEM_PART_INVALID');
        expect(report.signatures).toMatchObject({ checked: false });
      });
    });
  },
);
