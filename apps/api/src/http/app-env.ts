import type { Principal } from '../auth/principal';
import type { Limits } from '../limits';
import type { Logger } from '../logger';
import type { ReadSide } from '../read-routing';

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
    /**
     * Where this request's reads run (the standby or the primary), chosen once, when first
     * asked. Only reads that authorize no write ask for it; everything else uses the primary.
     */
    readSide: () => Promise<ReadSide>;
    /** The code of the error this request was answered with, for the access log. */
    errorCode: string;
  };
}
