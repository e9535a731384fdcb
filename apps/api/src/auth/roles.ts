// What each role may do is said where the roles are declared, with the records.
import { ROLES, type Role } from '@vouch/records';

export { ROLES, type Role };

/** True for a string that names a role. */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
