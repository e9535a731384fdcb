import { committedMemberOf, fieldHashOf, type StoredEvent } from '@vouch/audit';

/**
 * A record as its writer sent it: under `member-fields/1` its `member` (a proposal's
 * arguments, a decision's repair) opened from the event's field content. Null when that
 * cannot be known: a key erased (an erased proposal never runs), content not fetched, or an
 * opening that does not hash to its field hash (the chain check reports that one as
 * `FIELD_MISMATCH`).
 */
export function shownRecord<R extends object, M extends keyof R & string>(
  event: StoredEvent,
  r: R,
  member: M,
): R | null {
  if (committedMemberOf(event.commitment) !== member) return r;
  const hashes = r[member] as Record<string, unknown>;
  if (event.fields === undefined || typeof hashes !== 'object' || hashes === null) return null;
  const opened: Record<string, unknown> = {};
  for (const [name, hash] of Object.entries(hashes)) {
    const opening = Object.hasOwn(event.fields, name) ? event.fields[name] : undefined;
    if (opening === undefined || fieldHashOf(name, opening) !== hash) return null;
    Object.defineProperty(opened, name, {
      value: opening.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { ...r, [member]: opened };
}
