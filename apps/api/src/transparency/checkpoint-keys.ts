import { type CheckpointKeys, logOrigin } from '@vouch/ledger';
import type { LogKeys } from './log-keys';

/**
 * What `verifyChain` needs to check a log's stored checkpoints against this deployment's
 * own log key: the verifier keys of every signer, and the origin each log's checkpoints
 * must name. Only the public halves leave here.
 */
export function checkpointKeysFor(keys: LogKeys): (log: string) => CheckpointKeys {
  return (log) => ({ verifiers: keys.verifierKeys, origin: logOrigin(keys.originPrefix, log) });
}
