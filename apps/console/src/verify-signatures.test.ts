import {
  encodeBundle,
  generateAuthorKey,
  generateNoteKeys,
  parseSignerKey,
  type StoredEvent,
} from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  merkleAppendHook,
  signLogCheckpoint,
  verifyChain,
} from '@vouch/ledger';
import { SIGNED_APPROVAL_LOGS, testBackends, writeSignedApprovalLogs } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeAuthorSignatures } from './verify-signatures';

// The console's check in the browser judges author signatures with the function
// `verifyChain` and `vouch verify --bundle` use (@vouch/ledger/signature-rules), against the
// system log the server serves as a bundle: here fed exactly what the browser fetches.

describe.each(testBackends())('judgeAuthorSignatures (the console, in the browser) on $name', ({ open }) => {
  const keys = generateNoteKeys('audit.example/v');
  const signing = {
    origin: (log: string) => `audit.example/v/${log}`,
    signers: [parseSignerKey(keys.signerKey)],
  };
  let database: Database;
  let ledger: Ledger;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    await writeSignedApprovalLogs(ledger, { approver: generateAuthorKey(), other: generateAuthorKey() });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** What the browser fetches: the system log's bundle (`GET /v1/logs/system/bundle`) and the log's events. */
  const served = async (log: string) => {
    const checkpoint = await signLogCheckpoint(database, { log: 'system', ...signing });
    let systemBundle = '';
    for await (const line of encodeBundle({
      log: 'system',
      origin: signing.origin('system'),
      treeSize: checkpoint.treeSize,
      checkpoint: checkpoint.note,
      events: ledger.streamEvents('system'),
    }))
      systemBundle += `${line}\n`;
    const events: StoredEvent[] = [];
    for await (const event of ledger.streamEvents(log)) events.push(event);
    return { log, origin: signing.origin(log), systemBundle, events };
  };
  const onlineRules = async (log: string) =>
    (await verifyChain(database, { log })).failures
      .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && String(f.rule).startsWith('SIGN'))
      .map((f) => [f.seq, f.rule]);

  describe('when every record is signed by its author', () => {
    it('proves it, with the counts verifyChain gives', async () => {
      const verdict = await judgeAuthorSignatures({
        ...(await served('honest')),
        verifiers: [keys.verifierKey],
      });
      expect(verdict).toMatchObject({ state: 'proved', failures: [], authors: { signed: 1, unsigned: 2 } });
      expect(verdict.authors).toEqual((await verifyChain(database, { log: 'honest' })).authors);
    });
  });

  describe.each([
    ['without a signature', 'unsigned'],
    ['signed with another key', 'other-key'],
    ['with the signature of an approval in another log', 'replayed'],
  ] as const)('when an approval in an enrolled approver’s name is forged %s', (_what, log) => {
    const rule = SIGNED_APPROVAL_LOGS[log];
    it(`fails with ${rule} at the approval, as verifyChain reports it`, async () => {
      const verdict = await judgeAuthorSignatures({ ...(await served(log)), verifiers: [keys.verifierKey] });
      expect(verdict.state).toBe('failed');
      const rules = verdict.failures.map((f) => [f.seq, f.rule]);
      expect(rules).toEqual([[expect.any(Number), rule]]);
      expect(rules).toEqual(await onlineRules(log));
    });
  });

  describe("when the system log's checkpoint is signed by no pinned key", () => {
    it('says the signatures were not checked', async () => {
      const other = generateNoteKeys('audit.example/v');
      const verdict = await judgeAuthorSignatures({
        ...(await served('unsigned')),
        verifiers: [other.verifierKey],
      });
      expect(verdict).toMatchObject({ state: 'skipped', failures: [], authors: null });
      expect(verdict.detail).toContain('not checked');
    });
  });

  describe("when the served system log leaves out Alice's enrolment", () => {
    it('fails: the system log does not verify against its signed root', async () => {
      const input = await served('unsigned');
      const systemBundle = input.systemBundle
        .split('\n')
        .filter((line) => !line.includes('signing_key.enrolled'))
        .join('\n');
      const verdict = await judgeAuthorSignatures({ ...input, systemBundle, verifiers: [keys.verifierKey] });
      expect(verdict.state).toBe('failed');
      expect(verdict.failures.map((f) => f.code)).toEqual(['SYSTEM_PART_INVALID']);
    });
  });
});
