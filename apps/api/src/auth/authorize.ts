import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import type { Principal } from './principal';
import type { Role } from './roles';

/** Refuse (403 `ROLE_FORBIDDEN`) a caller that holds none of `roles`. */
export function requireRole(...roles: Role[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    assertRole(c.get('principal'), roles);
    await next();
  };
}

/** Throw 403 `ROLE_FORBIDDEN` unless the principal holds one of `roles`. */
export function assertRole(principal: Principal, roles: readonly Role[]): void {
  if (!roles.some((role) => principal.roles.includes(role))) {
    throw new ApiError('ROLE_FORBIDDEN', `this needs one of the roles: ${roles.join(', ')}`, {
      details: { required: roles, held: principal.roles },
    });
  }
}

/** True when the principal holds `role`. */
export function hasRole(principal: Principal, role: Role): boolean {
  return principal.roles.includes(role);
}

/**
 * Throw 403 `ENVIRONMENT_FORBIDDEN` when the key is limited to other environments: a staging
 * gateway key cannot propose, and a staging approver cannot approve, a production action.
 */
export function assertEnvironment(principal: Principal, environment: string | null | undefined): void {
  if (principal.environments === null) return;
  if (environment == null || !principal.environments.includes(environment)) {
    throw new ApiError(
      'ENVIRONMENT_FORBIDDEN',
      `this key may not act in environment ${environment ?? '(none)'}`,
      {
        details: { environment: environment ?? null, allowed: principal.environments },
      },
    );
  }
}

/** Throw 403 `LOG_FORBIDDEN` when the key is limited to other logs. */
export function assertLog(principal: Principal, log: string): void {
  if (principal.logs === null) return;
  if (!principal.logs.includes(log)) {
    throw new ApiError('LOG_FORBIDDEN', `this key may not use log ${log}`, {
      details: { log, allowed: principal.logs },
    });
  }
}

/** True when the key may use `log` (for filtering lists instead of refusing them). */
export function mayUseLog(principal: Principal, log: string): boolean {
  return principal.logs === null || principal.logs.includes(log);
}

/** True when the key may act in `environment` (for filtering lists instead of refusing them). */
export function mayActIn(principal: Principal, environment: string | null): boolean {
  return (
    principal.environments === null || (environment !== null && principal.environments.includes(environment))
  );
}
