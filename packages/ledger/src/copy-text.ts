/**
 * Rows of Postgres's COPY text format (`COPY … TO STDOUT`, the default format): one row per
 * line, columns separated by tabs, `\N` for NULL, and in a value a backslash escapes a
 * backslash, a tab, a newline and the other control characters. So a newline byte always
 * ends a row, and a tab byte always ends a column.
 */

const NEWLINE = 0x0a;
const TAB = '\t';
const BACKSLASH = '\\';

/**
 * Splits a stream of COPY text chunks into rows, whatever the chunk boundaries: a row cut
 * between two chunks (or inside a UTF-8 character) is kept as bytes until its end arrives.
 * Each call hands over the complete rows of one chunk as one decoded string (rows separated
 * by newlines, no trailing one), so a chunk costs one decode whatever its row count.
 */
export class CopyLines {
  #carry: Buffer | null = null;

  /** The complete rows the chunk ends (`''` when none), newline-separated. */
  push(chunk: Buffer): string {
    const bytes = this.#carry === null ? chunk : Buffer.concat([this.#carry, chunk]);
    const last = bytes.lastIndexOf(NEWLINE);
    if (last < 0) {
      this.#carry = Buffer.from(bytes);
      return '';
    }
    this.#carry = last === bytes.length - 1 ? null : Buffer.from(bytes.subarray(last + 1));
    return bytes.toString('utf8', 0, last);
  }

  /** True when a row was left without its end: the stream stopped in the middle of a row. */
  get partial(): boolean {
    return this.#carry !== null;
  }
}

/**
 * The columns of one row (`text.slice(start, end)`, without its newline), NULL as null.
 * A row with more or fewer columns than `count` is an error: the caller asked for `count`.
 */
export function copyColumns(text: string, start: number, end: number, count: number): Array<string | null> {
  const columns = new Array<string | null>(count);
  const escaped = text.indexOf(BACKSLASH, start);
  const plain = escaped < 0 || escaped >= end;
  let at = start;
  for (let i = 0; i < count; i++) {
    let stop = text.indexOf(TAB, at);
    if (stop < 0 || stop >= end) {
      if (i < count - 1) throw new Error(`a COPY row has ${i + 1} columns, not ${count}`);
      stop = end;
    } else if (i === count - 1) throw new Error(`a COPY row has more than ${count} columns`);
    const raw = text.slice(at, stop);
    columns[i] = plain ? raw : unescapeCopyValue(raw);
    at = stop + 1;
  }
  return columns;
}

/** One value as COPY text wrote it: `\N` is NULL; every backslash sequence is decoded. */
export function unescapeCopyValue(raw: string): string | null {
  if (raw === '\\N') return null;
  if (!raw.includes(BACKSLASH)) return raw;
  let out = '';
  let from = 0;
  for (let i = raw.indexOf(BACKSLASH); i >= 0; i = raw.indexOf(BACKSLASH, from)) {
    out += raw.slice(from, i);
    const c = raw[i + 1];
    from = i + 2;
    switch (c) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case undefined:
        // A backslash at the very end: COPY never writes one; kept as it is.
        out += BACKSLASH;
        break;
      default: {
        // COPY TO writes no octal or hex sequences, but they are the format's: decode them
        // the way COPY FROM would, as one byte each (ASCII here, as the server emits none).
        const octal = /^[0-7]{1,3}/.exec(raw.slice(i + 1, i + 4));
        const hex = c === 'x' ? /^[0-9a-fA-F]{1,2}/.exec(raw.slice(i + 2, i + 4)) : null;
        if (octal) {
          out += String.fromCharCode(Number.parseInt(octal[0], 8) & 0xff);
          from = i + 1 + octal[0].length;
        } else if (hex) {
          out += String.fromCharCode(Number.parseInt(hex[0], 16));
          from = i + 2 + hex[0].length;
        } else out += c;
      }
    }
  }
  return out + raw.slice(from);
}

/** `value` as an SQL string literal, for a statement that takes no parameters (COPY). */
export function sqlLiteral(value: string): string {
  if (value.includes('\0')) throw new Error('a string with a NUL character cannot be an SQL literal');
  // E'' with backslashes doubled means the same whatever standard_conforming_strings says.
  return `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
