import type { WitnessFetch } from '@vouch/audit/witness';

/** What a CLI command may touch, injected so tests run commands in-process without a console. */
export interface CliIo {
  /** Write to standard output (the result a script consumes). */
  out(text: string): void;
  /** Write to standard error (progress, explanations, errors). */
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** True when standard error is a terminal (progress redraws in place). */
  interactive: boolean;
  /** Resolves with the signal name when the process is asked to stop (SIGTERM, SIGINT). */
  stopRequested(): Promise<string>;
  /** The network for commands that reach a server (default: the global `fetch`); tests pass `app.request`. */
  fetch?: WitnessFetch;
}

/** Exit codes of every `vouch` command. */
export const EXIT = {
  /** Success; for `verify`, the chain is intact. */
  OK: 0,
  /** `verify` found the chain broken. */
  BROKEN: 1,
  /** Usage, configuration or connection error: the message says what to fix. */
  USAGE: 2,
  /**
   * `verify --witness … --threshold N`: everything verified, but the checkpoint lacks N valid
   * witness cosignatures, so it is refused (it may be a split view). Neither evidence of a
   * rewrite (1) nor a failure to check (2): a log whose witnesses lag behind gives 3 too.
   */
  NOT_WITNESSED: 3,
  /** `verifier run`: a check failed. */
  FAILED: 1,
  /** `verifier run`: no check failed, but not every one passed ("we did not look" is not a pass). */
  INCONCLUSIVE: 3,
} as const;

/** A failure the CLI reports as one message and exit code 2. */
export class CliError extends Error {
  override readonly name = 'CliError';
}
