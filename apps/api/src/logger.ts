import pino from 'pino';

/** Structured fields of one log line: plain JSON values, never secrets or request payloads. */
export type LogFields = Record<string, unknown>;

/** The logger the service writes through; injected everywhere so tests can capture it. */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A logger that drops everything (the default for `createApp` in tests). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * One JSON object per line (`{"level","time",...fields,"msg"}`), for log shippers, written by
 * pino. Every line's fields go through {@link redactFields} first, whatever its caller passed.
 *
 * @example
 * const logger = createJsonLogger((line) => process.stdout.write(line));
 * logger.info('listening', { port: 8787 });
 */
export function createJsonLogger(write: (line: string) => void, now: () => Date = () => new Date()): Logger {
  const lines = pino(
    {
      base: undefined,
      messageKey: 'msg',
      timestamp: () => `,"time":"${now().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    { write },
  );
  const emit = (level: 'info' | 'warn' | 'error', message: string, fields?: LogFields) => {
    try {
      lines[level](redactFields(fields ?? {}), message);
    } catch {
      // A field JSON cannot carry (a throwing getter, a BigInt) must not take the request down with it.
      lines[level]({ fields_dropped: true }, message);
    }
  };
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

/** A logger that keeps lines in memory, for tests that assert what was (not) logged. */
export function createMemoryLogger(): Logger & { lines: Array<{ level: string; msg: string } & LogFields> } {
  const lines: Array<{ level: string; msg: string } & LogFields> = [];
  const push = (level: string) => (msg: string, fields?: LogFields) => {
    lines.push({ level, msg, ...fields });
  };
  return { lines, info: push('info'), warn: push('warn'), error: push('error') };
}

/**
 * What every log line's fields become before they are written, whatever its caller passed: an
 * error becomes its {@link summarizeError} (an error object's own enumerable members can be
 * its query parameters: drizzle's `DrizzleQueryError` has `params`), a member named like
 * query parameters is replaced, and a cycle is cut. The last line of defence; callers
 * summarize errors themselves.
 */
export function redactFields(fields: LogFields): LogFields {
  return redactValue(fields, new Set()) as LogFields;
}

function redactValue(value: unknown, ancestors: Set<object>): unknown {
  if (value instanceof Error) return summarizeError(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.has(value)) return '[circular]';
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return redactValue(toJSON.call(value), ancestors);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => redactValue(item, ancestors));
    const redacted: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      // Defined, not assigned: a key named "__proto__" would otherwise set the prototype.
      Object.defineProperty(redacted, key, {
        value: QUERY_PARAMETER_KEYS.has(key) ? '[redacted]' : redactValue(member, ancestors),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return redacted;
  } finally {
    ancestors.delete(value);
  }
}

const QUERY_PARAMETER_KEYS = new Set(['params', 'parameters']);

/**
 * Name, code and message of an error and its causes, for the server log, with nothing a
 * query was given.
 *
 * Why: database errors carry the statement's parameters, and a parameter can be anything a
 * request carried (the SHA-256 of the caller's API key is the parameter of every key
 * lookup). drizzle's `DrizzleQueryError` puts them in its message (`Failed query: …
 * params: …`), so its message is rebuilt from the statement text alone; Postgres's own
 * messages for data exceptions (SQLSTATE class 22) quote the offending value, so those keep
 * only their SQLSTATE; and the stack keeps its frames, not its first line (the message again).
 */
export function summarizeError(error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error)) return { value: typeof error };
  const summary: Record<string, unknown> = { name: error.name, message: safeMessage(error) };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') summary.code = code;
  if (error.stack) {
    const frames = error.stack.split('\n').filter((line) => /^\s+at /.test(line));
    summary.stack = frames.slice(0, 7).join('\n');
  }
  if (error.cause !== undefined && depth < 3) summary.cause = summarizeError(error.cause, depth + 1);
  return summary;
}

function safeMessage(error: Error): string {
  const query = (error as { query?: unknown }).query;
  if (typeof query === 'string' && 'params' in error) return `Failed query: ${query}`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)) return `data exception (SQLSTATE ${code})`;
  // Any other message that lists parameters the way drizzle does.
  return error.message.replace(/\nparams: [\s\S]*$/, '\nparams: [redacted]');
}
