import type { CallToolResult } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { applyResultObligations } from './result-obligations';

const textOf = (result: CallToolResult) =>
  result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`)).join('\n');

describe('applyResultObligations', () => {
  describe('when pointers are masked', () => {
    it('masks them in structured content and in JSON text blocks, leaving the input unchanged', () => {
      const input: CallToolResult = {
        content: [{ type: 'text', text: JSON.stringify({ user: { ssn: '1', name: 'Ann' } }) }],
        structuredContent: { user: { ssn: '1', name: 'Ann' } },
      };
      const { result, applied } = applyResultObligations(input, {
        mask: { pointers: ['/user/ssn', '/nope'] },
      });
      expect(result.structuredContent).toEqual({ user: { ssn: '[masked]', name: 'Ann' } });
      expect(JSON.parse(textOf(result))).toEqual({ user: { ssn: '[masked]', name: 'Ann' } });
      expect(applied).toEqual({ masked: 2 });
      expect(input.structuredContent).toEqual({ user: { ssn: '1', name: 'Ann' } });
    });
  });

  describe('when patterns are masked', () => {
    it('masks secrets and personal data in every string but leaves other text alone', () => {
      const { result, applied } = applyResultObligations(
        {
          content: [
            {
              type: 'text',
              text: 'key AKIAIOSFODNN7EXAMPLE mail ann@example.com card 4111 1111 1111 1111 order 1234567890123',
            },
          ],
          structuredContent: { token: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789', note: 'ssn 123-45-6789' },
        },
        { mask: { patterns: ['secrets', 'personal-data'] } },
      );
      expect(textOf(result)).toBe(
        'key [masked:secret] mail [masked:personal-data] card [masked:personal-data] order 1234567890123',
      );
      expect(result.structuredContent).toEqual({
        token: '[masked:secret]',
        note: 'ssn [masked:personal-data]',
      });
      expect(applied?.masked).toBe(5);
    });

    it("applies an operator's own regular expression", () => {
      const { result } = applyResultObligations(
        { content: [{ type: 'text', text: 'ticket INC-0042 open' }] },
        { mask: { patterns: [{ regex: 'INC-\\d+' }] } },
      );
      expect(textOf(result)).toBe('ticket [masked] open');
    });
  });

  describe('when the result is larger than the cap', () => {
    it('keeps text up to the cap, drops the rest and says so', () => {
      const { result, applied } = applyResultObligations(
        {
          content: [
            { type: 'text', text: 'a'.repeat(100) },
            { type: 'image', data: 'AAAA', mimeType: 'image/png' },
            { type: 'text', text: 'b'.repeat(100) },
          ],
          structuredContent: { big: 'c'.repeat(100) },
        },
        { maxBytes: 150 },
      );
      expect(textOf(result)).toBe(
        `${'a'.repeat(100)}\n${'b'.repeat(50)}\n[truncated: 150 bytes of text shown of a ${applied?.truncated?.original_bytes}-byte result; the full result is recorded in Vouch]`,
      );
      expect(result.structuredContent).toBeUndefined();
      expect(applied?.truncated?.original_bytes).toBeGreaterThan(300);
    });

    it('leaves a result within the cap as it is', () => {
      const input: CallToolResult = { content: [{ type: 'text', text: 'short' }] };
      expect(applyResultObligations(input, { maxBytes: 1000 }).result).toEqual(input);
    });
  });
});
