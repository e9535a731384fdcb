/** Thrown for settings that cannot work; the CLI prints the message and exits 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The setting at fault (`VOUCH_RATE_LIMIT_RPS`, `server.rateLimit.burst`), when one is. */
  readonly key: string | undefined;

  constructor(message: string, options: { key?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.key = options.key;
  }
}
