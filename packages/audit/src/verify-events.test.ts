import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json';
import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from './event-hash';
import { createChainChecker, verifyEvents } from './verify-events';

/** Build a valid chain the way the ledger writes one. */
function chainOf(payloads: unknown[], log = 'test'): StoredEvent[] {
  const events: StoredEvent[] = [];
  let prev = GENESIS_PREV_HASH;
  payloads.forEach((value, i) => {
    const payload = canonicalJson(value);
    const header = {
      log,
      seq: i + 1,
      kind: 'note',
      entity: `e${i + 1}`,
      actor: 'user:alice',
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      payload_hash: payloadHashOf(payload),
      prev_hash: prev,
    };
    const event = { ...header, payload, hash: eventHashOf(header) };
    events.push(event);
    prev = event.hash;
  });
  return events;
}

const codesOf = async (events: StoredEvent[], options = {}) =>
  (await verifyEvents(events, { log: 'test', ...options })).failures.map((f) => [f.seq, f.code]);

describe('verifyEvents', () => {
  describe('when the chain is intact', () => {
    it('reports ok, the head and the count', async () => {
      const events = chainOf([{ a: 1 }, { b: 2 }, [3]]);
      const report = await verifyEvents(events, { log: 'test' });
      expect(report).toEqual({
        ok: true,
        log: 'test',
        checked: 3,
        head: { seq: 3, hash: events[2]!.hash },
        failures: [],
      });
    });

    it('reports an empty log as ok with no head', async () => {
      expect(await verifyEvents([], { log: 'test' })).toMatchObject({ ok: true, checked: 0, head: null });
    });

    it('accepts any chain of JSON payloads (property)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.jsonValue(), { maxLength: 20 }), async (payloads) => {
          const report = await verifyEvents(chainOf(payloads), { log: 'test' });
          expect(report.ok).toBe(true);
          expect(report.checked).toBe(payloads.length);
        }),
      );
    });

    it('reports progress every N events and at the end', async () => {
      const progress: number[] = [];
      await verifyEvents(chainOf([1, 2, 3, 4, 5]), {
        log: 'test',
        progressEvery: 2,
        onProgress: (n) => progress.push(n),
      });
      expect(progress).toEqual([2, 4, 5]);
    });
  });

  describe('when a field of one event was changed', () => {
    const fields = ['log', 'kind', 'entity', 'actor', 'at'] as const;
    it.each(fields)('finds an edited %s as HASH_MISMATCH at its seq', async (field) => {
      const events = chainOf([1, 2, 3]);
      events[1] = { ...events[1]!, [field]: `${events[1]![field]}x` };
      const failures = await codesOf(events);
      expect(failures).toContainEqual([2, 'HASH_MISMATCH']);
    });

    it.each([
      ['payload_hash', '"'],
      ['prev_hash', '\\'],
      ['prev_hash', '\n'],
    ] as const)('reports as actual the canonical hash of an event whose %s holds %j', async (field, char) => {
      const events = chainOf([1, 2, 3]);
      const edited = { ...events[1]!, [field]: `${events[1]![field].slice(1)}${char}` };
      events[1] = edited;
      const report = await verifyEvents(events, { log: 'test' });
      expect(report.failures).toContainEqual(
        expect.objectContaining({ seq: 2, code: 'HASH_MISMATCH', actual: eventHashOf(edited) }),
      );
    });

    it('finds any single changed character in any event (property)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.jsonValue(), { minLength: 1, maxLength: 8 }),
          fc.nat(),
          fc.constantFrom('payload', 'payload_hash', 'prev_hash', 'hash', 'kind', 'entity', 'actor', 'at'),
          fc.nat(),
          async (payloads, which, field, position) => {
            const events = chainOf(payloads);
            const index = which % events.length;
            const original = events[index]![field];
            const at = position % original.length;
            const replacement = original[at] === '0' ? '1' : '0';
            events[index] = {
              ...events[index]!,
              [field]: original.slice(0, at) + replacement + original.slice(at + 1),
            };
            const report = await verifyEvents(events, { log: 'test' });
            expect(report.ok).toBe(false);
            expect(report.failures[0]!.seq).toBe(index + 1);
          },
        ),
      );
    });
  });

  describe('when events are missing, repeated or out of order', () => {
    it('finds a deleted event as SEQ_GAP and a broken link at the next seq', async () => {
      const events = chainOf([1, 2, 3, 4]);
      events.splice(1, 1);
      expect(await codesOf(events)).toEqual([
        [3, 'SEQ_GAP'],
        [3, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('finds a deleted first event', async () => {
      const events = chainOf([1, 2]).slice(1);
      expect(await codesOf(events)).toEqual([
        [2, 'SEQ_GAP'],
        [2, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('finds a repeated event', async () => {
      const events = chainOf([1, 2]);
      events.push(events[1]!);
      expect(await codesOf(events)).toEqual([
        [2, 'SEQ_GAP'],
        [2, 'PREV_HASH_MISMATCH'],
      ]);
    });

    it('finds an event of another log', async () => {
      const events = [...chainOf([1]), ...chainOf([1, 2], 'other').slice(1)];
      const failures = await codesOf(events);
      expect(failures[0]).toEqual([2, 'LOG_MISMATCH']);
    });
  });

  describe('when an event is recorded earlier than the one before it', () => {
    /** A chain whose events are recorded at `times`, rehashed as the ledger would hash them. */
    const chainAt = (times: string[]) => {
      const events: StoredEvent[] = [];
      for (const [i, at] of times.entries()) {
        const { hash: _hash, payload, ...header } = chainOf(times.map(() => ({})))[i]!;
        const rehashed = { ...header, at, prev_hash: events[i - 1]?.hash ?? GENESIS_PREV_HASH };
        events.push({ ...rehashed, payload, hash: eventHashOf(rehashed) });
      }
      return events;
    };

    it('reports TIME_REGRESSION at its seq, with both times and how far back it goes', async () => {
      const events = chainAt([
        '2026-01-01T00:00:01.000Z',
        '2026-01-01T00:00:02.000Z',
        '2026-01-01T00:00:01.999Z',
        '2026-01-01T00:00:03.000Z',
      ]);
      const report = await verifyEvents(events, { log: 'test' });
      expect(report.ok).toBe(false);
      expect(report.failures).toEqual([
        {
          seq: 3,
          code: 'TIME_REGRESSION',
          at: '2026-01-01T00:00:01.999Z',
          previous_at: '2026-01-01T00:00:02.000Z',
          behind_ms: 1,
          message: expect.stringContaining('back-dated'),
        },
      ]);
    });

    it('accepts equal times (one batch shares one time)', async () => {
      const at = '2026-01-01T00:00:01.000Z';
      expect((await verifyEvents(chainAt([at, at, at]), { log: 'test' })).ok).toBe(true);
    });

    it('reports a time that does not parse as TIME_REGRESSION: no order can be shown', async () => {
      const events = chainAt(['2026-01-01T00:00:01.000Z', 'yesterday', '2026-01-01T00:00:02.000Z']);
      expect(await codesOf(events)).toEqual([[2, 'TIME_REGRESSION']]);
    });

    it('compares the first event with the time of the head it resumes after, when given', async () => {
      const events = chainAt(['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:04.000Z']);
      const after = { seq: 1, hash: events[0]!.hash };
      expect(await codesOf(events.slice(1), { after, afterAt: events[0]!.at })).toEqual([
        [2, 'TIME_REGRESSION'],
      ]);
      expect(await codesOf(events.slice(1), { after })).toEqual([]);
    });

    it('does not judge times when told not to (the checkpointer)', async () => {
      const events = chainAt(['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:04.000Z']);
      expect(await codesOf(events, { checkTimes: false })).toEqual([]);
    });
  });

  describe('when the auditor supplies the head it trusts', () => {
    it('accepts a log that still holds that head and grew after it', async () => {
      const events = chainOf([1, 2, 3]);
      const report = await verifyEvents(events, {
        log: 'test',
        expectHead: { seq: 2, hash: events[1]!.hash },
      });
      expect(report.ok).toBe(true);
    });

    it('finds a log that ends before the head as TRUNCATED', async () => {
      const events = chainOf([1, 2, 3]);
      expect(await codesOf(events.slice(0, 2), { expectHead: { seq: 3, hash: events[2]!.hash } })).toEqual([
        [3, 'TRUNCATED'],
      ]);
    });

    it('finds a rewritten history (another hash at that seq) as REWRITTEN, not TRUNCATED', async () => {
      const events = chainOf([1, 2, 3]);
      const rewritten = chainOf([1, 2, 'forged']);
      expect(await codesOf(rewritten, { expectHead: { seq: 3, hash: events[2]!.hash } })).toEqual([
        [3, 'REWRITTEN'],
      ]);
    });

    it('finds a log cut back and written on past the head (a truncate-and-fork) as REWRITTEN', async () => {
      const events = chainOf([1, 2, 3]);
      const forked = chainOf([1, 'forked', 3, 4]);
      expect(await codesOf(forked, { expectHead: { seq: 3, hash: events[2]!.hash } })).toEqual([
        [3, 'REWRITTEN'],
      ]);
    });
  });

  describe('when there are more failures than it keeps', () => {
    it('keeps maxFailures and counts the rest', async () => {
      const events = chainOf([1, 2, 3, 4]).map((e) => ({ ...e, payload: '{}' }));
      const report = await verifyEvents(events, { log: 'test', maxFailures: 2 });
      expect(report.failures).toHaveLength(2);
      expect(report.failuresOmitted).toBe(2);
      expect(report.ok).toBe(false);
    });
  });

  describe('when it resumes after a head the caller trusts', () => {
    it('checks the rest against that head: its seq and its hash', async () => {
      const events = chainOf([1, 2, 3, 4, 5]);
      const after = { seq: 2, hash: events[1]!.hash };
      const report = await verifyEvents(events.slice(2), { log: 'test', after });
      expect(report).toMatchObject({ ok: true, checked: 3, head: { seq: 5, hash: events[4]!.hash } });
      expect(await codesOf(events.slice(2), { after: { seq: 2, hash: 'f'.repeat(64) } })).toEqual([
        [3, 'PREV_HASH_MISMATCH'],
      ]);
      expect(await codesOf(events.slice(3), { after })).toEqual([
        [4, 'SEQ_GAP'],
        [4, 'PREV_HASH_MISMATCH'],
      ]);
    });
  });

  describe('when the head it resumes after has a hash that is not hex', () => {
    it('hashes the next event, which links to it, as canonical JSON', async () => {
      const after = { seq: 1, hash: 'not "hex"' };
      const header = {
        log: 'test',
        seq: 2,
        kind: 'note',
        entity: 'e2',
        actor: 'user:alice',
        at: '2026-01-01T00:00:01.000Z',
        payload_hash: payloadHashOf('2'),
        prev_hash: after.hash,
      };
      const event = { ...header, payload: '2', hash: eventHashOf(header) };
      expect(await codesOf([event], { after })).toEqual([]);
    });
  });

  describe('when aborted', () => {
    it('stops with the abort reason', async () => {
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      await expect(verifyEvents(chainOf([1]), { log: 'test', signal: controller.signal })).rejects.toThrow(
        'stop',
      );
    });
  });

  describe('createChainChecker', () => {
    it('counts as it goes', () => {
      const checker = createChainChecker({ log: 'test' });
      for (const event of chainOf([1, 2])) checker.check(event);
      expect(checker.checked).toBe(2);
      expect(checker.finish().ok).toBe(true);
    });
  });
});
