/**
 * A static look at a configured query, so a statement that cannot be a plain read is refused
 * when the configuration loads instead of when a check first runs. This is a first guard, not
 * the real one: the database still runs every query in a read-only transaction that is rolled
 * back, and the role it connects as should only be able to SELECT.
 */

/** A query with its string literals, quoted identifiers and comments masked out. */
export interface MaskedStatement {
  /** The text with every literal replaced by `''`, every quoted identifier by `q_<name>`, comments by a space. */
  code: string;
  /** True when a quote or a comment does not end. */
  unterminated: boolean;
}

/**
 * Mask literals and comments (Postgres and MySQL spellings): `'..'` with `''` escapes, `E'..'`
 * and MySQL `'..'` with backslash escapes, `$tag$..$tag$`, `"ident"`, `` `ident` ``, `-- ..`,
 * `# ..` (MySQL), and nested block comments.
 */
export function maskStatement(text: string, dialect: 'postgres' | 'mysql' = 'postgres'): MaskedStatement {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '-' && next === '-') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? n : end;
      out += ' ';
    } else if (c === '#' && dialect === 'mysql') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? n : end;
      out += ' ';
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth += 1;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth -= 1;
          i += 2;
        } else i += 1;
      }
      if (depth > 0) return { code: out, unterminated: true };
      out += ' ';
    } else if (c === "'") {
      const backslash = dialect === 'mysql' || (/[eE]$/.test(out) && !/\w[eE]$/.test(out));
      const end = endOfQuoted(text, i, "'", backslash);
      if (end === -1) return { code: out, unterminated: true };
      out += "''";
      i = end;
    } else if (c === '"' || (c === '`' && dialect === 'mysql')) {
      const end = endOfQuoted(text, i, c, false);
      if (end === -1) return { code: out, unterminated: true };
      const name = text.slice(i + 1, end - 1).replaceAll(c + c, c);
      out += `q_${name.toLowerCase().replaceAll(/\W/g, '_')}`;
      i = end;
    } else if (c === '$' && dialect === 'postgres' && /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.test(text.slice(i))) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i))![0];
      const end = text.indexOf(tag, i + tag.length);
      if (end === -1) return { code: out, unterminated: true };
      out += "''";
      i = end + tag.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return { code: out, unterminated: false };
}

function endOfQuoted(text: string, start: number, quote: string, backslash: boolean): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (backslash && c === '\\') {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (text[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i += 1;
  }
  return -1;
}

const FIRST_WORDS = new Set(['select', 'with', 'values', 'table']);

// Words that make a statement something other than a read, wherever they appear (a
// data-modifying CTE, SELECT ... INTO a new table, a locking clause, a second statement).
const WRITE_WORDS = [
  'insert',
  'update',
  'delete',
  'merge',
  'into',
  'copy',
  'call',
  'do',
  'lock',
  'grant',
  'revoke',
  'create',
  'alter',
  'drop',
  'truncate',
  'set',
  'reset',
  'listen',
  'notify',
  'prepare',
  'execute',
  'load',
  'handler',
];

/**
 * Functions with effects beyond reading rows: they signal other sessions, read or write server
 * files, change settings, hold session-level locks or reach other servers. A least-privilege
 * role cannot call most of them anyway; refusing them here states the intent in the error.
 */
const FORBIDDEN_FUNCTIONS = [
  'pg_terminate_backend',
  'pg_cancel_backend',
  'pg_reload_conf',
  'pg_rotate_logfile',
  'pg_read_file',
  'pg_read_binary_file',
  'pg_ls_dir',
  'pg_stat_file',
  'pg_ls_logdir',
  'pg_ls_waldir',
  'pg_ls_tmpdir',
  'pg_ls_archive_statusdir',
  'set_config',
  'pg_notify',
  'pg_switch_wal',
  'pg_create_restore_point',
  'lo_import',
  'lo_export',
  'lo_from_bytea',
  'lo_put',
  'lo_unlink',
  'dblink',
  'dblink_exec',
  'dblink_connect',
  'pg_advisory_lock',
  'pg_advisory_lock_shared',
  'pg_try_advisory_lock',
  'pg_try_advisory_lock_shared',
  'get_lock',
  'load_file',
  'sys_exec',
];

/** Why `text` is not one plain read, or null when it looks like one. */
export function readOnlyProblem(text: string, dialect: 'postgres' | 'mysql' = 'postgres'): string | null {
  const masked = maskStatement(text, dialect);
  if (masked.unterminated) return 'has an unterminated quote or comment';
  const code = masked.code.toLowerCase().trim().replace(/;\s*$/, '');
  if (code.includes(';')) return 'must be one statement';
  const first = /^[\s(]*([a-z_]+)/.exec(code)?.[1];
  if (first === undefined || !FIRST_WORDS.has(first)) {
    return `must be a SELECT (or WITH / VALUES / TABLE), not ${first?.toUpperCase() ?? 'empty'}`;
  }
  const words = new Set(code.match(/[a-z_][a-z0-9_$]*/g) ?? []);
  const write = WRITE_WORDS.find((word) => words.has(word));
  if (write !== undefined) return `must only read: ${write.toUpperCase()} is not allowed`;
  if (/\bfor\s+(no\s+key\s+)?(update|share|key\s+share)\b/.test(code))
    return 'must not lock rows (FOR UPDATE/SHARE)';
  for (const name of FORBIDDEN_FUNCTIONS) {
    if (new RegExp(`(^|[^\\w$])(q_)?${name}\\s*\\(`).test(code)) return `must not call ${name}()`;
  }
  return null;
}

/** The highest `$n` placeholder outside literals and comments (0 when none). */
export function highestPlaceholder(text: string): number {
  const { code } = maskStatement(text, 'postgres');
  return Math.max(0, ...[...code.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
}

/**
 * Rewrite `$1`, `$2`, ... into MySQL's positional `?`, and the parameter order to match
 * (`$2 ... $1 ... $2` binds params [2, 1, 2]). Literals and comments are left as they are.
 */
export function toPositionalPlaceholders(text: string): { text: string; order: number[] } {
  const order: number[] = [];
  let out = '';
  let last = 0;
  const masked = maskWithOffsets(text);
  for (const match of masked.matchAll(/\$(\d+)/g)) {
    out += `${text.slice(last, match.index)}?`;
    order.push(Number(match[1]));
    last = match.index + match[0].length;
  }
  return { text: out + text.slice(last), order };
}

// maskStatement changes lengths; this variant keeps every offset by masking with spaces.
function maskWithOffsets(text: string): string {
  const chars = text.split('');
  let i = 0;
  const n = text.length;
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k += 1) chars[k] = ' ';
  };
  while (i < n) {
    const c = text[i]!;
    if ((c === '-' && text[i + 1] === '-') || c === '#') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? n : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      const end = endOfQuoted(text, i, c, c === "'");
      const stop = end === -1 ? n : end;
      blank(i, stop);
      i = stop;
    } else i += 1;
  }
  return chars.join('');
}
