/** Thrown for settings that cannot work; the CLI prints the message and exits 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
