import type { CliIo } from './io';
import { runVerifyBundle } from './verify-bundle';
import { runVerifySince } from './verify-since';

/** True when `vouch verify` was asked about a bundle or a trusted checkpoint, not the database. */
export function isTransparencyVerify(args: readonly string[]): boolean {
  return args.some((arg) => /^--(bundle|since)(=|$)/.test(arg));
}

/** `vouch verify --since …` or `vouch verify --bundle …` (see their usage texts). */
export function runTransparencyVerify(args: string[], io: CliIo): Promise<number> {
  return args.some((arg) => /^--since(=|$)/.test(arg)) ? runVerifySince(args, io) : runVerifyBundle(args, io);
}
