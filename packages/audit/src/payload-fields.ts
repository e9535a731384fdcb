import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { canonicalJson } from './canonical-json';
import { AuditError } from './errors';
import { isHex64 } from './hex64';
import { sha256Hex } from './sha256';

/**
 * The payload commitment of an event whose fields can be erased one by one
 * (docs/chain.md, "Field commitments"). It is named inside the hashed event header
 * (`commitment`), so an event written under it can never be read under the whole-payload
 * rule, nor the other way round.
 */
export const FIELDS_COMMITMENT = 'fields/1';

/**
 * The prefix of a record commitment (docs/chain.md, "Records with erasable members"): the
 * payload is a record (a JSON object) whose member named after the prefix is an object of
 * field hashes, one per key of that member, computed as under {@link FIELDS_COMMITMENT}.
 * `member-fields/1:arguments` commits a proposal's arguments key by key; every other member
 * of the record is hashed whole, with the payload, as always.
 */
export const MEMBER_FIELDS_PREFIX = 'member-fields/1:';

/** The commitment of a record whose member `member` is committed key by key. */
export function memberFieldsCommitment(member: string): string {
  return `${MEMBER_FIELDS_PREFIX}${member}`;
}

/** The member a record commitment names, or null when `commitment` is not one. */
export function committedMemberOf(commitment: string | null | undefined): string | null {
  if (typeof commitment !== 'string' || !commitment.startsWith(MEMBER_FIELDS_PREFIX)) return null;
  const member = commitment.slice(MEMBER_FIELDS_PREFIX.length);
  return MEMBER_NAME.test(member) ? member : null;
}

const MEMBER_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The kind of the event that authorizes erasing fields of an earlier event of the same log. */
export const REDACTION_KIND = 'event.redacted';

/** One field's content, kept apart from the chain: erasing the field removes both. */
export interface FieldOpening {
  /** 32 random bytes as 64 lowercase hex digits, drawn for this field alone. */
  salt: string;
  value: unknown;
}

/** The payload of a {@link REDACTION_KIND} event. */
export interface RedactionPayload {
  /** The event whose fields were erased. */
  target: { seq: number; hash: string };
  /** The erased fields' names, sorted. */
  fields: string[];
  reason: string;
}

/** A fresh salt: 32 bytes from the platform's CSPRNG, so an erased short value cannot be guessed from its hash. */
export function newFieldSalt(): string {
  return bytesToHex(randomBytes(32));
}

/**
 * `SHA-256(canonical({"name": name, "salt": salt, "value": value}))` as lowercase hex: one
 * field's hash, what stays in the chain once the field's value and salt are erased.
 */
export function fieldHashOf(name: string, opening: FieldOpening): string {
  return sha256Hex(canonicalJson({ name, salt: opening.salt, value: opening.value }));
}

/**
 * Commit to a payload field by field: each top-level member gets a fresh salt and its field
 * hash. `payload` is the canonical text of `{name: fieldHash}`, the event's stored and
 * hashed payload; `fields` is the content, to be stored apart from the chain.
 *
 * @example
 * const { payload, fields } = commitFields({ email: 'a@example.com', amount: 5 });
 * // payload = '{"amount":"<64 hex>","email":"<64 hex>"}', fields.email = { salt, value: 'a@example.com' }
 */
export function commitFields(
  content: Record<string, unknown>,
  salt: (name: string) => string = newFieldSalt,
): { payload: string; fields: Record<string, FieldOpening> } {
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    throw new AuditError('NOT_PLAIN_OBJECT', 'a field-committed payload must be a JSON object');
  }
  const { hashes, fields } = hashFields(content, salt);
  return { payload: canonicalJson(hashes), fields };
}

/** Each key's opening (a fresh salt and its value) and field hash. */
function hashFields(
  content: Record<string, unknown>,
  salt: (name: string) => string,
): { hashes: Record<string, string>; fields: Record<string, FieldOpening> } {
  const fields: Record<string, FieldOpening> = {};
  const hashes: Record<string, string> = {};
  for (const [name, value] of Object.entries(content)) {
    const opening = { salt: salt(name), value };
    setOwn(fields, name, opening);
    setOwn(hashes, name, fieldHashOf(name, opening));
  }
  return { hashes, fields };
}

/**
 * `target[name] = value` as an own property whatever the name: a plain assignment of
 * `__proto__` would set the object's prototype instead, and the key would be silently lost
 * from what is committed (JSON.parse keeps such a key as an own property).
 */
function setOwn<T>(target: Record<string, T>, name: string, value: T): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Commit to one member of a record key by key: `member` (a JSON object) becomes the object
 * of its keys' field hashes, each with a fresh salt, and the rest of the record is kept as
 * it is. `record` is what the event's payload and the record's row hold; `fields` is the
 * content (one opening per key of the member), to be stored apart from the chain.
 *
 * @example
 * const { record, fields } = commitMember({ id: 'prop_1', arguments: { email: 'a@example.com' } }, 'arguments');
 * // record.arguments = { email: '<64 hex>' }, fields.email = { salt, value: 'a@example.com' }
 */
export function commitMember<R extends Record<string, unknown>>(
  record: R,
  member: string & keyof R,
  salt: (name: string) => string = newFieldSalt,
): { record: R; fields: Record<string, FieldOpening> } {
  const content = record[member];
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    throw new AuditError('NOT_PLAIN_OBJECT', `a committed member (${member}) must be a JSON object`);
  }
  const { hashes, fields } = hashFields(content as Record<string, unknown>, salt);
  return { record: { ...record, [member]: hashes }, fields };
}

/** The field hashes a fields/1 payload commits to, or null when the text is not such a payload. */
export function parseFieldHashes(payload: string): Record<string, string> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return null;
  }
  return fieldHashesIn(parsed);
}

/**
 * The field hashes an event's payload commits to under `commitment` (`fields/1`: the payload
 * itself; `member-fields/1:<member>`: that member of the payload), or null when the
 * commitment is unknown or the payload is not of its shape.
 */
export function committedFieldHashes(
  commitment: string | null | undefined,
  payload: string,
): Record<string, string> | null {
  if (commitment === FIELDS_COMMITMENT) return parseFieldHashes(payload);
  const member = committedMemberOf(commitment);
  if (member === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return null;
  }
  if (!isPlainObject(parsed) || !Object.hasOwn(parsed, member)) return null;
  return fieldHashesIn(parsed[member]);
}

function fieldHashesIn(value: unknown): Record<string, string> | null {
  if (!isPlainObject(value)) return null;
  for (const hash of Object.values(value)) {
    if (typeof hash !== 'string' || !isHex64(hash)) return null;
  }
  return value as Record<string, string>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The target and fields a redaction event names, or null when its payload is not a redaction. */
export function parseRedaction(payload: string): RedactionPayload | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { target, fields, reason } = parsed as Partial<RedactionPayload>;
  if (
    typeof target !== 'object' ||
    target === null ||
    !Number.isSafeInteger(target.seq) ||
    typeof target.hash !== 'string' ||
    !Array.isArray(fields) ||
    !fields.every((f) => typeof f === 'string') ||
    typeof reason !== 'string'
  ) {
    return null;
  }
  return { target, fields, reason };
}

/** What checking an event's field openings against its commitment found. */
export interface FieldCheck {
  /** Fields whose opening does not hash to the committed field hash, or that no hash commits to. */
  mismatched: string[];
  /** Committed fields without an opening: erased. */
  erased: string[];
}

/** Compare openings with the field hashes a payload commits to (names compared exactly). */
export function checkFieldOpenings(
  hashes: Record<string, string>,
  fields: Record<string, FieldOpening>,
): FieldCheck {
  const mismatched: string[] = [];
  for (const [name, opening] of Object.entries(fields)) {
    const committed = Object.hasOwn(hashes, name) ? hashes[name] : undefined;
    if (committed === undefined || !isOpening(opening) || safeFieldHash(name, opening) !== committed) {
      mismatched.push(name);
    }
  }
  const erased = Object.keys(hashes).filter((name) => !Object.hasOwn(fields, name));
  return { mismatched, erased };
}

function isOpening(opening: unknown): opening is FieldOpening {
  return (
    typeof opening === 'object' &&
    opening !== null &&
    typeof (opening as FieldOpening).salt === 'string' &&
    Object.hasOwn(opening, 'value')
  );
}

/** A value canonical JSON refuses cannot be the committed one. */
function safeFieldHash(name: string, opening: FieldOpening): string | null {
  try {
    return fieldHashOf(name, opening);
  } catch {
    return null;
  }
}
