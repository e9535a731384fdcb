import type { AuthorKey, DsseEnvelope } from '@vouch/audit';
import type { ConflictKeys } from '../batch-plan';
import { LedgerError } from '../errors';
import { keyTimeFloor, type Ledger } from '../ledger';
import type { PolicyConfiguration } from '../policy/policy-configuration';
import { type ServerStatement, serverSignerOf, signatureOfRequest } from '../signatures/request-signature';

/** Signs a statement with the server's enrolled key. */
export type ServerSigner = (statement: ServerStatement) => DsseEnvelope;

import { type LogReads, logReads } from './log-reads';
import { lapsedClaims, undecidedProposals } from './queries';
import type { RecordContext } from './record-context';
import { type RecordTransaction, recordTransaction } from './record-transaction';
import type { Caller, ProposalRecord } from './types';

/** The settings of a records service, with their defaults applied (see `RecordsOptions`). */
export interface RecordsSettings {
  maxInputBytes: number;
  policy: 'built_in' | 'external';
  /** The policy pinned in each log before its first decision (`RecordsOptions.pinnedPolicy`); none: nothing pinned. */
  pinnedPolicy?: PolicyConfiguration;
  approvalRequestTtlSeconds: number;
  maxApprovalWindowSeconds: number;
  unknownOutcomeSettleSeconds: number;
  executionClaimSeconds: number;
}

/** What every records operation needs: where it runs, how it reads, and the service's settings. */
export interface RecordsRuntime {
  readonly settings: RecordsSettings;
  /**
   * Run `work` in the log's next ledger batch (`transactConcurrently`), beside the other
   * operations whose keys (`record-keys.ts`) do not collide with `keys`; recorded no earlier
   * than the caller's key was issued (`Caller.keyIssuedAt`).
   */
  run<T>(
    at: { log: string; caller?: Caller },
    keys: ConflictKeys,
    work: (tx: RecordTransaction) => Promise<T>,
  ): Promise<T>;
  /** Reads outside any batch, on the database (read-only routes). */
  reads(log: string): LogReads;
  /** The current time, for reads outside a batch. */
  wallNow(): string;
  /** The envelope of the caller's signature over `claims` as `action`, or undefined (see `signatureOfRequest`). */
  authorSignature(ctx: RecordContext, action: string, claims: unknown): Promise<DsseEnvelope | undefined>;
  /** The server's signer of records it writes as `actor` (see `serverSignerOf`), or undefined; ask before a transaction. */
  serverSigner(actor: string): Promise<ServerSigner | undefined>;
  /** Claims past their deadline with no observation, in every log or one (see `lapsedClaims`). */
  lapsedClaims(options: {
    now: string;
    limit: number;
    log?: string;
  }): Promise<Array<{ log: string; proposalId: string }>>;
  /** Proposals with no decision yet, in every log or one (see `undecidedProposals`). */
  undecidedProposals(options: {
    limit: number;
    log?: string;
    after?: { log: string; seq: number };
  }): Promise<Array<{ log: string; seq: number; proposalId: string }>>;
}

export function recordsRuntime(
  ledger: Ledger,
  settings: RecordsSettings,
  clock: (() => Date) | undefined,
  serverKey?: AuthorKey,
): RecordsRuntime {
  // Checked reads raise the ledger's alarm on a row its event does not account for.
  const alarm = ledger.integrityAlarm;
  return {
    settings,
    run: ({ log, caller }, keys, work) =>
      ledger.transactConcurrently(
        log,
        keys,
        (tx) => work(recordTransaction(tx, logReads(tx.db, tx.log, alarm), clock)),
        keyTimeFloor(caller?.keyIssuedAt),
      ),
    reads: (log) => logReads(ledger.database.db, log, alarm),
    wallNow: () => (clock ?? (() => new Date()))().toISOString(),
    authorSignature: (ctx, action, claims) =>
      signatureOfRequest(ledger.database, ctx, action, claims, (clock ?? (() => new Date()))().toISOString()),
    serverSigner: (actor) =>
      serverSignerOf(ledger.database, serverKey, actor, (clock ?? (() => new Date()))().toISOString()),
    lapsedClaims: (options) => lapsedClaims(ledger.database.db, options),
    undecidedProposals: (options) => undecidedProposals(ledger.database.db, options),
  };
}

export function notFound(what: string, id: string): LedgerError {
  return new LedgerError('NOT_FOUND', `${what} ${id} does not exist in this log`, { details: { id } });
}

/** The proposal, or `NOT_FOUND`. */
export async function mustGetProposal(reads: LogReads, proposalId: string): Promise<ProposalRecord> {
  const proposal = await reads.proposalById(proposalId);
  if (!proposal) throw notFound('proposal', proposalId);
  return proposal;
}
