import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json';
import { type EventHeader, eventHashOf, GENESIS_PREV_HASH, payloadHashOf } from './event-hash';
import { pythonChain } from './fixtures/event-hash/independent-vector';
import { sha256Hex } from './sha256';

const header: EventHeader = {
  log: 'tenant-a',
  seq: 7,
  kind: 'observation.recorded',
  entity: 'obs_0007',
  actor: 'gateway:mcp',
  at: '2026-11-30T05:09:06.123Z',
  payload_hash: 'a'.repeat(64),
  prev_hash: 'b'.repeat(64),
};

/** One edit of each header field: the hash must notice every one. */
const edits: readonly [keyof EventHeader, EventHeader[keyof EventHeader]][] = [
  ['log', 'tenant-b'],
  ['seq', 8],
  ['kind', 'observation.edited'],
  ['entity', 'obs_0008'],
  ['actor', 'gateway:other'],
  ['at', '2026-11-30T05:09:06.124Z'],
  ['payload_hash', `${'a'.repeat(63)}b`],
  ['prev_hash', `${'b'.repeat(63)}c`],
];

describe('eventHashOf', () => {
  describe('when one header field changes', () => {
    it.each(edits)('changes the hash when %s changes', (field, value) => {
      expect(eventHashOf({ ...header, [field]: value })).not.toBe(eventHashOf(header));
    });

    it('covers every field of the header', () => {
      expect(edits.map(([field]) => field).sort()).toEqual(Object.keys(header).sort());
    });

    it('changes the hash for any edit of any field', () => {
      const field = fc.constantFrom(...edits.map(([name]) => name));
      fc.assert(
        fc.property(field, fc.string({ unit: 'binary' }), fc.nat(), (name, text, seq) => {
          const edited = { ...header, [name]: name === 'seq' ? seq : text };
          fc.pre(edited[name] !== header[name]);
          expect(eventHashOf(edited)).not.toBe(eventHashOf(header));
        }),
      );
    });
  });

  describe('when given a stored event', () => {
    it('hashes only the header fields, so the stored hash and payload do not feed back into it', () => {
      const stored = { ...header, payload: '{"a":1}', hash: 'c'.repeat(64) };
      expect(eventHashOf(stored)).toBe(eventHashOf(header));
    });
  });

  describe('when computing the hash', () => {
    it('is SHA-256 of the canonical JSON of the eight header fields', () => {
      const text =
        '{"actor":"gateway:mcp","at":"2026-11-30T05:09:06.123Z","entity":"obs_0007","kind":"observation.recorded",' +
        `"log":"tenant-a","payload_hash":"${'a'.repeat(64)}","prev_hash":"${'b'.repeat(64)}","seq":7}`;
      expect(canonicalJson(header)).toBe(text);
      expect(eventHashOf(header)).toBe(sha256Hex(text));
    });

    it('refuses a header field JSON cannot carry instead of hashing around it', () => {
      expect(() => eventHashOf({ ...header, seq: Number.NaN })).toThrow(
        expect.objectContaining({ name: 'AuditError', code: 'NON_FINITE_NUMBER', path: '/seq' }),
      );
    });
  });

  describe('when checked against an independent implementation (CPython json + hashlib)', () => {
    it.each(pythonChain.map((event, i) => [i + 1, event] as const))(
      'reproduces event %i byte for byte',
      (_, event) => {
        expect(canonicalJson(event.payload)).toBe(event.canonicalPayload);
        expect(payloadHashOf(event.canonicalPayload)).toBe(event.header.payload_hash);
        expect(eventHashOf(event.header)).toBe(event.hash);
      },
    );

    it('links the second event to the first, and the first to the genesis hash', () => {
      expect(pythonChain[0].header.prev_hash).toBe(GENESIS_PREV_HASH);
      expect(pythonChain[1].header.prev_hash).toBe(eventHashOf(pythonChain[0].header));
    });
  });
});

describe('payloadHashOf', () => {
  describe('when given canonical text', () => {
    it('equals sha256Hex of that text', () => {
      fc.assert(
        fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }), (value) => {
          const text = canonicalJson(value);
          expect(payloadHashOf(text)).toBe(sha256Hex(text));
        }),
      );
    });

    it('hashes the text as given: it does not re-canonicalize', () => {
      expect(payloadHashOf('{"b":1, "a":2}')).toBe(sha256Hex('{"b":1, "a":2}'));
      expect(payloadHashOf('{"b":1, "a":2}')).not.toBe(payloadHashOf('{"a":2,"b":1}'));
    });
  });
});

describe('GENESIS_PREV_HASH', () => {
  describe('when read', () => {
    it('is 64 zero hex digits', () => {
      expect(GENESIS_PREV_HASH).toMatch(/^0{64}$/);
    });
  });
});

describe('eventHashOf fast path', () => {
  // Strings of every kind the fast path must handle or hand over: controls, quotes,
  // backslashes (also a literal `\ud`), astral characters and lone surrogates.
  const anyText = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.constantFrom('\\', 'u', 'd', '8', '0', '"', '\n', '\ud800', '\udc00', 'a', '😀') }),
  );
  const anyHeader = fc.record({
    log: anyText,
    seq: fc.oneof(fc.integer(), fc.double(), fc.constant(-0)),
    kind: anyText,
    entity: anyText,
    actor: anyText,
    at: anyText,
    payload_hash: anyText,
    prev_hash: anyText,
    // Absent, null (a database column) or any text: `fields/1` and `member-fields/1:<member>` events.
    commitment: fc.oneof(fc.constant(undefined), fc.constant(null), anyText),
  });
  const reference = (h: EventHeader) =>
    sha256Hex(
      canonicalJson({
        log: h.log,
        seq: h.seq,
        kind: h.kind,
        entity: h.entity,
        actor: h.actor,
        at: h.at,
        ...(h.commitment === undefined || h.commitment === null ? {} : { commitment: h.commitment }),
        payload_hash: h.payload_hash,
        prev_hash: h.prev_hash,
      }),
    );

  describe('when given any header', () => {
    it('gives the hash of the canonical JSON, or refuses with the same code', () => {
      fc.assert(
        fc.property(anyHeader, (h) => {
          let expected: string | { code: string };
          try {
            expected = reference(h);
          } catch (error) {
            expected = { code: (error as { code: string }).code };
          }
          if (typeof expected === 'string') expect(eventHashOf(h)).toBe(expected);
          else expect(() => eventHashOf(h)).toThrow(expect.objectContaining(expected));
        }),
        { numRuns: 3_000 },
      );
    });

    it('gives the hash of the canonical JSON when one string is unusual and the others ordinary', () => {
      const fields = [
        'log',
        'kind',
        'entity',
        'actor',
        'at',
        'payload_hash',
        'prev_hash',
        'commitment',
      ] as const;
      const ordinary: EventHeader = {
        log: 'default',
        seq: 7,
        kind: 'tool.call',
        entity: 'proposal-7',
        actor: 'agent:a',
        at: '2026-01-01T00:00:00.007Z',
        payload_hash: 'a'.repeat(64),
        prev_hash: 'b'.repeat(64),
        commitment: 'fields/1',
      };
      fc.assert(
        fc.property(fc.constantFrom(...fields), anyText, fc.boolean(), (field, text, committed) => {
          const h: EventHeader = { ...ordinary, [field]: text };
          if (!committed && field !== 'commitment') delete h.commitment;
          let expected: string | { code: string };
          try {
            expected = reference(h);
          } catch (error) {
            expected = { code: (error as { code: string }).code };
          }
          if (typeof expected === 'string') expect(eventHashOf(h)).toBe(expected);
          else expect(() => eventHashOf(h)).toThrow(expect.objectContaining(expected));
        }),
        { numRuns: 3_000 },
      );
    });
  });
});
