import { describe, expect, it } from 'vitest';
import { encodeBundle, splitLines } from './bundle-format';
import { verifyBundle } from './bundle-verify';
import { canonicalJson } from './canonical-json';
import { signCheckpoint } from './checkpoint';
import { eventHashOf, payloadHashOf, type StoredEvent } from './event-hash';
import { pythonFieldsVector as vector } from './fixtures/payload-fields/independent-vector';
import { pythonMemberVector as member } from './fixtures/payload-fields/member-vector';
import { eventLeafHash } from './merkle-hash';
import { MemoryMerkleTree } from './merkle-memory-tree';
import { generateNoteKeys, parseSignerKey } from './note-keys';
import {
  commitFields,
  commitMember,
  committedFieldHashes,
  fieldHashOf,
  newFieldSalt,
} from './payload-fields';
import { verifyEvents } from './verify-events';

/** The vector's two events as a verifier receives them, with `email` erased from the first. */
function redactedChain(): StoredEvent[] {
  const { email: _erased, ...kept } = vector.content;
  const fields = Object.fromEntries(
    Object.entries(kept).map(([name, value]) => [name, { salt: vector.salts[name]!, value }]),
  );
  return [
    { ...vector.event, payload: vector.payload, fields },
    { ...vector.redaction.event, payload: vector.redaction.payload },
  ];
}

describe('fields/1 payload commitment', () => {
  describe('when checked against an independent implementation', () => {
    it('gives the same field hashes, payload, payload hash and event hashes', () => {
      const { payload } = commitFields(vector.content, (name) => vector.salts[name]!);
      expect(payload).toBe(vector.payload);
      for (const [name, value] of Object.entries(vector.content)) {
        expect(fieldHashOf(name, { salt: vector.salts[name]!, value })).toBe(vector.fieldHashes[name]);
      }
      expect(payloadHashOf(payload)).toBe(vector.event.payload_hash);
      expect(eventHashOf(vector.event)).toBe(vector.event.hash);
      expect(payloadHashOf(vector.redaction.payload)).toBe(vector.redaction.event.payload_hash);
      expect(eventHashOf(vector.redaction.event)).toBe(vector.redaction.event.hash);
    });
  });

  describe('when the commitment member is dropped or changed', () => {
    it('changes the event hash, so an event cannot be read under another rule', () => {
      const { commitment: _dropped, ...header } = vector.event;
      expect(eventHashOf(header)).not.toBe(vector.event.hash);
      expect(eventHashOf({ ...vector.event, commitment: 'fields/2' })).not.toBe(vector.event.hash);
    });
  });

  describe('when a key is named __proto__ (JSON.parse keeps it as an own key)', () => {
    it('commits it like any other key, never dropping it', () => {
      const args = JSON.parse('{"__proto__":{"to":"ana@example.com"},"subject":"hi"}') as Record<
        string,
        unknown
      >;
      const { record, fields } = commitMember({ id: 'prp_1', arguments: args }, 'arguments');
      expect(Object.keys(fields).sort()).toEqual(['__proto__', 'subject']);
      expect(Object.keys(record.arguments).sort()).toEqual(['__proto__', 'subject']);
      expect(fields.__proto__).toMatchObject({ value: { to: 'ana@example.com' } });
    });
  });

  describe('when salts are drawn', () => {
    it('draws 32 fresh random bytes per field', () => {
      const salts = new Set(Array.from({ length: 64 }, newFieldSalt));
      expect(salts.size).toBe(64);
      for (const salt of salts) expect(salt).toMatch(/^[0-9a-f]{64}$/);
      const { fields } = commitFields({ a: 1, b: 1 });
      expect(fields.a!.salt).not.toBe(fields.b!.salt);
    });
  });
});

describe('verifyEvents on field-committed events', () => {
  describe('when every field is present', () => {
    it('verifies and reports no redaction', async () => {
      const fields = Object.fromEntries(
        Object.entries(vector.content).map(([name, value]) => [name, { salt: vector.salts[name]!, value }]),
      );
      const report = await verifyEvents([{ ...vector.event, payload: vector.payload, fields }], {
        log: 'tenant-a',
      });
      expect(report).toMatchObject({ ok: true, failures: [] });
      expect(report.redactions).toBeUndefined();
    });
  });

  describe('when a field was erased under a redaction event', () => {
    it('verifies and reports the erased field with the event that authorized it', async () => {
      const report = await verifyEvents(redactedChain(), { log: 'tenant-a' });
      expect(report.failures).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.redactions).toEqual([
        { seq: 1, fields: ['email'], by: 2, reason: 'GDPR art. 17 request 42' },
      ]);
    });
  });

  describe('when a field is missing and no redaction event names it', () => {
    it('reports REDACTION_UNAUTHORIZED', async () => {
      const [target] = redactedChain();
      const report = await verifyEvents([target!], { log: 'tenant-a' });
      expect(report.ok).toBe(false);
      expect(report.failures).toMatchObject([{ seq: 1, code: 'REDACTION_UNAUTHORIZED', fields: ['email'] }]);
    });

    it('reports REDACTION_UNAUTHORIZED for a field the redaction event does not name', async () => {
      const [target, redaction] = redactedChain();
      delete target!.fields!.amount;
      const report = await verifyEvents([target!, redaction!], { log: 'tenant-a' });
      expect(report.failures).toMatchObject([{ seq: 1, code: 'REDACTION_UNAUTHORIZED', fields: ['amount'] }]);
      expect(report.redactions).toMatchObject([{ seq: 1, fields: ['email'] }]);
    });
  });

  describe('when the redaction event itself was edited', () => {
    it('authorizes nothing: the erasure is REDACTION_UNAUTHORIZED beside the broken hash', async () => {
      const [target, redaction] = redactedChain();
      const report = await verifyEvents([target!, { ...redaction!, actor: 'admin:someone-else' }], {
        log: 'tenant-a',
      });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([
        [2, 'HASH_MISMATCH'],
        [1, 'REDACTION_UNAUTHORIZED'],
      ]);
      expect(report.redactions).toBeUndefined();
    });
  });

  describe('when a present field was edited', () => {
    it.each([
      ['value', { salt: '22'.repeat(32), value: 6 }],
      ['salt', { salt: '23'.repeat(32), value: 5 }],
    ])('reports FIELD_MISMATCH for an edited %s', async (_what, opening) => {
      const [target, redaction] = redactedChain();
      target!.fields!.amount = opening;
      const report = await verifyEvents([target!, redaction!], { log: 'tenant-a' });
      expect(report.failures).toMatchObject([{ seq: 1, code: 'FIELD_MISMATCH', fields: ['amount'] }]);
    });

    it('reports FIELD_MISMATCH for content no field hash commits to', async () => {
      const [target, redaction] = redactedChain();
      target!.fields!.extra = { salt: '44'.repeat(32), value: 'x' };
      const report = await verifyEvents([target!, redaction!], { log: 'tenant-a' });
      expect(report.failures).toMatchObject([{ seq: 1, code: 'FIELD_MISMATCH', fields: ['extra'] }]);
    });
  });

  describe('when the commitment itself is damaged', () => {
    it('reports COMMITMENT_INVALID for content on a whole-payload event', async () => {
      const [, redaction] = redactedChain();
      const report = await verifyEvents([{ ...redaction!, seq: 1, prev_hash: '0'.repeat(64), fields: {} }], {
        log: 'tenant-a',
      });
      expect(report.failures.map((f) => f.code)).toContain('COMMITMENT_INVALID');
    });

    it('reports COMMITMENT_INVALID for an unknown commitment', async () => {
      const [target] = redactedChain();
      const report = await verifyEvents([{ ...target!, commitment: 'fields/9' }], { log: 'tenant-a' });
      expect(report.failures.map((f) => f.code)).toEqual(['COMMITMENT_INVALID', 'HASH_MISMATCH']);
    });
  });
});

describe('a vouch-bundle/2 with a redacted event', () => {
  async function bundleOf(events: StoredEvent[]) {
    const keys = generateNoteKeys('vouch.test/tenant-a');
    const tree = MemoryMerkleTree.fromLeafHashes(events.map((event) => eventLeafHash(event.hash)));
    const checkpoint = signCheckpoint(
      { origin: 'vouch.test/tenant-a', treeSize: events.length, rootHash: tree.root() },
      [parseSignerKey(keys.signerKey)],
    );
    const lines: string[] = [];
    for await (const line of encodeBundle({
      log: 'tenant-a',
      origin: 'vouch.test/tenant-a',
      treeSize: events.length,
      checkpoint,
      events,
    })) {
      lines.push(line);
    }
    return { lines, verifier: keys.verifierKey };
  }

  describe('when the redaction event is in the bundle', () => {
    it('verifies the chain, the Merkle root and the checkpoint, and reports the redaction', async () => {
      const { lines, verifier } = await bundleOf(redactedChain());
      expect(JSON.parse(lines[0]!).format).toBe('vouch-bundle/2');
      expect(JSON.parse(lines[1]!)).toMatchObject({
        commitment: 'fields/1',
        fields: { amount: {}, note: {} },
      });
      const report = await verifyBundle(splitLines([`${lines.join('\n')}\n`]), { verifiers: [verifier] });
      expect(report.failures).toEqual([]);
      expect(report).toMatchObject({
        ok: true,
        checkpoint: { treeSize: 2 },
        redactions: [{ seq: 1, fields: ['email'], by: 2 }],
      });
    });
  });

  describe('when a field was dropped without a redaction event', () => {
    it('reports REDACTION_UNAUTHORIZED although every hash still holds', async () => {
      const [target, redaction] = redactedChain();
      delete target!.fields!.note;
      const { lines, verifier } = await bundleOf([target!, redaction!]);
      const report = await verifyBundle(lines, { verifiers: [verifier] });
      expect(report.ok).toBe(false);
      expect(report.failures).toMatchObject([{ seq: 1, code: 'REDACTION_UNAUTHORIZED', fields: ['note'] }]);
    });
  });

  describe('when a field-committed event is bundled without its content', () => {
    it('refuses with MALFORMED_BUNDLE rather than write it as all erased', async () => {
      const [target, redaction] = redactedChain();
      delete target!.fields;
      const error = await bundleOf([target!, redaction!]).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'AuditError', code: 'MALFORMED_BUNDLE' });
    });
  });

  describe('when a field-committed line lacks its content member', () => {
    it('is BUNDLE_MALFORMED', async () => {
      const { lines, verifier } = await bundleOf(redactedChain());
      const line = JSON.parse(lines[1]!);
      delete line.fields;
      lines[1] = JSON.stringify(line);
      const report = await verifyBundle(lines, { verifiers: [verifier] });
      expect(report.failures.map((f) => f.code)).toContain('BUNDLE_MALFORMED');
    });
  });
});

describe('member-fields/1: a record with one member committed key by key', () => {
  const salted = (name: string) => member.salts[name]!;
  const amount = { amount: { salt: member.salts.amount!, value: 5 } };
  /** The vector's record with `email` erased, and the redaction event that erased it. */
  const redactedRecord = (): StoredEvent[] => [
    { ...member.event, payload: member.payload, fields: { ...amount } },
    { ...member.redaction.event, payload: member.redaction.payload },
  ];

  describe('when checked against an independent implementation', () => {
    it('gives the same stored record, payload hash and event hash', () => {
      const { record, fields } = commitMember(member.record, 'arguments', salted);
      expect(canonicalJson(record)).toBe(member.payload);
      expect(fields.email).toEqual({ salt: member.salts.email, value: 'ana@example.com' });
      expect(payloadHashOf(member.payload)).toBe(member.event.payload_hash);
      expect(eventHashOf(member.event)).toBe(member.event.hash);
      expect(committedFieldHashes('member-fields/1:arguments', member.payload)).toEqual(record.arguments);
    });
  });

  describe('when a key was erased under a redaction event', () => {
    it('verifies and reports the erased key with the event that authorized it', async () => {
      const report = await verifyEvents(redactedRecord(), { log: 'tenant-a' });
      expect(report).toMatchObject({ ok: true, failures: [] });
      expect(report.redactions).toEqual([
        { seq: 1, fields: ['email'], by: 2, reason: 'GDPR art. 17 request 43' },
      ]);
    });
  });

  describe('when the record is damaged', () => {
    it('reports REDACTION_UNAUTHORIZED for a key dropped without a redaction event', async () => {
      const [target] = redactedRecord();
      const report = await verifyEvents([target!], { log: 'tenant-a' });
      expect(report.failures).toMatchObject([{ seq: 1, code: 'REDACTION_UNAUTHORIZED', fields: ['email'] }]);
    });

    it('reports FIELD_MISMATCH for an edited value', async () => {
      const [target, redaction] = redactedRecord();
      target!.fields!.amount = { salt: member.salts.amount!, value: 6 };
      const report = await verifyEvents([target!, redaction!], { log: 'tenant-a' });
      expect(report.failures).toMatchObject([{ seq: 1, code: 'FIELD_MISMATCH', fields: ['amount'] }]);
    });

    it.each([
      ['a member that is not there', 'member-fields/1:result'],
      ['a member name outside the rule', 'member-fields/1:Arguments'],
    ])('reports COMMITMENT_INVALID for %s', async (_what, commitment) => {
      const [target] = redactedRecord();
      const report = await verifyEvents([{ ...target!, commitment }], { log: 'tenant-a' });
      expect(report.failures.map((f) => f.code)).toEqual(['COMMITMENT_INVALID', 'HASH_MISMATCH']);
    });

    it('reports COMMITMENT_INVALID when the member is not an object of field hashes', () => {
      expect(
        committedFieldHashes('member-fields/1:arguments', '{"arguments":{"email":"ana@example.com"}}'),
      ).toBe(null);
      expect(committedFieldHashes('member-fields/1:arguments', '{"arguments":[]}')).toBe(null);
    });
  });

  describe('when the member is not a JSON object', () => {
    it('refuses to commit it', () => {
      expect(() => commitMember({ result: 'text' }, 'result')).toThrow(/must be a JSON object/);
    });
  });
});
