import {
  eventLeafHash,
  generateNoteKeys,
  parseSignerKey,
  sha256Hex,
  splitLines,
  verifyBundle,
  verifyConsistency,
  verifyInclusion,
} from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  OPERATOR_ACTOR,
  signLogCheckpoint,
} from '@vouch/ledger';
import { tableRowCounts, tamper, testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import type { Role } from '../auth/roles';

// biome-ignore lint/suspicious/noExplicitAny: answers of several shapes, pinned with toMatchObject
type Answer = any;

const EMAIL = 'ana.record-redaction@example.com';
const RECIPIENT = 'Ana Recordredaction';
const keys = generateNoteKeys('vouch.test');
const signing = {
  origin: (log: string) => logOrigin('vouch.test', log),
  signers: [parseSignerKey(keys.signerKey)],
};
const hexBytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));

/** Every row of every table of the database, as text: where an erased value must not be. */
async function everyRow(database: Database): Promise<string> {
  const tables = await database.rows<{ name: string }>(
    sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
  );
  const texts: string[] = [];
  for (const { name } of tables) {
    const rows = await database.rows<{ row: string }>(sql.raw(`select t::text as row from "${name}" t`));
    texts.push(...rows.map((r) => r.row));
  }
  expect(tables.map((t) => t.name)).toEqual(
    expect.arrayContaining(['proposals', 'event_fields', 'audit_events']),
  );
  return texts.join('\n');
}

describe.each(testBackends())(
  'redacting a proposal argument and an observation result key, on $name',
  ({ open }) => {
    let database: Database;
    let ledger: Ledger;
    let app: VouchApp;
    const key = {} as Record<'admin' | 'gateway' | 'redactor' | 'auditor', string>;
    let logNo = 0;

    const call = async (method: string, path: string, apiKey: string, body?: unknown) => {
      const init: RequestInit = { method, headers: { authorization: `Bearer ${apiKey}` } };
      if (body !== undefined) {
        (init.headers as Record<string, string>)['content-type'] = 'application/json';
        init.body = JSON.stringify(body);
      }
      const response = await app.request(path, init);
      const text = await response.text();
      let parsed: Answer = null;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: response.status, body: parsed, text };
    };
    const issue = async (identity: string, roles: Role[]) =>
      (
        await createKeyStore(ledger).create({
          identity,
          roles,
          logs: null,
          createdBy: OPERATOR_ACTOR,
          allowRoleCombination: true,
        })
      ).secret;

    beforeAll(async () => {
      database = await open();
      ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
      app = createApp({ ledger, keys: createKeyStore(ledger) });
      key.admin = await issue('user:root', ['admin']);
      key.gateway = await issue('agent:mailer', ['gateway']);
      key.redactor = await issue('user:dpo', ['redactor']);
      key.auditor = await issue('user:audrey', ['auditor']);
    });
    afterAll(async () => {
      await ledger.close();
      await database.close();
    });

    /** A log where a gateway proposed, executed and observed a mail through the HTTP API. */
    async function mailSent() {
      const log = `crm-${++logNo}`;
      const q = `?log=${log}`;
      const tool = { server_id: 'mail', tool_name: 'send', side_effect: 'read_only' };
      expect((await call('POST', `/v1/tools${q}`, key.admin, tool)).status).toBe(201);
      const proposed = await call('POST', `/v1/proposals${q}`, key.gateway, {
        idempotency_key: `mail-${logNo}`,
        action: 'mail.send',
        server_id: 'mail',
        tool_name: 'send',
        target: { kind: 'mailbox', id: 'outbox', env: 'production' },
        arguments: { to: EMAIL, subject: 'Your refund', amount: 5 },
        side_effect: 'read_only',
      });
      expect(proposed.status).toBe(201);
      const proposal = proposed.body.proposal;
      const authorized = await call('POST', `/v1/proposals/${proposal.id}/authorize${q}`, key.gateway, {
        payload_hash: proposal.payload_hash,
      });
      expect(authorized.status).toBe(200);
      const observed = await call('POST', `/v1/observations${q}`, key.gateway, {
        proposal_id: proposal.id,
        payload_hash: proposal.payload_hash,
        outcome: 'succeeded',
        result: { delivered_to: RECIPIENT, status: 'queued' },
      });
      expect(observed.status).toBe(201);
      const told = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
      const seqOf = (kind: string) => told.body.events.find((e: Answer) => e.kind === kind).seq as number;
      return { log, q, proposal, proposalSeq: seqOf('proposal'), observationSeq: seqOf('observation') };
    }

    const redact = (log: string, seq: number, fields: string[], apiKey = key.redactor) =>
      call('POST', `/v1/logs/${log}/events/${seq}/redactions`, apiKey, {
        fields,
        reason: 'erasure request 2026-201',
      });

    describe('when a redactor erases an argument of a proposal and a key of its result', () => {
      it('keeps the chain, the proofs, the bundle and the story valid, and the values are nowhere', async () => {
        const { log, q, proposal, proposalSeq, observationSeq } = await mailSent();
        const before = await signLogCheckpoint(database, { log, ...signing });

        const erased = await redact(log, proposalSeq, ['to']);
        expect(erased).toMatchObject({ status: 201, body: { target: { seq: proposalSeq }, fields: ['to'] } });
        const erasedResult = await redact(log, observationSeq, ['delivered_to']);
        expect(erasedResult.status).toBe(201);
        const after = await signLogCheckpoint(database, { log, ...signing });

        // `vouch verify`'s report (the same verifyChain) is intact and names both erasures.
        const verified = await call('GET', `/v1/logs/${log}/verify`, key.auditor);
        expect(verified.body).toMatchObject({ ok: true, failures: [] });
        expect(verified.body.redactions).toEqual([
          { seq: proposalSeq, fields: ['to'], by: erased.body.event.seq, reason: 'erasure request 2026-201' },
          {
            seq: observationSeq,
            fields: ['delivered_to'],
            by: erasedResult.body.event.seq,
            reason: 'erasure request 2026-201',
          },
        ]);

        // The story: the erased keys are gone and marked; the rest, and the payload hash the
        // execution was bound to, are as recorded.
        const told = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
        expect(told.status).toBe(200);
        expect(told.body.proposal).toMatchObject({
          arguments: { subject: 'Your refund', amount: 5 },
          redacted: { arguments: ['to'] },
          payload_hash: proposal.payload_hash,
        });
        expect(told.body.proposal.arguments).not.toHaveProperty('to');
        expect(told.body.observation).toMatchObject({
          result: { status: 'queued' },
          redacted: { result: ['delivered_to'] },
        });
        expect(told.body).toMatchObject({ stage: 'executed', outcome: 'awaiting_verification' });
        const listed = await call('GET', `/v1/proposals${q}`, key.auditor);
        expect(listed.body.proposals[0].proposal.redacted).toEqual({ arguments: ['to'] });

        // The server keeps acting on it: the same proposal again is a replay, bound to the
        // payload hash of the exact payload (which the erased argument is still part of).
        const replayed = await call('POST', `/v1/proposals${q}`, key.gateway, {
          idempotency_key: `mail-${logNo}`,
          action: 'mail.send',
          server_id: 'mail',
          tool_name: 'send',
          target: { kind: 'mailbox', id: 'outbox', env: 'production' },
          arguments: { to: 'someone.else@example.com', subject: 'Your refund', amount: 5 },
          side_effect: 'read_only',
        });
        expect(replayed).toMatchObject({ status: 409, body: { error: { code: 'IDEMPOTENCY_CONFLICT' } } });

        // Proofs over the redacted events still verify, against checkpoints before and after.
        const inclusion = await call(
          'GET',
          `/v1/logs/${log}/proofs/inclusion?seq=${proposalSeq}&tree_size=${after.treeSize}`,
          key.auditor,
        );
        const event = told.body.events.find((e: Answer) => e.kind === 'proposal');
        expect(
          verifyInclusion(
            eventLeafHash(event.hash),
            proposalSeq - 1,
            after.treeSize,
            (inclusion.body.proof as string[]).map(hexBytes),
            hexBytes(after.rootHash),
          ),
        ).toBe(true);
        const consistency = await call(
          'GET',
          `/v1/logs/${log}/proofs/consistency?first=${before.treeSize}&second=${after.treeSize}`,
          key.auditor,
        );
        expect(
          verifyConsistency(
            before.treeSize,
            after.treeSize,
            (consistency.body.proof as string[]).map(hexBytes),
            hexBytes(before.rootHash),
            hexBytes(after.rootHash),
          ),
        ).toBe(true);

        // The bundle verifies offline and lists both erasures; neither value travels in it.
        const bundle = await call('GET', `/v1/logs/${log}/bundle`, key.auditor);
        expect(bundle.status).toBe(200);
        const report = await verifyBundle(
          splitLines(
            (async function* () {
              yield bundle.text;
            })(),
          ),
          { verifiers: [keys.verifierKey] },
        );
        expect(report).toMatchObject({ ok: true, checkpoint: { treeSize: after.treeSize } });
        expect(report.redactions?.map((r) => [r.seq, r.fields])).toEqual([
          [proposalSeq, ['to']],
          [observationSeq, ['delivered_to']],
        ]);
        expect(bundle.text).toContain('member-fields/1:arguments');
        for (const text of [bundle.text, told.text, verified.text, listed.text]) {
          expect(text).not.toContain(EMAIL);
          expect(text).not.toContain(RECIPIENT);
        }

        // Gone from every table, not hidden.
        const rows = await everyRow(database);
        expect(rows).toContain('Your refund');
        expect(rows).not.toContain(EMAIL);
        expect(rows).not.toContain(RECIPIENT);
      });
    });

    describe('when a second, different account of the execution was refused and kept as posted', () => {
      it('erases the result it echoes, and the value is nowhere', async () => {
        const { log, q, proposal, proposalSeq, observationSeq } = await mailSent();
        const second = await call('POST', `/v1/observations${q}`, key.gateway, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
          result: { delivered_to: `${RECIPIENT} (again)`, status: 'sent' },
        });
        expect(second).toMatchObject({ status: 409, body: { error: { code: 'OBSERVATION_CONFLICT' } } });
        const told = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
        expect(told.body.refusals[0].attempted.result.delivered_to).toBe(`${RECIPIENT} (again)`);
        const refusalSeq = told.body.events.find((e: Answer) => e.kind === 'execution_refused').seq as number;

        expect((await redact(log, observationSeq, ['delivered_to'])).status).toBe(201);
        expect((await redact(log, refusalSeq, ['result'])).status).toBe(201);
        expect((await redact(log, proposalSeq, ['to'])).status).toBe(201);

        const verified = await call('GET', `/v1/logs/${log}/verify`, key.auditor);
        expect(verified.body).toMatchObject({ ok: true, failures: [] });
        const after = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
        expect(after.body.refusals[0]).toMatchObject({
          code: 'OBSERVATION_CONFLICT',
          attempted: { proposal_id: proposal.id, outcome: 'succeeded' },
          redacted: { attempted: ['result'] },
        });
        expect(after.body.refusals[0].attempted).not.toHaveProperty('result');
        expect(after.body).toMatchObject({ stage: 'executed' });
        expect(after.text).not.toContain(RECIPIENT);
        const rows = await everyRow(database);
        expect(rows).not.toContain(RECIPIENT);
        expect(rows).not.toContain(EMAIL);
      });
    });

    describe('when an argument is erased while its proposal waits for approval', () => {
      it('shows the approver the marker, keeps the approval bound to the exact payload hash, and never runs the erased proposal', async () => {
        const log = `crm-${++logNo}`;
        const q = `?log=${log}`;
        const tool = {
          server_id: 'mail',
          tool_name: 'send',
          side_effect: 'compensatable',
          approval_required: true,
        };
        expect((await call('POST', `/v1/tools${q}`, key.admin, tool)).status).toBe(201);
        const proposed = await call('POST', `/v1/proposals${q}`, key.gateway, {
          idempotency_key: 'approve-1',
          action: 'mail.send',
          server_id: 'mail',
          tool_name: 'send',
          target: { kind: 'mailbox', id: 'outbox', env: 'production' },
          arguments: { to: EMAIL, subject: 'Your refund' },
          side_effect: 'compensatable',
        });
        const { proposal, approval } = proposed.body;
        expect(approval.payload_hash).toBe(proposal.payload_hash);
        const told = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
        const seq = told.body.events.find((e: Answer) => e.kind === 'proposal').seq as number;
        expect((await redact(log, seq, ['to'])).status).toBe(201);

        const approver = await issue(`user:approver-${logNo}`, ['approver']);
        const shown = await call('GET', `/v1/approvals/${approval.id}${q}`, approver);
        expect(shown.body).toMatchObject({
          request: { payload_hash: proposal.payload_hash },
          proposal: { redacted: { arguments: ['to'] } },
          payload: { arguments: { subject: 'Your refund' } },
        });
        expect(shown.body.payload.arguments).not.toHaveProperty('to');
        // The bytes shown are the payload without the erased key: they no longer hash to the
        // approved payload hash, and the view says why (`proposal.redacted`).
        expect(sha256Hex(shown.body.canonical_payload)).not.toBe(proposal.payload_hash);
        expect(shown.text).not.toContain(EMAIL);

        const approved = await call('POST', `/v1/approvals/${approval.id}/approve${q}`, approver);
        expect(approved).toMatchObject({ status: 200, body: { status: 'approved' } });
        // The approver judged arguments without `to`; the hash binds the full ones. Neither
        // payload may run: the gateway is refused, and nothing is claimed.
        const before = await tableRowCounts(database);
        for (const payload_hash of [sha256Hex(shown.body.canonical_payload), proposal.payload_hash]) {
          const refused = await call('POST', `/v1/proposals/${proposal.id}/authorize${q}`, key.gateway, {
            payload_hash,
            approval_request_id: approval.id,
          });
          expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
            status: 403,
            code: 'EXECUTION_NOT_AUTHORIZED',
          });
        }
        expect(await tableRowCounts(database)).toEqual(before);
        expect((await call('GET', `/v1/logs/${log}/verify`, key.auditor)).body).toMatchObject({
          ok: true,
          failures: [],
        });
      });
    });

    describe('when the policy repairs a proposal, copying its arguments into the decision', () => {
      it('erases the copy too: the repair loses its arguments, and the value is nowhere', async () => {
        const log = `crm-${++logNo}`;
        const q = `?log=${log}`;
        const tool = {
          server_id: 'mail',
          tool_name: 'bulk',
          side_effect: 'irreversible',
          approval_required: true,
          dry_run_tool: 'bulk_preview',
        };
        expect((await call('POST', `/v1/tools${q}`, key.admin, tool)).status).toBe(201);
        const proposed = await call('POST', `/v1/proposals${q}`, key.gateway, {
          idempotency_key: 'bulk-1',
          action: 'mail.bulk',
          server_id: 'mail',
          tool_name: 'bulk',
          target: { kind: 'mailbox', id: 'outbox', env: 'production' },
          arguments: { to: EMAIL, subject: 'Your refund' },
          side_effect: 'irreversible',
        });
        expect(proposed.body.decision).toMatchObject({
          verdict: 'repair',
          repair: { arguments: { to: EMAIL } },
        });
        const told = await call('GET', `/v1/proposals/${proposed.body.proposal.id}${q}`, key.auditor);
        const seqOf = (kind: string) => told.body.events.find((e: Answer) => e.kind === kind).seq as number;

        expect((await redact(log, seqOf('proposal'), ['to'])).status).toBe(201);
        expect((await redact(log, seqOf('decision'), ['arguments'])).status).toBe(201);

        const verified = await call('GET', `/v1/logs/${log}/verify`, key.auditor);
        expect(verified.body).toMatchObject({ ok: true, failures: [] });
        expect(verified.body.redactions.map((r: Answer) => [r.seq, r.fields])).toEqual([
          [seqOf('proposal'), ['to']],
          [seqOf('decision'), ['arguments']],
        ]);
        const after = await call('GET', `/v1/proposals/${proposed.body.proposal.id}${q}`, key.auditor);
        expect(after.body).toMatchObject({
          stage: 'repair_proposed',
          decision: { redacted: { repair: ['arguments'] } },
        });
        expect(after.body.decision.repair).not.toHaveProperty('arguments');
        expect(after.body.decision.repair).toMatchObject({
          kind: 'dry_run_first',
          tool_name: 'bulk_preview',
        });
        expect(after.text).not.toContain(EMAIL);
        expect(await everyRow(database)).not.toContain(EMAIL);
      });
    });

    describe('when the redaction cannot be carried out', () => {
      it.each([
        ['an unknown key of the arguments', ['phone'], 'redactor', 422, 'FIELD_NOT_FOUND'],
        ['a member the server acts on', ['payload_hash'], 'redactor', 422, 'FIELD_NOT_FOUND'],
        ['a caller who is not a redactor', ['to'], 'gateway', 403, 'ROLE_FORBIDDEN'],
      ] as const)(
        'refuses %s with its status and code, and writes nothing',
        async (_what, fields, role, status, code) => {
          const { log, proposalSeq } = await mailSent();
          const before = await tableRowCounts(database);
          const refused = await redact(log, proposalSeq, [...fields], key[role]);
          expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status, code });
          expect(await tableRowCounts(database)).toEqual(before);
        },
      );

      it('refuses an argument already erased with 409 FIELD_ALREADY_REDACTED, and writes nothing', async () => {
        const { log, proposalSeq } = await mailSent();
        expect((await redact(log, proposalSeq, ['to'])).status).toBe(201);
        const before = await tableRowCounts(database);
        const again = await redact(log, proposalSeq, ['to']);
        expect({ status: again.status, code: again.body.error?.code }).toEqual({
          status: 409,
          code: 'FIELD_ALREADY_REDACTED',
        });
        expect(await tableRowCounts(database)).toEqual(before);
      });
    });

    // Last: a tampered row raises the server's integrity alarm.
    describe('when a redacted record is tampered with', () => {
      it('catches an edited commitment in the row, and an edited value beside it', async () => {
        const { log, q, proposal, proposalSeq } = await mailSent();
        expect((await redact(log, proposalSeq, ['to'])).status).toBe(201);

        // The remaining content edited: verify and the story both refuse it.
        await tamper(
          database,
          sql`update event_fields set value = '6' where log_id = ${log} and seq = ${proposalSeq} and name = 'amount'`,
        );
        const edited = await call('GET', `/v1/logs/${log}/verify`, key.auditor);
        expect(edited.body.ok).toBe(false);
        expect(edited.body.failures).toEqual([
          expect.objectContaining({ seq: proposalSeq, code: 'FIELD_MISMATCH' }),
        ]);
        const read = await call('GET', `/v1/proposals/${proposal.id}${q}`, key.auditor);
        expect({ status: read.status, code: read.body.error?.code }).toEqual({
          status: 503,
          code: 'RECORD_INTEGRITY_VIOLATION',
        });

        // The row's commitment to the erased argument replaced: the row no longer rebuilds its event.
        await tamper(
          database,
          sql`update event_fields set value = '5' where log_id = ${log} and seq = ${proposalSeq} and name = 'amount'`,
          sql`update proposals set arguments = ${JSON.stringify({ amount: '0'.repeat(64), subject: '1'.repeat(64), to: '2'.repeat(64) })}
            where log_id = ${log} and id = ${proposal.id}`,
        );
        const rewritten = await call('GET', `/v1/logs/${log}/verify`, key.auditor);
        expect(rewritten.body.failures).toEqual([
          expect.objectContaining({ code: 'RECORD_MISMATCH', table: 'proposals', id: proposal.id }),
        ]);
      });
    });
  },
);
