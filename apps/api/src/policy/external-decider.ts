import {
  type ApprovalRequestRecord,
  type DecisionRecord,
  isLedgerError,
  type ProposalRecord,
  type Records,
} from '@vouch/ledger';
import { decisionInputSchema } from '@vouch/records';
import type { ResolveHost } from '@vouch/verifiers';
import { type Logger, summarizeError } from '../logger';
import type { Metrics } from '../metrics/metrics';
import type { PolicyEngineSettings } from '../settings/server-settings';
import { askPolicyEngine, type PolicyEngineErrorCode } from './ask-policy-engine';

/** Why a proposal the engine was asked about is still undecided. */
export type UndecidedCode =
  | PolicyEngineErrorCode
  /** The ledger refused the engine's decision (e.g. `TOOL_NOT_REGISTERED`: allowing an unregistered tool). */
  | 'DECISION_REFUSED'
  /** The decision could not be written (the database failed). */
  | 'DECISION_NOT_RECORDED';

/** What asking the engine about one proposal did. */
export type DecideOutcome =
  | { status: 'decided'; decision: DecisionRecord; approval: ApprovalRequestRecord | null }
  /** Another instance, the retry loop or the engine itself (decision route) recorded one first. */
  | { status: 'already_decided' }
  /** This process is asking about it already (the retry loop met a proposal being answered). */
  | { status: 'in_progress' }
  /** No decision: the proposal waits (202) and the retry loop asks again. */
  | { status: 'undecided'; code: UndecidedCode; message: string };

/**
 * The server side of an external policy engine it asks (`server.policy.decisionUrl`): ask
 * about a proposal and record the answer as its decision, by the engine's configured
 * identity, through `Records.decide` (the decision route's ledger path and rules).
 */
export interface ExternalDecider {
  /** Ask about one new proposal and record the answer. Never throws; never decides without the engine. */
  decide(log: string, proposal: ProposalRecord): Promise<DecideOutcome>;
  /** Ask again about every proposal still undecided, in pages; returns how many got a decision. */
  retryUndecided(): Promise<number>;
}

/** Create the {@link ExternalDecider} of one server. */
export function createExternalDecider(options: {
  engine: PolicyEngineSettings;
  records: Pick<Records, 'decide' | 'getProposal' | 'undecidedProposals'>;
  logger: Logger;
  metrics?: Pick<Metrics, 'countPolicyEngineAnswer'>;
  /** Hostname resolution for the SSRF guard (tests). */
  resolveHost?: ResolveHost;
  /** Proposals read per page by {@link ExternalDecider.retryUndecided}. */
  pageSize?: number;
}): ExternalDecider {
  const { engine, records, logger, metrics } = options;
  const pageSize = options.pageSize ?? 100;
  // Asked here right now (by a request or the retry loop): the other does not ask again.
  const inFlight = new Set<string>();

  const undecided = (
    log: string,
    proposal: ProposalRecord,
    code: UndecidedCode,
    message: string,
    extra: Record<string, unknown> = {},
  ): DecideOutcome => {
    logger.warn('policy engine gave no decision; the proposal waits and is asked again', {
      code,
      reason: message,
      log,
      proposal_id: proposal.id,
      ...extra,
    });
    return { status: 'undecided', code, message };
  };

  async function ask(log: string, proposal: ProposalRecord): Promise<DecideOutcome> {
    const reply = await askPolicyEngine({
      engine,
      log,
      proposal,
      ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    });
    const seconds = reply.durationMs / 1000;
    if (!reply.ok) {
      metrics?.countPolicyEngineAnswer(reply.code, seconds);
      return undecided(log, proposal, reply.code, reply.message, {
        status: reply.statusCode,
        duration_ms: reply.durationMs,
      });
    }
    // The decision route's own rules, checked before anything is written.
    const input = decisionInputSchema.safeParse({
      proposal_id: proposal.id,
      source: engine.source,
      ...reply.answer,
    });
    if (!input.success) {
      metrics?.countPolicyEngineAnswer('ENGINE_ANSWER_INVALID', seconds);
      const issue = input.error.issues[0]!;
      return undecided(
        log,
        proposal,
        'ENGINE_ANSWER_INVALID',
        `${issue.path.join('.') || 'the decision'}: ${issue.message}`,
      );
    }
    try {
      const { decision, approval } = await records.decide(
        { log, caller: { identity: engine.identity } },
        input.data,
      );
      metrics?.countPolicyEngineAnswer(decision.verdict, seconds);
      logger.info('policy engine decided', {
        log,
        proposal_id: proposal.id,
        decision_id: decision.id,
        verdict: decision.verdict,
        duration_ms: reply.durationMs,
      });
      return { status: 'decided', decision, approval };
    } catch (error) {
      const code = isLedgerError(error) ? error.code : null;
      if (code === 'DECISION_EXISTS') {
        metrics?.countPolicyEngineAnswer('already_decided', seconds);
        return { status: 'already_decided' };
      }
      if (code === 'TOOL_NOT_REGISTERED' || code === 'VALIDATION_FAILED') {
        metrics?.countPolicyEngineAnswer('DECISION_REFUSED', seconds);
        return undecided(log, proposal, 'DECISION_REFUSED', (error as Error).message, { ledger_code: code });
      }
      metrics?.countPolicyEngineAnswer('DECISION_NOT_RECORDED', seconds);
      return undecided(log, proposal, 'DECISION_NOT_RECORDED', 'the decision could not be recorded', {
        error: summarizeError(error),
      });
    }
  }

  async function decide(log: string, proposal: ProposalRecord): Promise<DecideOutcome> {
    const key = `${log}\u0000${proposal.id}`;
    if (inFlight.has(key)) return { status: 'in_progress' };
    inFlight.add(key);
    try {
      return await ask(log, proposal);
    } finally {
      inFlight.delete(key);
    }
  }

  async function retryUndecided(): Promise<number> {
    let decided = 0;
    let after: { log: string; seq: number } | undefined;
    for (;;) {
      const page = await records.undecidedProposals({ limit: pageSize, ...(after ? { after } : {}) });
      for (const row of page) {
        if (inFlight.has(`${row.log}\u0000${row.proposalId}`)) continue;
        const proposal = await records.getProposal(row.log, row.proposalId);
        if ((await decide(row.log, proposal)).status === 'decided') decided++;
      }
      if (page.length < pageSize) return decided;
      const last = page[page.length - 1]!;
      after = { log: last.log, seq: last.seq };
    }
  }

  return { decide, retryUndecided };
}

/** The loop that asks the engine again about undecided proposals; `close` waits for a round in progress. */
export interface PolicyRetryLoop {
  close(): Promise<void>;
}

/**
 * Run {@link ExternalDecider.retryUndecided} now (proposals left undecided before a restart)
 * and every `intervalMs`. Rounds never overlap in one process; several processes may run at
 * once (a decision is recorded once; the other gets `DECISION_EXISTS`). A failed round (the
 * database) is logged and the next tick tries again.
 */
export function startPolicyRetryLoop(options: {
  decider: ExternalDecider;
  intervalMs: number;
  logger: Logger;
}): PolicyRetryLoop {
  const { decider, intervalMs, logger } = options;
  let running: Promise<void> | undefined;
  const round = () => {
    running ??= (async () => {
      try {
        const decided = await decider.retryUndecided();
        if (decided > 0) logger.info('undecided proposals decided by the policy engine', { count: decided });
      } catch (error) {
        logger.warn('policy engine retry round failed', {
          code: 'POLICY_RETRY_FAILED',
          error: summarizeError(error),
        });
      } finally {
        running = undefined;
      }
    })();
  };
  round();
  const timer = setInterval(round, intervalMs);
  timer.unref();
  return {
    close: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
