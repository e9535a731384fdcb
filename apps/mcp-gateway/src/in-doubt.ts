import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isVouchClientError, type VouchClient } from '@vouch/client';
import { type CallJournal, createMemoryJournal, journalScopeOf, openFileJournal } from './call-journal';
import type { Logger } from './logger';

// The server's answers that mean the claim has an account already (the gateway's own, or the
// server's sweep after the claim's deadline): nothing is left in doubt.
const ALREADY_ACCOUNTED = new Set(['OBSERVATION_CONFLICT', 'EXECUTION_CLAIM_LAPSED', 'OBSERVATION_EXISTS']);

/**
 * Open the journal of one Vouch identity (`apiKey`) and account for what an earlier gateway
 * of it left in doubt: each execution it claimed and never saw recorded is recorded as
 * `unknown` now, before any call is taken, so it is neither left `authorized` until the
 * server's sweep nor run a second time. A claim Vouch cannot be told about now stays in the
 * journal for the next start (and the server's sweep records it at its deadline).
 * `dir: false` keeps the journal in memory: nothing carries over a restart.
 */
export async function openCallJournal(options: {
  dir: string | false;
  vouchUrl: string;
  apiKey: string;
  session?: string;
  vouch: VouchClient;
  logger: Logger;
}): Promise<CallJournal> {
  const { vouch, logger } = options;
  if (options.dir === false) return createMemoryJournal();
  const scope = journalScopeOf({
    vouchUrl: options.vouchUrl,
    apiKey: options.apiKey,
    ...(options.session === undefined ? {} : { session: options.session }),
  });
  const opened = openFileJournal(options.dir, scope);
  const recorded: string[] = [];
  for (const claim of opened.inDoubt) {
    try {
      // Recorded just before the stop (the journal had not caught up): that account stands.
      if ((await vouch.proposals.get(claim.proposal_id)).observation) {
        recorded.push(claim.key);
        continue;
      }
      await vouch.observations.create({
        proposal_id: claim.proposal_id,
        outcome: 'unknown',
        result: {
          error: {
            code: 'EXECUTION_IN_DOUBT',
            message:
              'the gateway stopped after claiming this execution and before recording it; the tool may have run',
          },
        },
        payload_hash: claim.payload_hash,
        ...(claim.approval_request_id ? { approval_request_id: claim.approval_request_id } : {}),
      });
      recorded.push(claim.key);
      logger.warn('recorded an execution left in doubt as unknown', { proposal_id: claim.proposal_id });
    } catch (error) {
      if (isVouchClientError(error) && ALREADY_ACCOUNTED.has(error.code)) {
        recorded.push(claim.key);
        continue;
      }
      logger.error('could not record an execution left in doubt; it stays in the journal', {
        proposal_id: claim.proposal_id,
        code: isVouchClientError(error) ? error.code : 'UNEXPECTED',
      });
    }
  }
  opened.recorded(recorded);
  return opened.journal;
}

/** Where the journal lives unless `journal` says otherwise: the user's state directory. */
export function defaultJournalDir(env: Readonly<Record<string, string | undefined>>): string {
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'vouch-mcp-gateway');
  const home = env.HOME || homedir();
  return home ? join(home, '.local', 'state', 'vouch-mcp-gateway') : join(tmpdir(), 'vouch-mcp-gateway');
}
