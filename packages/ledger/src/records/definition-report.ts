import { canonicalJson } from '@vouch/audit';

type Json = Record<string, unknown>;

/** What a version may change when it only reports a definition; the rest must be as before. */
const REPORT_FIELDS = [
  'id',
  'version',
  'registered_by',
  'registered_at',
  'definition_sha256',
  'changed_definition_sha256',
] as const;

function rest(record: Json): string {
  const copy = { ...record };
  for (const field of REPORT_FIELDS) delete copy[field];
  return canonicalJson(copy);
}

/**
 * Whether tool registration `next` only reports a definition a gateway saw over `previous`:
 * the first definition pinned, or a different one recorded as changed beside the pin, and
 * nothing else of the registration changed. A gateway may write such a version of any tool,
 * an operator's registration included (docs/records.md, "Pinned tool definitions").
 */
export function isDefinitionReport(previous: Json, next: Json): boolean {
  if (rest(previous) !== rest(next)) return false;
  const pinned = previous.definition_sha256;
  const changed = next.changed_definition_sha256;
  if (pinned === undefined) {
    return typeof next.definition_sha256 === 'string' && changed === previous.changed_definition_sha256;
  }
  return (
    next.definition_sha256 === pinned &&
    typeof changed === 'string' &&
    changed !== pinned &&
    changed !== previous.changed_definition_sha256
  );
}
