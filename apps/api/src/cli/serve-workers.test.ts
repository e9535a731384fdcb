import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config';
import { createMemoryLogger } from '../logger';
import { MAX_WORKERS, withFields, workerCount } from './serve-workers';

describe('workerCount', () => {
  it('is 1 when neither --workers nor VOUCH_WORKERS is given', () => {
    expect(workerCount(undefined)).toBe(1);
    expect(workerCount(' ')).toBe(1);
  });

  it(`takes a whole number from 1 to ${MAX_WORKERS}`, () => {
    expect(workerCount('2')).toBe(2);
    expect(workerCount(String(MAX_WORKERS))).toBe(MAX_WORKERS);
  });

  it.each(['0', '-1', '1.5', 'two', String(MAX_WORKERS + 1)])('refuses %s', (raw) => {
    expect(() => workerCount(raw)).toThrow(ConfigError);
  });
});

describe('withFields', () => {
  it('adds the fields to every line, under the line’s own', () => {
    const logger = createMemoryLogger();
    withFields(logger, { pid: 42 }).info('request', { status: 200 });
    withFields(logger, { pid: 42 }).error('worker exited', { pid: 7 });
    expect(logger.lines).toEqual([
      { level: 'info', msg: 'request', pid: 42, status: 200 },
      { level: 'error', msg: 'worker exited', pid: 7 },
    ]);
  });
});
