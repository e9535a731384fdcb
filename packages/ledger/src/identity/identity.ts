import { canonicalIdentity, sameIdentity } from '@vouch/audit';
import confusables from 'unicode-confusables';

/**
 * The UTS #39 confusable skeleton of the canonical form: two identities that look alike
 * (`agent:billing-bot` with a Latin `i`, and with a Cyrillic `і`) have the same skeleton.
 * skeleton(X) = NFD(map every character of NFD(X) through confusables.txt), from the
 * Unicode confusables table that `unicode-confusables` ships, taken of the canonical form
 * and folded again (the table's prototypes mix cases: `0` maps to `O`), so `agent:b0t`
 * meets `agent:bot` as well.
 *
 * Not an equality for authorization (it also equates `l`, `1` and `I`): it is used where
 * over-matching is the safe direction, to refuse issuing a key whose identity could be
 * mistaken for an existing one. Because no two keys can then hold look-alike identities,
 * the canonical comparison is enough everywhere else.
 */
export function identitySkeleton(identity: string): string {
  const mapped = confusables.rectifyConfusion(canonicalIdentity(identity).normalize('NFD'));
  return canonicalIdentity(mapped).normalize('NFD');
}

/**
 * Whether `candidate` collides with `existing`: spelled differently, but the same in canonical
 * form or confusable with it. The same spelling is no collision (one identity, several keys).
 */
export function identitiesCollide(candidate: string, existing: string): boolean {
  if (candidate === existing) return false;
  return sameIdentity(candidate, existing) || identitySkeleton(candidate) === identitySkeleton(existing);
}
