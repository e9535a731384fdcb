import { describe, expect, it } from 'vitest';
import { CopyLines, copyColumns, sqlLiteral, unescapeCopyValue } from './copy-text';

describe('CopyLines', () => {
  it('joins a row cut between chunks, even inside a UTF-8 character', () => {
    const bytes = Buffer.from('a\té\n𝄞\tb\nlast\trow\n', 'utf8');
    const lines = new CopyLines();
    const out: string[] = [];
    // Every byte a chunk of its own: every cut there is.
    for (let i = 0; i < bytes.length; i++) {
      const text = lines.push(bytes.subarray(i, i + 1));
      if (text !== '') out.push(text);
    }
    expect(out).toEqual(['a\té', '𝄞\tb', 'last\trow']);
    expect(lines.partial).toBe(false);
  });

  it('hands over the complete rows of a chunk at once and keeps the rest', () => {
    const lines = new CopyLines();
    expect(lines.push(Buffer.from('1\tx\n2\ty\n3\t'))).toBe('1\tx\n2\ty');
    expect(lines.partial).toBe(true);
    expect(lines.push(Buffer.from('z\n'))).toBe('3\tz');
    expect(lines.partial).toBe(false);
  });
});

describe('copyColumns', () => {
  it('splits on tabs, reads \\N as NULL and decodes escapes', () => {
    const text = 'x\n\\N\ta\\tb\\\\N\t\\n\\r\\b\\f\\v\\\\\t\nnext';
    expect(copyColumns(text, 2, text.indexOf('\nnext'), 4)).toEqual([null, 'a\tb\\N', '\n\r\b\f\v\\', '']);
  });

  it('refuses a row with more or fewer columns than asked for', () => {
    expect(() => copyColumns('a\tb', 0, 3, 3)).toThrow(/2 columns, not 3/);
    expect(() => copyColumns('a\tb\tc', 0, 5, 2)).toThrow(/more than 2 columns/);
  });
});

describe('unescapeCopyValue', () => {
  it('decodes the octal and hex forms COPY FROM accepts', () => {
    expect(unescapeCopyValue('\\101\\x42\\7')).toBe('AB\u0007');
  });

  it('leaves plain text as it is, and \\N inside a value is not NULL', () => {
    expect(unescapeCopyValue('{"a":1}')).toBe('{"a":1}');
    expect(unescapeCopyValue('\\\\N')).toBe('\\N');
    expect(unescapeCopyValue('\\N')).toBeNull();
  });
});

describe('sqlLiteral', () => {
  it('quotes and escapes so the text means itself', () => {
    expect(sqlLiteral("it's \\ odd")).toBe("E'it''s \\\\ odd'");
    expect(() => sqlLiteral('a\0b')).toThrow(/NUL/);
  });
});
