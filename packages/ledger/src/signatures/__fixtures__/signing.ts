import { randomBytes } from 'node:crypto';
import {
  type AuthorKey,
  authorStatement,
  detachedSignature,
  parseDetachedSignature,
  signAuthorStatement,
} from '@vouch/audit';
import { issueApiKey } from '../../keys/api-keys';
import { OPERATOR_ACTOR } from '../../keys/key-history';
import type { Ledger } from '../../ledger';

/** The detached signature a client would send (`Vouch-Signature`), parsed, as `ctx.caller.signature` takes it. */
export function signedBy(key: AuthorKey, log: string, action: string, signer: string, claims: unknown) {
  return parseDetachedSignature(
    detachedSignature(signAuthorStatement(authorStatement(log, action, signer, claims), key)),
  )!;
}

/** Issue each identity an API key with one role (everywhere, every log), as the operator. */
export async function issueTestKeys(
  ledger: Ledger,
  people: ReadonlyArray<readonly [identity: string, role: string]>,
) {
  for (const [identity, role] of people) {
    await issueApiKey(ledger, {
      id: `key_${identity}`,
      keyHash: randomBytes(32).toString('hex'),
      identity,
      roles: [role],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: OPERATOR_ACTOR,
    });
  }
}
