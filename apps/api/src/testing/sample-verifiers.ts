import { defineVerifier, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';

/** Pre phase: `account.open` holds unless the target id is `closed`. */
export const accountOpen = defineVerifier({
  id: 'account-open',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['account.open'],
  phase: 'pre',
  check: ({ proposal }) => ({
    name: 'account.open',
    status: proposal.target.id === 'closed' ? ('fail' as const) : ('pass' as const),
    source: 'core-banking',
  }),
});

/** Post phase: `lookup.done` is read back from an independent source and passes. */
export const lookupDone = defineVerifier({
  id: 'lookup-done',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['lookup.done'],
  check: () => ({ name: 'lookup.done', status: 'pass' as const, source: 'audit-replica' }),
});
