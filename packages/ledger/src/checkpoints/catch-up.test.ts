import { generateNoteKeys, parseSignerKey } from '@vouch/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createIntegrityAlarm } from '../integrity-alarm';
import { createLedger } from '../ledger';
import { merkleAppendHook } from '../merkle/merkle-append-hook';
import { rewriteEvent, testBackends } from '../testing';
import { latestCheckpoint } from './checkpoint-store';
import { createCheckpointer } from './checkpointer';
import { logOrigin, signLogCheckpoint } from './sign-log-checkpoint';

const PREFIX = 'vouch.test/catch-up';
const signers = [parseSignerKey(generateNoteKeys(PREFIX).signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

describe.each(testBackends())('the checkpointer catching up at start-up, on $name', ({ open }) => {
  let database: Database;

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    await database?.close();
  });

  /** Appended with the Merkle tree kept but no checkpointer: a server without a key. */
  async function appendUnsigned(log: string, n: number): Promise<void> {
    const ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
    for (let i = 1; i <= n; i++) {
      await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
    }
    await ledger.close();
  }

  async function catchUp() {
    const alarm = createIntegrityAlarm();
    const checkpointer = createCheckpointer({ database, origin, signers, integrityAlarm: alarm });
    const noted = await checkpointer.catchUp();
    await checkpointer.close();
    return { noted: noted.sort(), alarm };
  }

  const sizeOf = async (log: string) => (await latestCheckpoint(database, log))?.treeSize ?? null;

  describe('when logs were appended while nothing signed', () => {
    it('signs the head of each log past its latest checkpoint, without a new append', async () => {
      await appendUnsigned('never-signed', 3);
      await appendUnsigned('signed-at-head', 2);
      await signLogCheckpoint(database, { log: 'signed-at-head', origin, signers });
      await appendUnsigned('signed-before', 2);
      await signLogCheckpoint(database, { log: 'signed-before', origin, signers });
      await appendUnsigned('signed-before', 2);

      const { noted, alarm } = await catchUp();

      expect(noted).toEqual(['never-signed', 'signed-before']);
      expect({
        'never-signed': await sizeOf('never-signed'),
        'signed-at-head': await sizeOf('signed-at-head'),
        'signed-before': await sizeOf('signed-before'),
      }).toEqual({ 'never-signed': 3, 'signed-at-head': 2, 'signed-before': 4 });
      expect(alarm.raised).toBe(false);
    });
  });

  describe('when an unsigned log was rewritten under its stored tree', () => {
    it('checks the tree before signing: nothing is signed and the alarm is raised', async () => {
      await appendUnsigned('rewritten', 3);
      // Every hash recomputed after the edit: a valid chain under a stored tree that no longer fits.
      await rewriteEvent(database, { log: 'rewritten', seq: 2, payload: '{"rewritten":true}' });

      const { noted, alarm } = await catchUp();

      expect(noted).toEqual(['rewritten']);
      expect(await sizeOf('rewritten')).toBeNull();
      expect(alarm.alarms()).toEqual([expect.objectContaining({ code: 'TREE_MISMATCH', log: 'rewritten' })]);
    });
  });
});
