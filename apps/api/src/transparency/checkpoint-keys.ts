import { type CheckpointKeys, logOrigin } from '@vouch/ledger';
import type { LogKeys } from './log-keys';

/**
 * What `verifyChain` needs to check a log's stored checkpoints against this deployment's
 * own log keys: every verifier key the log's checkpoints may carry (its per-log keys, and
 * the shared key that signed checkpoints before them), and the origin each log's
 * checkpoints must name. Only the public halves leave here.
 */
export function checkpointKeysFor(keys: LogKeys): (log: string) => CheckpointKeys {
  return (log) => ({ verifiers: keys.verifierKeysFor(log), origin: logOrigin(keys.originPrefix, log) });
}
