import pino from 'pino';

/** Where the gateway reports what operators should know. Injected: the library never prints. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger that drops everything: the default for the library and for tests. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * JSON lines (`{"level","time",...fields,"message"}`), written by pino, on a writable (stderr in
 * the bin: on a stdio gateway, stdout is the MCP channel and one stray line there corrupts the
 * protocol stream).
 */
export function jsonLineLogger(write: (line: string) => void): Logger {
  const lines = pino(
    {
      base: undefined,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    { write },
  );
  // Each level named, not `lines[level]`: the execute-path guard reads a member chosen at run
  // time as a possible tool call.
  return {
    info: (message, fields) => lines.info(fields ?? {}, message),
    warn: (message, fields) => lines.warn(fields ?? {}, message),
    error: (message, fields) => lines.error(fields ?? {}, message),
  };
}
