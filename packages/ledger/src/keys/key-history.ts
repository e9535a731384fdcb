import { payloadHashOf, type StoredEvent } from '@vouch/audit';
import { SIGNING_KEY_EVENT_KINDS } from '../signatures/signing-key-events';
import { createSigningKeyRegistry, type SignatureRule } from '../signatures/signing-key-registry';
import {
  BOOTSTRAP_ACTOR,
  expiryOf,
  KEY_ADOPTED,
  KEY_CREATED,
  KEY_EXPIRES,
  KEY_REVOKED,
  OPERATOR_ACTOR,
} from './api-key-events';

export { BOOTSTRAP_ACTOR, OPERATOR_ACTOR };

/** The role a key must hold to issue and revoke keys over HTTP (`POST /v1/keys`, `…/revoke`). */
export const KEY_ADMIN_ROLE = 'admin';

/** A key as the `system` log's events describe it: who, with what roles, where, and when live. */
export interface KeyWindow {
  id: string;
  identity: string;
  roles: string[];
  environments: string[] | null;
  logs: string[] | null;
  createdAt: number;
  /** The first moment it no longer authenticates (revoked or expired); Infinity: never. */
  endsAt: number;
}

/** A rule of who may write a key event, by the code verification reports it with. */
export type KeyAuthorityRule =
  /** The actor of an `api_key.created` event could not issue keys then. */
  | 'KEY_ISSUER_FORBIDDEN'
  /** The issuer's admin keys are limited to environments or logs the new key is not. */
  | 'KEY_REACH_FORBIDDEN'
  /** The actor of an `api_key.revoked` / `api_key.expires` event could not end keys then. */
  | 'KEY_REVOKER_FORBIDDEN'
  /** An `api_key.adopted` event not by the operator, or of no key awaiting adoption. */
  | 'KEY_ADOPTER_FORBIDDEN'
  /** A signing-key event breaks the signature rules (`signatures/signing-key-registry.ts`). */
  | SignatureRule;

/** Why a key event's actor could not have written it. */
export interface KeyAuthorityViolation {
  rule: KeyAuthorityRule;
  why: string;
}

/** The columns of a key event the history reads. */
export type KeyEvent = Pick<StoredEvent, 'kind' | 'entity' | 'actor' | 'at' | 'payload' | 'payload_hash'>;

/**
 * The keys of the `system` log, built from its `api_key.*` events in seq order, with the rule
 * of who may write each event (the server's and the CLI's):
 * - `api_key.created`: {@link BOOTSTRAP_ACTOR} for the log's first key only; the operator
 *   ({@link OPERATOR_ACTOR}); or an identity holding, at the event's time, a live key with the
 *   `admin` role whose environments and logs cover the new key's (`POST /v1/keys` lets a
 *   limited admin issue only within its own limits);
 * - `api_key.revoked`, `api_key.expires`: the operator, or an identity holding a live `admin`
 *   key (`POST /v1/keys/{id}/revoke`; no key revokes itself without it);
 * - `api_key.adopted`: the operator only, once, of a key whose `api_key.created` event
 *   carries no key commitment (issued before migration 0005: `vouch keys adopt`);
 * - and the payload names the event's actor as who did it (`created_by`, `revoked_by`,
 *   `set_by`, `adopted_by`).
 *
 * A key whose creation breaks the rule, or whose payload is not the one its chained hash
 * covers, counts for nothing afterwards: it issues no key and authorizes no redaction. An
 * ending always applies, whoever wrote it: it only takes power away.
 */
export function createKeyHistory() {
  const byId = new Map<string, KeyWindow>();
  const byIdentity = new Map<string, KeyWindow[]>();
  /** Keys issued without a key commitment and not adopted yet, in the order of their creation. */
  const unadopted = new Set<string>();
  let created = 0;
  /** The latest time of the events taken so far (ms). */
  let latest = Number.NEGATIVE_INFINITY;
  /** `at` as the time an event is judged at: the latest so far; NaN (no authority) when it is no time. */
  const judged = (at: string): number => {
    const time = Date.parse(at);
    if (Number.isNaN(time)) return time;
    latest = Math.max(latest, time);
    return latest;
  };

  const keysOf = (identity: string): readonly KeyWindow[] => byIdentity.get(identity) ?? [];
  const liveAdminKeys = (identity: string, at: number) =>
    keysOf(identity).filter(
      (key) => key.roles.includes(KEY_ADMIN_ROLE) && key.createdAt <= at && at < key.endsAt,
    );

  const issuerViolation = (
    event: KeyEvent,
    at: number,
    key: NewKey | null,
    first: boolean,
  ): KeyAuthorityViolation | null => {
    if (key !== null && key.createdBy !== event.actor) {
      return {
        rule: 'KEY_ISSUER_FORBIDDEN',
        why: `names ${key.createdBy} as its issuer, but its actor is ${event.actor}`,
      };
    }
    if (event.actor === BOOTSTRAP_ACTOR) {
      return first
        ? null
        : { rule: 'KEY_ISSUER_FORBIDDEN', why: `${BOOTSTRAP_ACTOR} issues only the log's first key` };
    }
    if (event.actor === OPERATOR_ACTOR) return null;
    const admins = Number.isNaN(at) ? [] : liveAdminKeys(event.actor, at);
    if (admins.length === 0) {
      return {
        rule: 'KEY_ISSUER_FORBIDDEN',
        why: `${event.actor} held no live ${KEY_ADMIN_ROLE} key at ${timeText(event.at, at)}`,
      };
    }
    if (key !== null && !admins.some((admin) => covers(admin, key))) {
      return {
        rule: 'KEY_REACH_FORBIDDEN',
        why: `${event.actor}'s ${KEY_ADMIN_ROLE} keys are limited to environments or logs the new key is not`,
      };
    }
    return null;
  };

  const revokerViolation = (event: KeyEvent, at: number): KeyAuthorityViolation | null => {
    const named = namedActor(event);
    if (named !== event.actor) {
      return {
        rule: 'KEY_REVOKER_FORBIDDEN',
        why: `names ${named ?? 'no one'} as who ended it, but its actor is ${event.actor}`,
      };
    }
    if (event.actor === OPERATOR_ACTOR) return null;
    if (!Number.isNaN(at) && liveAdminKeys(event.actor, at).length > 0) return null;
    return {
      rule: 'KEY_REVOKER_FORBIDDEN',
      why: `${event.actor} held no live ${KEY_ADMIN_ROLE} key at ${timeText(event.at, at)}`,
    };
  };

  const adopterViolation = (event: KeyEvent): KeyAuthorityViolation | null => {
    const named = namedActor(event);
    if (named !== event.actor) {
      return {
        rule: 'KEY_ADOPTER_FORBIDDEN',
        why: `names ${named ?? 'no one'} as who adopted it, but its actor is ${event.actor}`,
      };
    }
    if (event.actor !== OPERATOR_ACTOR) {
      return { rule: 'KEY_ADOPTER_FORBIDDEN', why: `only the operator (${OPERATOR_ACTOR}) adopts keys` };
    }
    if (payloadHashOf(event.payload) !== event.payload_hash || !unadopted.has(event.entity)) {
      return {
        rule: 'KEY_ADOPTER_FORBIDDEN',
        why: 'names no key awaiting adoption (issued before it without a key commitment, not adopted yet)',
      };
    }
    unadopted.delete(event.entity);
    return null;
  };

  const history = {
    /** The keys `identity` was issued (exactly as the server writes it as actor), forbidden ones left out. */
    keysOf,
    /** The authors' signing keys, from the same events (`signing_key.*`). */
    get signingKeys() {
      return signingKeys;
    },
    /** The ids of keys issued without a key commitment and not adopted by the events taken so far. */
    unadopted: (): string[] => [...unadopted],
    /**
     * Take one `api_key.*` event (in seq order; other kinds are ignored) and say why its
     * actor could not have written it, or null when it could. It is judged (and a key it
     * issues or revokes starts or ends) at the latest time of the events taken so far, never
     * at an earlier `at` it claims: a back-dated event cannot reach back before an ending
     * already recorded (verification also reports it as `TIME_REGRESSION`).
     */
    add(event: KeyEvent): KeyAuthorityViolation | null {
      const at = judged(event.at);
      if (SIGNING_KEY_EVENT_KINDS.includes(event.kind)) return signingKeys.add(event, at);
      if (event.kind === KEY_CREATED) {
        const first = created++ === 0;
        // A payload edited in place (roles added) is not the one the chain holds: no key.
        const key = payloadHashOf(event.payload) === event.payload_hash ? parseCreated(event.payload) : null;
        const violation = issuerViolation(event, at, key, first);
        if (violation === null && key !== null && key.id === event.entity && !Number.isNaN(at)) {
          // A second event for one id has no row (the id is the table's key): the first stands.
          if (!byId.has(key.id)) {
            const window: KeyWindow = { ...key.window, id: key.id, createdAt: at, endsAt: Infinity };
            byId.set(key.id, window);
            byIdentity.set(window.identity, [...keysOf(window.identity), window]);
            if (!key.committed) unadopted.add(key.id);
          }
        }
        return violation;
      }
      if (event.kind === KEY_ADOPTED) return adopterViolation(event);
      if (event.kind !== KEY_REVOKED && event.kind !== KEY_EXPIRES) return null;
      const violation = revokerViolation(event, at);
      const key = byId.get(event.entity);
      if (key !== undefined) {
        const end =
          event.kind === KEY_REVOKED
            ? at
            : Date.parse(
                expiryOf(event.entity, {
                  recordedAt: event.at,
                  payload: event.payload,
                  payloadHash: event.payload_hash,
                }).expiresAt,
              );
        // A time that does not parse ends the key at once: power is only ever taken away.
        key.endsAt = Math.min(key.endsAt, Number.isNaN(end) ? key.createdAt : end);
      }
      return violation;
    },
  };
  const signingKeys = createSigningKeyRegistry(history);
  return history;
}

export type KeyHistory = ReturnType<typeof createKeyHistory>;

/** An event's time as a message names it: its `at`, and the later time it was judged at when that differs. */
export function timeText(at: string, judgedAt: number): string {
  if (Number.isNaN(judgedAt) || Date.parse(at) === judgedAt) return at;
  return `${new Date(judgedAt).toISOString()} (the latest time before it in the log; it claims ${at})`;
}

/** What an `api_key.created` payload says about the key it issues. */
interface NewKey {
  id: string;
  createdBy: string;
  /** Whether the payload commits to the key hash (`key_commitment`; not before migration 0005). */
  committed: boolean;
  window: Pick<KeyWindow, 'identity' | 'roles' | 'environments' | 'logs'>;
}

/** True when an admin key limited as `admin` may issue `key` (the limits of `POST /v1/keys`). */
function covers(admin: KeyWindow, key: NewKey): boolean {
  const within = (limit: string[] | null, wanted: string[] | null) =>
    limit === null || wanted?.every((item) => limit.includes(item)) === true;
  return within(admin.environments, key.window.environments) && within(admin.logs, key.window.logs);
}

function parseJson(payload: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(payload);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const strings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string');

function parseCreated(payload: string): NewKey | null {
  const { id, identity, roles, environments, logs, created_by, key_commitment } = parseJson(payload) ?? {};
  if (typeof id !== 'string' || typeof identity !== 'string' || typeof created_by !== 'string') return null;
  if (!strings(roles)) return null;
  // Keys issued before keys could be limited name no limit: every environment, every log.
  const limit = (value: unknown) =>
    value === undefined || value === null ? null : strings(value) ? value : false;
  const envs = limit(environments);
  const inLogs = limit(logs);
  if (envs === false || inLogs === false) return null;
  return {
    id,
    createdBy: created_by,
    committed: typeof key_commitment === 'string',
    window: { identity, roles, environments: envs, logs: inLogs },
  };
}

/** Who a revocation, expiry or adoption payload says did it. */
function namedActor(event: KeyEvent): string | null {
  const payload = parseJson(event.payload);
  const field = { [KEY_REVOKED]: 'revoked_by', [KEY_ADOPTED]: 'adopted_by' }[event.kind] ?? 'set_by';
  const named = payload?.[field];
  return typeof named === 'string' ? named : null;
}
