/** Where the gateway reports what operators should know. Injected: the library never prints. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger that drops everything: the default for the library and for tests. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * JSON lines on a writable (stderr in the bin: on a stdio gateway, stdout is the MCP channel
 * and one stray line there corrupts the protocol stream).
 */
export function jsonLineLogger(write: (line: string) => void): Logger {
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
  return { info: log('info'), warn: log('warn'), error: log('error') };
}
