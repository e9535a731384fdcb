import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBundleFile } from './bundle-file-node';
import { verifyBundle } from './bundle-verify';
import { canonicalJson } from './canonical-json';
import type { StoredEvent } from './event-hash';
import { chain, LOG, linesOf, sealed, verifiers } from './fixtures/bundles';
import { commitFields, REDACTION_KIND } from './payload-fields';

// On worker threads a bundle is cut into parts checked apart, so an erased field and the
// redaction event that authorizes it can land in different parts: the verdict must still be
// the one-pass verifier's.

const NOTES = 30;
/** About two event lines per part: the field event and its redaction are parts apart. */
const PART_BYTES = 700;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vouch-bundle-redaction-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** seq 1: a fields/1 event with `email` erased; NOTES notes; then (optionally) its redaction event. Times go forward, as the server writes them. */
function redactedLog(options: { authorized: boolean }): StoredEvent[] {
  const { payload, fields } = commitFields({ email: 'ana@example.com', channel: 'email' });
  const { email: _erased, ...kept } = fields;
  const target = sealed({
    log: LOG,
    seq: 1,
    kind: 'customer.contacted',
    entity: 'cust_1',
    actor: 'gateway',
    at: '2026-11-30T04:00:00.000Z',
    commitment: 'fields/1',
    payload,
    payload_hash: '',
    prev_hash: '0'.repeat(64),
    hash: '',
  });
  const events: StoredEvent[] = [{ ...target, fields: kept }];
  for (const note of chain(NOTES)) {
    const previous = events[events.length - 1]!;
    events.push(sealed({ ...note, seq: previous.seq + 1, prev_hash: previous.hash }));
  }
  if (options.authorized) {
    const previous = events[events.length - 1]!;
    events.push(
      sealed({
        log: LOG,
        seq: previous.seq + 1,
        kind: REDACTION_KIND,
        entity: 'event/1',
        actor: 'user:dpo',
        at: '2026-12-01T11:00:00.000Z',
        payload: canonicalJson({
          target: { seq: 1, hash: target.hash },
          fields: ['email'],
          reason: 'ticket 7',
        }),
        payload_hash: '',
        prev_hash: previous.hash,
        hash: '',
      }),
    );
  }
  return events;
}

describe('verifyBundleFile on a bundle with a redacted event', () => {
  describe.each([
    {
      authorized: true,
      expected: { ok: true, failures: [], redactions: [{ seq: 1, fields: ['email'], by: NOTES + 2 }] },
    },
    { authorized: false, expected: { ok: false, failures: [{ seq: 1, code: 'REDACTION_UNAUTHORIZED' }] } },
  ])('when the redaction event is there: $authorized', ({ authorized, expected }) => {
    it('gives the one-pass report on worker threads, with the parts checked apart', async () => {
      const lines = await linesOf(redactedLog({ authorized }));
      const path = join(dir, `redacted-${authorized}.jsonl`);
      await writeFile(path, `${lines.join('\n')}\n`);
      const sequential = await verifyBundle(lines, { verifiers });
      expect(sequential).toMatchObject(expected);
      const parallel = await verifyBundleFile(path, { verifiers, threads: 2, partBytes: PART_BYTES });
      expect(parallel).toEqual(sequential);
    });
  });
});
