import {
  eventLeafHash,
  generateNoteKeys,
  parseSignerKey,
  signCheckpoint,
  verifyInclusion,
} from '@vouch/audit';
import { checkpointAt, type LogVerificationReport, logOrigin, signLogCheckpoint } from '@vouch/ledger';
import { editCheckpoint, editMerkleNode, rewriteEvent, testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { checkpointKeysFor } from '../transparency/checkpoint-keys';
import { logKeysOf } from '../transparency/log-keys';

// GET /v1/logs/{log}/verify against a database its owner has tampered with (the threat
// model in docs/chain.md): what is stored beside the chain is recomputed, never trusted.

const PREFIX = 'vouch.test';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

describe.each(testBackends())('GET /v1/logs/{log}/verify on $name', ({ open }) => {
  let h: Harness;
  let auditor: string;
  let logNo = 0;

  beforeAll(async () => {
    h = await createHarness({
      open,
      checkpointKeys: checkpointKeysFor(
        logKeysOf({
          originPrefix: PREFIX,
          masterKeys: logKey.signerKey,
          sharedSignature: true,
          source: { kind: 'env' },
        }),
      ),
    });
    auditor = await h.keyFor('user:audrey', ['auditor']);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A fresh log of 8 events with signed checkpoints at 4 and 8. */
  async function freshLog(): Promise<string> {
    const log = `orders-${++logNo}`;
    for (let i = 1; i <= 8; i++) {
      await h.ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'agent:a', payload: { i } });
      if (i === 4 || i === 8) await signLogCheckpoint(h.database, { log, origin, signers });
    }
    return log;
  }

  const verify = async (log: string, headers: Record<string, string> = {}) => {
    const response = await h.call('GET', `/v1/logs/${log}/verify`, { key: auditor, headers });
    return { status: response.status, report: (await response.json()) as LogVerificationReport };
  };
  const codes = (report: LogVerificationReport) => report.failures.map((f) => [f.seq, f.code, f.table]);

  describe('when nothing was tampered with', () => {
    it('reports ok, with the tree and the checkpoints and their signatures checked', async () => {
      const log = await freshLog();
      const { status, report } = await verify(log);
      expect(status).toBe(200);
      expect(report).toMatchObject({
        ok: true,
        checked: 8,
        merkle: { nodes: 7 },
        checkpoints: { checked: 2, signatures: 'verified' },
      });
    });
  });

  describe('when an event was rewritten and every later hash recomputed', () => {
    it('reports MERKLE_MISMATCH and CHECKPOINT_MISMATCH though the chain itself is consistent', async () => {
      const log = await freshLog();
      await rewriteEvent(h.database, { log, seq: 6, actor: 'agent:mallory' });
      const { report } = await verify(log);
      expect(report.ok).toBe(false);
      expect(codes(report)).toEqual([
        [6, 'MERKLE_MISMATCH', 'merkle_nodes'],
        [8, 'CHECKPOINT_MISMATCH', 'checkpoints'],
      ]);
    });

    it('says so in the streamed report too', async () => {
      const log = await freshLog();
      await rewriteEvent(h.database, { log, seq: 2, payload: '{"i":"forged"}' });
      const response = await h.call('GET', `/v1/logs/${log}/verify`, {
        key: auditor,
        headers: { accept: 'application/x-ndjson' },
      });
      const last = JSON.parse((await response.text()).trimEnd().split('\n').at(-1)!) as {
        report: LogVerificationReport;
      };
      expect(codes(last.report)).toEqual([
        [2, 'MERKLE_MISMATCH', 'merkle_nodes'],
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
        [8, 'CHECKPOINT_MISMATCH', 'checkpoints'],
      ]);
    });
  });

  describe('when a Merkle node was edited', () => {
    it('reports MERKLE_MISMATCH at the seq that completes it (the proofs served from it no longer verify)', async () => {
      const log = await freshLog();
      // (1, 0) is the hash of leaves 0 and 1, completed by seq 2.
      await editMerkleNode(h.database, { log, level: 1, idx: 0 });
      const { report } = await verify(log);
      expect(report.failures).toMatchObject([{ seq: 2, code: 'MERKLE_MISMATCH', level: 1, idx: 0 }]);
      // What the audit was about: a proof of a sibling is built from the edited row.
      const [event] = await h.ledger.events(log, { after: 3, limit: 1 });
      const proof = (await (
        await h.call('GET', `/v1/logs/${log}/proofs/inclusion?seq=4&tree_size=8`, { key: auditor })
      ).json()) as { proof: string[] };
      const root = Buffer.from((await checkpointAt(h.database, log, 8))!.rootHash, 'hex');
      const path = proof.proof.map((node) => Buffer.from(node, 'hex'));
      expect(verifyInclusion(eventLeafHash(event!.hash), 3, 8, path, root)).toBe(false);
    });
  });

  describe('when a checkpoint was edited', () => {
    it('reports CHECKPOINT_MISMATCH for an edited root column', async () => {
      const log = await freshLog();
      await editCheckpoint(h.database, { log, treeSize: 4, rootHash: 'cd'.repeat(32) });
      const { report } = await verify(log);
      expect(codes(report)).toEqual([
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
        [4, 'CHECKPOINT_MISMATCH', 'checkpoints'],
      ]);
    });

    it('reports CHECKPOINT_SIGNATURE_INVALID for a note re-signed with another key', async () => {
      const log = await freshLog();
      const stored = (await checkpointAt(h.database, log, 8))!;
      const note = signCheckpoint(
        { origin: origin(log), treeSize: 8, rootHash: Buffer.from(stored.rootHash, 'hex') },
        [parseSignerKey(generateNoteKeys(PREFIX).signerKey)],
      );
      await editCheckpoint(h.database, { log, treeSize: 8, note });
      const { report } = await verify(log);
      expect(codes(report)).toEqual([[8, 'CHECKPOINT_SIGNATURE_INVALID', 'checkpoints']]);
    });
  });

  describe('when the log id is unknown', () => {
    it.each([
      ['/verify', {}],
      ['/verify', { accept: 'application/x-ndjson' }],
      ['/export', {}],
      ['/events', {}],
      ['/head', {}],
    ])('answers 404 LOG_NOT_FOUND for %s %j', async (path, headers) => {
      const response = await h.call('GET', `/v1/logs/no-such-log${path}`, { key: auditor, headers });
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('LOG_NOT_FOUND');
    });

    it('still answers a page past the end of a log that exists with 200 and no events', async () => {
      const log = await freshLog();
      const response = await h.call('GET', `/v1/logs/${log}/events?after=8`, { key: auditor });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ events: [], next_after: null });
    });
  });
});
