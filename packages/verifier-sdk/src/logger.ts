/** Structured log fields: plain values, never secrets (connection strings, tokens). */
export type LogFields = Record<string, unknown>;

/** The logger the host injects into every verifier; verifiers never write to the console. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A logger that drops everything: the default when the host is given none. */
export const silentLogger: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
});

/** A logger that adds `fields` to every line, e.g. the verifier and postcondition it runs for. */
export function withLogFields(logger: Logger, fields: LogFields): Logger {
  return {
    debug: (message, more) => logger.debug(message, { ...fields, ...more }),
    info: (message, more) => logger.info(message, { ...fields, ...more }),
    warn: (message, more) => logger.warn(message, { ...fields, ...more }),
    error: (message, more) => logger.error(message, { ...fields, ...more }),
  };
}
