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
 * One JSON object per line (`{"level","time","msg",...fields}`), for log shippers.
 *
 * @example
 * const logger = createJsonLogger((line) => process.stdout.write(line));
 * logger.info('listening', { port: 8787 });
 */
export function createJsonLogger(write: (line: string) => void, now: () => Date = () => new Date()): Logger {
  const emit = (level: string, message: string, fields?: LogFields) => {
    let line: string;
    try {
      line = JSON.stringify({ level, time: now().toISOString(), msg: message, ...fields });
    } catch {
      // A field JSON cannot carry (a cycle, a BigInt) must not take the request down with it.
      line = JSON.stringify({ level, time: now().toISOString(), msg: message, fields_dropped: true });
    }
    write(`${line}\n`);
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
