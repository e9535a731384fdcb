/**
 * @vouch/records: every record Vouch stores, every body its API takes and every answer it
 * gives, declared once as zod schemas. The ledger validates with them, the API documents and
 * type-checks its routes with them, and the client takes their types (`import type`, so it
 * ships no zod). Browser-safe: no `node:` import, no dependency but zod.
 */
export * from './audit';
export * from './derive-outcome';
export * from './error-codes';
export * from './fields';
export * from './inputs';
export * from './keys';
export * from './proposal-life';
export * from './records';
export * from './transparency';
export * from './verification-status';
export * from './views';
export * from './webhooks';
