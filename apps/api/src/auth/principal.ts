import type { Role } from './roles';

/**
 * Who is calling, as established by their API key. Handlers take the identity from here and
 * never from the request body: a body can say anything, a key was issued to someone.
 */
export interface Principal {
  /** The key's public id (`key_…`), safe to log. */
  keyId: string;
  /** `agent:…`, `service:…`, `user:…` or `system:…`. */
  identity: string;
  roles: readonly Role[];
  /** What the key may touch, matched against a tool's `required_scopes` by the policy. */
  scopes: readonly string[];
  /** Environments this key may act in; `null` means any. */
  environments: readonly string[] | null;
  /** Logs this key may read or write; `null` means any. */
  logs: readonly string[] | null;
  /**
   * When the key was issued (its `api_key.created` event's time): see `Caller.keyIssuedAt`.
   * Absent for a principal built without a key row: then nothing is floored.
   */
  keyIssuedAt?: string;
}
