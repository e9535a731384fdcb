import {
  type AuthorKey,
  authorStatement,
  type DsseEnvelope,
  sameIdentity,
  signAuthorStatement,
} from '@vouch/audit';

/**
 * The identity the server's own signing key is enrolled for. The server writes as three
 * identities no API key can hold (`vouch:server` pins the policy, `vouch:claim-sweeper`
 * records a lapsed claim's `unknown` outcome, `vouch:settle-verifier` verifies a settled
 * one); all three sign with this identity's key (docs/chain.md, "The server signs its own").
 */
export const SERVER_SIGNER = 'vouch:server';

/** Whether `identity` is one the server writes as itself (`vouch:…`): no API key holds one. */
export function isServerIdentity(identity: string): boolean {
  return identity.normalize('NFKC').toLowerCase().startsWith('vouch:');
}

/** Whose enrolled keys sign for `identity`: the server's for its own identities, else its own. */
export function keyOwnerOf(identity: string): string {
  return isServerIdentity(identity) ? SERVER_SIGNER : identity;
}

/** Whether a key enrolled for `enrolled` signs for `identity`. */
export function signsFor(enrolled: string, identity: string): boolean {
  return sameIdentity(enrolled, keyOwnerOf(identity));
}

/** Sign `claims` as `action` by the server identity `actor` in `log` with the server's key. */
export function serverEnvelope(
  key: AuthorKey,
  statement: { log: string; action: string; actor: string; claims: unknown },
): DsseEnvelope {
  return signAuthorStatement(
    authorStatement(statement.log, statement.action, statement.actor, statement.claims),
    key,
  );
}
