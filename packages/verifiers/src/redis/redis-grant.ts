import {
  type RedisGrant,
  type RedisReadCommand,
  sourceForbidden,
  sourceUnavailable,
  type VerifierError,
} from '@vouch/verifier-sdk';
import { Redis } from 'ioredis';

/** The read-only commands a Redis grant runs; anything else is refused before it is sent. */
export const REDIS_READ_COMMANDS: readonly RedisReadCommand[] = [
  'GET',
  'MGET',
  'EXISTS',
  'TYPE',
  'TTL',
  'PTTL',
  'STRLEN',
  'HGET',
  'HMGET',
  'HGETALL',
  'HEXISTS',
  'HLEN',
  'LLEN',
  'LRANGE',
  'LINDEX',
  'SCARD',
  'SISMEMBER',
  'SMEMBERS',
  'ZCARD',
  'ZSCORE',
  'ZRANK',
  'ZRANGE',
  'XLEN',
];

/** Options for {@link createRedisGrant}. */
export interface RedisGrantOptions {
  /** The connection's name from configuration (`session-cache`); verifiers record it as their source. */
  name: string;
  /** A redis:// or rediss:// URL. Prefer a Redis ACL user limited to `+@read` on the keys checks read. */
  url: string;
  /** Every key is read under this prefix (e.g. `refunds:`), so a key from the proposal cannot reach other data. */
  keyPrefix?: string;
  /** Milliseconds to wait for a connection (default 5000). */
  connectTimeoutMs?: number;
}

/** A read-only Redis grant that owns a connection. */
export interface OwnedRedisGrant extends RedisGrant {
  /** Close the connection. */
  close(): Promise<void>;
}

// Replies that mean "you may not do this here" (ACL), as opposed to "could not read".
const FORBIDDEN_REPLY = /^(NOPERM|NOAUTH|WRONGPASS)\b/;

/**
 * A {@link RedisGrant} on one Redis server (ioredis). Only {@link REDIS_READ_COMMANDS} are sent,
 * keys are confined to `keyPrefix`, each command is bounded by the verifier's deadline, and
 * nothing is queued while the server is down: an unreachable server is `SOURCE_UNAVAILABLE` at
 * once, an ACL refusal `SOURCE_FORBIDDEN`, so neither ever reads as `fail`.
 *
 * @example
 * const redis = createRedisGrant({ name: 'session-cache', url: 'redis://vouch@cache:6379', keyPrefix: 'refunds:' });
 */
export function createRedisGrant(options: RedisGrantOptions): OwnedRedisGrant {
  const client = new Redis(options.url, {
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    // Fail fast instead of queueing or retrying: a verifier has a deadline and its own policy.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectionName: 'vouch-verifier',
  });
  // ioredis emits 'error' events for connection problems; the command's own rejection reports them.
  client.on('error', () => {});
  const name = options.name;
  const prefix = options.keyPrefix ?? '';
  let connecting: Promise<void> | undefined;
  const connect = async () => {
    if (client.status === 'ready') return;
    if (client.status === 'end' || client.status === 'close') connecting = undefined;
    connecting ??= client.connect().catch((error: unknown) => {
      connecting = undefined;
      throw error;
    });
    await connecting;
  };

  return {
    name,
    async command(command, args, { signal, timeoutMs }) {
      signal.throwIfAborted();
      if (!REDIS_READ_COMMANDS.includes(command)) {
        throw sourceForbidden(`${name}: ${String(command)} is not a read-only command`, {
          evidence: { connection: name, command: String(command) },
        });
      }
      const keyCount = command === 'MGET' ? args.length : 1;
      const prefixed = args.map((arg, index) => (index < keyCount ? `${prefix}${arg}` : String(arg)));
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      try {
        const stop = new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () =>
              reject(
                sourceUnavailable(`${name}: ${command} timed out after ${timeoutMs} ms`, {
                  evidence: { connection: name, command },
                }),
              ),
            Math.max(1, timeoutMs),
          );
          onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
        });
        const reply = toJson(
          await Promise.race([connect().then(() => client.call(command, ...prefixed)), stop]),
        );
        return command === 'HGETALL' && Array.isArray(reply) ? pairsToObject(reply) : reply;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw classify(error, name, command);
      } finally {
        clearTimeout(timer);
        if (onAbort) signal.removeEventListener('abort', onAbort);
      }
    },
    async close() {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}

function classify(error: unknown, connection: string, command: string): VerifierError {
  const e = error as { name?: string; code?: string; message?: string };
  if (e.name === 'VerifierError') return error as VerifierError;
  const message = e.message ?? '';
  if (e.name === 'ReplyError' && FORBIDDEN_REPLY.test(message)) {
    return sourceForbidden(`${connection} refused ${command}: ${message.split(' ')[0]}`, {
      evidence: { connection, command, reply: message.split(' ')[0]! },
      cause: error,
    });
  }
  if (e.name === 'ReplyError') {
    return sourceUnavailable(`${connection}: ${command} failed: ${message.split(' ')[0]}`, {
      evidence: { connection, command, reply: message.split(' ')[0]! },
      cause: error,
    });
  }
  const code = typeof e.code === 'string' ? e.code : 'ERROR';
  return sourceUnavailable(`${connection} is unreachable (${code})`, {
    evidence: { connection, code },
    cause: error,
  });
}

/** A Redis reply as plain JSON: bulk strings as text, integers as numbers, nil as null. */
function toJson(reply: unknown): unknown {
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (Array.isArray(reply)) return reply.map(toJson);
  return reply ?? null;
}

/** HGETALL's flat `[field, value, ...]` reply as an object; fields are own keys, so `__proto__` is just a field. */
function pairsToObject(pairs: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    Object.defineProperty(out, String(pairs[i]), { value: pairs[i + 1], enumerable: true, writable: true });
  }
  return out;
}
