import type { Principal } from '../auth/principal';
import type { Limits } from '../limits';
import type { Logger } from '../logger';

/** The hono environment of every Vouch route: what middleware puts on the context. */
export interface AppEnv {
  Variables: {
    requestId: string;
    limits: Limits;
    logger: Logger;
    /** Set by authentication; absent only on the public health and docs routes. */
    principal: Principal;
    /** The parsed JSON body (already bounded and checked), when the route takes one. */
    jsonBody: unknown;
    /** The code of the error this request was answered with, for the access log. */
    errorCode: string;
  };
}
