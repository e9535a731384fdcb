/**
 * One identity, one canonical form. Identities (`agent:billing-bot`, `user:alice`) are
 * compared in this form everywhere a comparison grants or refuses something: self-approval,
 * executing = authorized identity, approval scope, idempotency ownership.
 *
 * The form is NFKC_Casefold in spirit:
 * 1. NFKC, so compatibility and composed/decomposed spellings meet (`ﬁ` = `fi`, `é` NFC =
 *    `é` NFD, full-width `ａ` = `a`, the Kelvin sign = `K`);
 * 2. default-ignorable code points removed (zero-width space and joiners, soft hyphen,
 *    variation selectors), which render as nothing and so cannot tell two identities apart;
 * 3. full case folding, so `agent:BILLING-BOT` = `agent:billing-bot`, `ß` = `ss`, `ẞ` = `ss`,
 *    final `ς` = `σ`. JavaScript has no case-fold primitive: lower(upper(lower(s))) reaches
 *    the full (C + F) folding's equivalence classes, final sigma is folded by hand;
 * 4. NFKC again, because folding can produce sequences that compose.
 *
 * Pure and browser-safe (no Node APIs), so an auditor's tooling can compare the same way.
 *
 * @example
 * canonicalIdentity('agent:BILLING-BOT') === canonicalIdentity('agent:billing-bot'); // true
 */
export function canonicalIdentity(identity: string): string {
  const compatible = identity.normalize('NFKC').replace(DEFAULT_IGNORABLE, '');
  return compatible.toLowerCase().toUpperCase().toLowerCase().replace(FINAL_SIGMA, 'σ').normalize('NFKC');
}

/** True when two identities are the same in canonical form (see {@link canonicalIdentity}). */
export function sameIdentity(a: string, b: string): boolean {
  return canonicalIdentity(a) === canonicalIdentity(b);
}

// \p{Default_Ignorable_Code_Point}: Unicode's own list of characters that render as nothing.
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const FINAL_SIGMA = /ς/g;
