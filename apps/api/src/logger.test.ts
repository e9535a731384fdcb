import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { createJsonLogger, summarizeError } from './logger';

const SECRET = 'f00dfeed'.repeat(8);

/** A Postgres error as postgres.js throws it: SQLSTATE in `code`, the statement's values beside it. */
function postgresError(code: string, message: string): Error {
  return Object.assign(new Error(message), { name: 'PostgresError', code, parameters: [SECRET] });
}

function linesOf(log: (logger: ReturnType<typeof createJsonLogger>) => void): string {
  const lines: string[] = [];
  log(createJsonLogger((line) => lines.push(line)));
  return lines.join('');
}

describe('summarizeError', () => {
  describe('when drizzle wraps a failed query', () => {
    it('keeps the statement and drops its parameters, from the message and the stack', () => {
      const error = new DrizzleQueryError(
        'select * from api_keys where key_hash = $1',
        [SECRET],
        postgresError('08006', 'connection failure'),
      );
      const summary = summarizeError(error);
      expect(JSON.stringify(summary)).not.toContain(SECRET);
      expect(summary).toMatchObject({
        message: 'Failed query: select * from api_keys where key_hash = $1',
        cause: { name: 'PostgresError', code: '08006', message: 'connection failure' },
      });
    });
  });

  describe('when Postgres refuses a value (SQLSTATE class 22)', () => {
    it('keeps the SQLSTATE, not the message that quotes the value', () => {
      const error = postgresError('22P02', `invalid input syntax for type uuid: "${SECRET}"`);
      expect(summarizeError(error)).toMatchObject({
        code: '22P02',
        message: 'data exception (SQLSTATE 22P02)',
      });
      expect(JSON.stringify(summarizeError(error))).not.toContain(SECRET);
    });
  });
});

describe('createJsonLogger', () => {
  describe('when a caller passes an error object or query parameters as fields', () => {
    it('writes neither the parameters nor the error members that hold them', () => {
      const text = linesOf((logger) => {
        logger.error('failed', { error: new DrizzleQueryError('select $1', [SECRET], undefined) });
        logger.warn('odd', { nested: { params: [SECRET], parameters: { a: SECRET } } });
      });
      expect(text).not.toContain(SECRET);
      expect(text).toContain('Failed query: select $1');
    });
  });
});

describe('createJsonLogger lines', () => {
  describe('when a line is written', () => {
    it('is one JSON object on its own line with level, ISO time, msg and the fields', () => {
      const lines: string[] = [];
      const logger = createJsonLogger(
        (line) => lines.push(line),
        () => new Date('2026-01-02T03:04:05.678Z'),
      );
      logger.warn('slow', { request_id: 'r1', duration_ms: 12.5 });
      expect(lines).toHaveLength(1);
      expect(lines[0]!.endsWith('\n')).toBe(true);
      expect(lines[0]!.trimEnd()).not.toContain('\n');
      expect(JSON.parse(lines[0]!)).toEqual({
        level: 'warn',
        time: '2026-01-02T03:04:05.678Z',
        msg: 'slow',
        request_id: 'r1',
        duration_ms: 12.5,
      });
    });
  });

  describe('when fields hold a cycle, a BigInt, or errors deep inside arrays', () => {
    it('still writes the line, cut at the cycle and with every error summarized', () => {
      const cyclic: Record<string, unknown> = { name: 'a' };
      cyclic.self = cyclic;
      const text = linesOf((logger) =>
        logger.error('odd', {
          cyclic,
          big: 10n ** 30n,
          errors: [{ nested: new DrizzleQueryError('select $1', [SECRET], undefined) }],
        }),
      );
      const line = JSON.parse(text);
      expect(line).toMatchObject({
        msg: 'odd',
        cyclic: { name: 'a', self: '[circular]' },
        big: '1000000000000000000000000000000',
        errors: [{ nested: { message: 'Failed query: select $1' } }],
      });
      expect(text).not.toContain(SECRET);
    });
  });
});
