// Test support: logs whose approval is signed by its enrolled approver, or forged by the
// runtime role in the approver's name (unsigned, signed with another key, or carrying the
// signature of an approval in another log): what every
// check of author signatures (online, in a bundle, in the browser) must tell apart.
import {
  type AuthorKey,
  authorStatement,
  type DsseEnvelope,
  formatAuthorPublicKey,
  signAuthorStatement,
} from '@vouch/audit';
import { OPERATOR_ACTOR } from '../../keys/key-history';
import type { Ledger } from '../../ledger';
import { refund, refundTool } from '../../records/__fixtures__/refund';
import { createRecords } from '../../records/create-records';
import { forgeRecords } from '../../tamper-testing';
import { enrollSigningKey } from '../enrol-signing-key';
import { issueTestKeys, signedBy } from './signing';

/** The logs {@link writeSignedApprovalLogs} writes, each with the signature rule it breaks (null: none). */
export const SIGNED_APPROVAL_LOGS = {
  honest: null,
  unsigned: 'SIGNATURE_MISSING',
  'other-key': 'SIGNER_KEY_UNKNOWN',
  replayed: 'SIGNATURE_MISMATCH',
} as const;

const APPROVER = 'user:alice';

/**
 * Keys for `user:ops` (admin), `agent:billing` (gateway) and `user:alice` (approver), Alice's
 * signing key `approver` enrolled by the operator; then in each log of
 * {@link SIGNED_APPROVAL_LOGS} a tool, a proposal that needs approval, and its approval:
 * signed by Alice (`honest`), or appended by the runtime role in her name without a signature
 * (`unsigned`), signed over exactly what it says with `other`, a key not hers (`other-key`),
 * or carrying Alice's own signature of the approval in `honest` (`replayed`).
 */
export async function writeSignedApprovalLogs(
  ledger: Ledger,
  keys: { approver: AuthorKey; other: AuthorKey },
): Promise<void> {
  const records = createRecords(ledger);
  await issueTestKeys(ledger, [
    ['user:ops', 'admin'],
    ['agent:billing', 'gateway'],
    [APPROVER, 'approver'],
  ]);
  await enrollSigningKey(ledger, {
    identity: APPROVER,
    publicKey: formatAuthorPublicKey(keys.approver.publicKey),
    enrolledBy: OPERATOR_ACTOR,
  });
  let honest: DsseEnvelope | undefined;
  for (const log of Object.keys(SIGNED_APPROVAL_LOGS)) {
    await records.registerTool(
      { log, caller: { identity: 'user:ops' } },
      refundTool({ approval_required: true }),
    );
    const agent = { log, caller: { identity: 'agent:billing', scopes: ['payments:write'] } };
    const { approval } = await records.propose(agent, refund('k1'));
    const request_id = approval!.id;
    if (log === 'honest') {
      const signature = signedBy(keys.approver, log, 'approval.approve', APPROVER, { request_id });
      const view = await records.approve({ log, caller: { identity: APPROVER, signature } }, { request_id });
      honest = view.resolution?.signature;
    } else {
      const claims = { request_id, validity: 'once' };
      const signature =
        log === 'other-key'
          ? signAuthorStatement(authorStatement(log, 'approval.approve', APPROVER, claims), keys.other)
          : log === 'replayed'
            ? honest
            : undefined;
      await forgeApproval(ledger, log, request_id, signature);
    }
  }
}

/** The approval the runtime role appends in Alice's name, valid for an hour, with `signature` or none. */
async function forgeApproval(ledger: Ledger, log: string, requestId: string, signature?: DsseEnvelope) {
  await forgeRecords(ledger, log, (tx, now) => {
    tx.write('approval_resolution', APPROVER, {
      id: 'res_forged',
      request_id: requestId,
      resolution: 'approved',
      resolver: APPROVER,
      validity: 'once',
      window_seconds: 3600,
      window_source: 'policy',
      valid_until: new Date(Date.parse(now) + 3_600_000).toISOString(),
      comment: null,
      resolved_at: now,
      ...(signature === undefined ? {} : { signature }),
    });
  });
}
