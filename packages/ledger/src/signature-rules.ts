// `@vouch/ledger/signature-rules`: the rule every author signature is judged by, and the key
// history it is judged against, with nothing of the database: what a browser runs to judge
// a log's records as `verifyChain` does (apps/console), from the `system` log's key events.
// Everything reachable from here is browser-safe (.dependency-cruiser.cjs checks it).

export { KEY_EVENT_KINDS } from './keys/check-key-authority';
export { createKeyHistory, type KeyEvent, type KeyHistory } from './keys/key-history';
export { createAuthorSignatureJudge, recordOf } from './signatures/author-signature-judge';
export type { SignatureRule, SignatureViolation } from './signatures/signing-key-registry';
