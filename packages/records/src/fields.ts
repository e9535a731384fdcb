import { z } from 'zod';

/**
 * The building blocks every record is made of. Inputs are strict (what the ledger accepts
 * and will hash); record fields are what it stores and answers with.
 */

/** A JSON value: what arguments, results, evidence and impact estimates are made of. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { readonly [key: string]: JsonValue };

// Typed as JSON, checked as "anything": the ledger turns every body into canonical JSON
// before it parses it, so a value JSON cannot carry never reaches these schemas.
/** Any JSON value. */
export const jsonValueSchema = z.unknown().meta({ description: 'Any JSON value' }) as z.ZodType<
  JsonValue,
  JsonValue
>;
/**
 * Any JSON object, passed through as parsed. Not `z.record`: that rebuilds the object by
 * assignment, and assigning an own `"__proto__"` key (which `JSON.parse` creates) sets the
 * copy's prototype instead, so the key would vanish from what is hashed and shown while the
 * caller's tool still receives it.
 */
export const jsonObjectSchema = z
  .unknown()
  .refine(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null),
    { message: 'must be a JSON object' },
  )
  .meta({ type: 'object', additionalProperties: {} }) as unknown as z.ZodType<JsonObject, JsonObject>;

// Identifiers land in plain text columns and in messages: no control characters (Postgres
// text refuses NUL), bounded length.
/** An identifier or short name as a request may carry it. */
export const nameInput = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !/\p{Cc}/u.test(s), 'must not contain control characters');

/**
 * The grammar of a name an approver reads as a label: a postcondition's or precondition's name,
 * a tool's name, a server id, an action, a target kind. Printable ASCII letters, digits and
 * `_ . : / -`, starting with a letter, digit or `_`, at most 256 characters. It admits every
 * MCP tool name (`[A-Za-z0-9_.-]`) and method (`resources/read`).
 */
export const IDENTIFIER_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,255}$/;

/** The `params.code` of a zod issue raised by {@link identifierInput}: the ledger answers it with its own code. */
export const IDENTIFIER_ISSUE = 'IDENTIFIER_INVALID';

// A name shown to an approver must look like what it is compared as: no zero-width or
// look-alike characters (`refund.recorded\u200b` shows as `refund.recorded` and is another
// name), so anything outside plain ASCII is refused, not normalized.
/** A name an approver reads ({@link IDENTIFIER_PATTERN}), as a request may carry it. */
export const identifierInput = z.string().refine((s) => IDENTIFIER_PATTERN.test(s), {
  message: 'must be a plain identifier: ASCII letters, digits and _ . : / - (at most 256), no spaces',
  params: { code: IDENTIFIER_ISSUE },
});

// Free text may span lines but not hold NUL, which a Postgres text column refuses.
/** Free text as a request may carry it. */
export const textInput = z
  .string()
  .max(4000)
  .refine((s) => !s.includes('\0'), 'must not contain NUL');

/** A lowercase hex SHA-256. */
export const hashSchema = z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex SHA-256');

/** An ISO 8601 time as the ledger writes it. */
export const timeSchema = z.string().meta({ description: 'ISO 8601 time' });
