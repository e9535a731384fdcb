import { acceptedCosignatures, decodeCosignatureLine, parseCosignerKey } from '@vouch/audit';
import { cosignaturesAt, type Database, type IntegrityAlarm, type StoredCheckpoint } from '@vouch/ledger';

const TABLE = 'checkpoint_cosignatures';

/**
 * The kept cosignature lines of `checkpoint` that verify, over its note, with one of the
 * configured witness keys: the only ones served. The route that keeps them checks each line
 * first, but the rows are not proven by the chain (a witness's signature is their proof), so
 * whatever else lies in the table — a line forged or edited behind the server's back, one
 * kept for a witness key since removed from the configuration — is left out. A line that
 * names a configured witness key and does not verify is damage: it raises `alarm`
 * (`COSIGNATURE_MISMATCH`). (It may also have taken the place of that witness's genuine
 * cosignature, which the table then refuses as a duplicate: the alarm says so.)
 */
export async function servedCosignatures(
  database: Database,
  checkpoint: StoredCheckpoint,
  witnessKeys: readonly string[],
  alarm: IntegrityAlarm | undefined,
): Promise<string[]> {
  const lines = await cosignaturesAt(database, checkpoint.log, checkpoint.treeSize);
  if (lines.length === 0 || witnessKeys.length === 0) return [];
  const { accepted, refused } = acceptedCosignatures(checkpoint.note, lines, witnessKeys);
  const configured = witnessKeys.map((key) => parseCosignerKey(key));
  for (const { line, reason } of refused) {
    // A line of a key no longer configured is the operator's choice, not damage.
    const read = decodeCosignatureLine(line);
    if (read && !configured.some((key) => key.name === read.keyName && key.keyId === read.keyId)) continue;
    alarm?.raise({
      code: 'COSIGNATURE_MISMATCH',
      log: checkpoint.log,
      seq: checkpoint.treeSize,
      table: TABLE,
      message: `a kept cosignature of the checkpoint at tree size ${checkpoint.treeSize} is refused (${reason}): it is not served`,
    });
  }
  return accepted;
}
