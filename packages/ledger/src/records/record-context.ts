import type { Caller } from './types';

/** Which log a call writes to and who is calling (from the API key, never the body). */
export interface RecordContext {
  log: string;
  caller: Caller;
}
