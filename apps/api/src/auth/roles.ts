/**
 * What a key may do. A key holds one or more roles; no role implies another, so an admin
 * who registers tools cannot approve a payload, and a gateway that proposes cannot decide.
 *
 * - `gateway`: propose, observe, ask for verification, read the stories it wrote.
 * - `policy`: record the decision of an external policy engine (a proposal is not a decision,
 *   so the gateway that proposed may not decide).
 * - `approver`: see pending approvals with their exact payload, approve or deny.
 * - `verifier`: post checks from an external verifier, run the configured verifiers.
 * - `auditor`: read everything, verify the chain, export a log.
 * - `admin`: register tools, create and revoke keys.
 */
export const ROLES = ['gateway', 'policy', 'approver', 'verifier', 'auditor', 'admin'] as const;

/** One role a key can hold (see {@link ROLES}). */
export type Role = (typeof ROLES)[number];

/** True for a string that names a role. */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
