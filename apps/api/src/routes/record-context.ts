import { parseDetachedSignature } from '@vouch/audit';
import { LedgerError, type RecordContext } from '@vouch/ledger';
import type { Context } from 'hono';
import { assertLog } from '../auth/authorize';
import type { AppEnv } from '../http/app-env';

/** The log a record route uses: `?log=`, default `default`; refused if the key may not use it. */
export function logOf(c: Context<AppEnv>): string {
  const log = c.req.query('log') ?? 'default';
  assertLog(c.get('principal'), log);
  return log;
}

/**
 * Who is acting, for the records service: identity, scopes and environments come from the
 * API key the request carried, never from its body.
 */
export function recordContext(c: Context<AppEnv>, log: string): RecordContext {
  const principal = c.get('principal');
  const signature = signatureHeader(c);
  return {
    log,
    caller: {
      identity: principal.identity,
      scopes: principal.scopes,
      environments: principal.environments,
      ...(principal.keyIssuedAt === undefined ? {} : { keyIssuedAt: principal.keyIssuedAt }),
      ...(signature ? { signature } : {}),
    },
  };
}

/** The header an author's detached signature over the request travels in. */
export const SIGNATURE_HEADER = 'Vouch-Signature';

/** The `Vouch-Signature` header, parsed; a header that is there but malformed is refused. */
function signatureHeader(c: Context<AppEnv>): { keyid: string; sig: string } | undefined {
  const text = c.req.header(SIGNATURE_HEADER);
  if (text === undefined) return undefined;
  const parsed = parseDetachedSignature(text);
  if (!parsed) {
    throw new LedgerError(
      'SIGNATURE_INVALID',
      `${SIGNATURE_HEADER} must be "keyid=<64 hex>; sig=<base64 of 64 bytes>"`,
      {
        details: { header: SIGNATURE_HEADER },
      },
    );
  }
  return parsed;
}

/** The body exactly as the client sent it (already bounded and checked), for the records service. */
export function rawBody(c: Context<AppEnv>): Record<string, unknown> {
  const body = c.get('jsonBody');
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : {};
}

/** The entries of `values` that are not `undefined`, for options that must omit what is not given. */
export function definedOnly<T extends Record<string, unknown>>(
  values: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
