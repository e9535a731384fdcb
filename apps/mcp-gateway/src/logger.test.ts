import { describe, expect, it } from 'vitest';
import { jsonLineLogger } from './logger';

describe('jsonLineLogger', () => {
  describe('when lines are written', () => {
    it('writes each as one JSON object on its own line: level, ISO time, message and the fields', () => {
      const lines: string[] = [];
      const logger = jsonLineLogger((line) => lines.push(line));
      logger.info('gateway listening', { url: 'http://127.0.0.1:1/mcp' });
      logger.error('vouch execute failed', { code: 'TIMEOUT' });
      expect(lines).toHaveLength(2);
      expect(lines.every((line) => line.endsWith('\n') && !line.trimEnd().includes('\n'))).toBe(true);
      const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(first).toEqual({
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        message: 'gateway listening',
        url: 'http://127.0.0.1:1/mcp',
      });
      expect(second).toMatchObject({ level: 'error', message: 'vouch execute failed', code: 'TIMEOUT' });
    });
  });
});
