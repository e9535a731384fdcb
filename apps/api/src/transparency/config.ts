import { parseCosignerKey } from '@vouch/audit';
import { ConfigError } from '../config-error';

/** Checkpoint settings of `vouch serve` and the transparency commands, from the environment. */
export interface TransparencyConfig {
  /** `VOUCH_LOG_SIGNING_KEY`: signer key text(s); required on Postgres for signed checkpoints. */
  signingKey: string | undefined;
  /** `VOUCH_LOG_ORIGIN`: checkpoint origins are `<origin>/<log>`. */
  origin: string | undefined;
  /** `VOUCH_CHECKPOINT_INTERVAL_MS`: least time between two checkpoints of a log (default 1000). */
  intervalMs: number;
  /**
   * `VOUCH_LOG_SHARED_SIGNATURE` (default true): besides its own per-log key, every checkpoint
   * is also signed by the shared key itself, as all were before per-log keys, so auditors who
   * trust only the shared key keep verifying. Set it to false once they trust per-log keys.
   */
  sharedSignature: boolean;
  /**
   * `VOUCH_WITNESS_KEYS`: witness verifier keys (`cosignature/v1`, whitespace or comma
   * separated) whose cosignatures the server collects and serves with its checkpoints.
   */
  witnessKeys: string[];
  /** `VOUCH_TILES_PUBLIC` (default false): serve the tlog-tiles endpoints without a key. */
  tilesPublic: boolean;
}

/** Read the checkpoint settings; throws `ConfigError` for values that cannot work. */
export function transparencyConfig(env: NodeJS.ProcessEnv): TransparencyConfig {
  const raw = env.VOUCH_CHECKPOINT_INTERVAL_MS?.trim();
  let intervalMs = 1_000;
  if (raw) {
    intervalMs = Number(raw);
    if (!/^\d+$/.test(raw) || intervalMs > 3_600_000) {
      throw new ConfigError(`VOUCH_CHECKPOINT_INTERVAL_MS=${raw} is not a whole number from 0 to 3600000`, {
        key: 'VOUCH_CHECKPOINT_INTERVAL_MS',
      });
    }
  }
  const shared = env.VOUCH_LOG_SHARED_SIGNATURE?.trim().toLowerCase();
  if (shared && !['true', 'false', '1', '0'].includes(shared)) {
    throw new ConfigError(`VOUCH_LOG_SHARED_SIGNATURE=${shared} is not true or false`, {
      key: 'VOUCH_LOG_SHARED_SIGNATURE',
    });
  }
  const witnessKeys = (env.VOUCH_WITNESS_KEYS ?? '').split(/[\s,]+/).filter((k) => k !== '');
  for (const key of witnessKeys) {
    try {
      parseCosignerKey(key);
    } catch (error) {
      throw new ConfigError(
        `VOUCH_WITNESS_KEYS holds ${key.split('+')[0]}, which is not a witness key (<name>+<id>+<base64 of 0x04 and the public key>): ${(error as Error).message}`,
        { key: 'VOUCH_WITNESS_KEYS' },
      );
    }
  }
  if (witnessKeys.length > 32) {
    throw new ConfigError('VOUCH_WITNESS_KEYS holds more than 32 keys', { key: 'VOUCH_WITNESS_KEYS' });
  }
  const tiles = env.VOUCH_TILES_PUBLIC?.trim().toLowerCase();
  if (tiles && !['true', 'false', '1', '0'].includes(tiles)) {
    throw new ConfigError(`VOUCH_TILES_PUBLIC=${tiles} is not true or false`, { key: 'VOUCH_TILES_PUBLIC' });
  }
  return {
    tilesPublic: tiles === 'true' || tiles === '1',
    witnessKeys,
    sharedSignature: shared === undefined || shared === '' || shared === 'true' || shared === '1',
    signingKey: env.VOUCH_LOG_SIGNING_KEY?.trim() || undefined,
    origin: env.VOUCH_LOG_ORIGIN?.trim() || undefined,
    intervalMs,
  };
}
