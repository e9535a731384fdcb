import { sameIdentity } from '@vouch/audit';
import type {
  ApprovalView,
  DecisionRecord,
  JsonValue,
  ObservationOutcome,
  ObservationRecord,
  ObserveResponse,
  PolicyReason,
  ProposalPayload,
  ProposalRecord,
  ProposalStory,
  ProposeBody,
  Repair,
  VerificationRecord,
} from './api-types';
import { type ApprovalState, approvalStateOf } from './approval-state';
import type { VouchClient } from './client';
import { abortedError, delay } from './delay';
import { isVouchClientError, stepRefusalError, VouchClientError } from './errors';
import {
  deriveIdempotencyKey,
  payloadHashOf,
  proposalPayloadOf,
  withRequiredPostconditions,
} from './idempotency-key';

/** The action to execute: a proposal body whose idempotency key may be left to the client. */
export type ExecuteAction = Omit<ProposeBody, 'idempotency_key'> & { idempotency_key?: string };

// Type-only and never exported: code outside this module cannot name the key, so it cannot
// write an InvokeContext without a cast. A fake `execute`, or a direct call of a function that
// takes one (a gateway's `callUpstreamTool(upstream, context)`), then fails to compile.
declare const madeByExecute: unique symbol;

/**
 * What `invoke` is given: the records that authorize the call, and a signal to stop on. Only
 * `execute` makes one (a cast is the only other way, and a reviewer sees it).
 */
export interface InvokeContext {
  readonly [madeByExecute]: true;
  /** Fires when the invoke timeout passes or the caller cancels; the tool should stop. */
  signal: AbortSignal;
  proposal: ProposalRecord;
  decision: DecisionRecord;
  /** The approval this call runs under, for `require_approval`. */
  approval: ApprovalView | null;
  idempotencyKey: string;
}

/** The tool call itself. It is called at most once per `execute`, and only when authorized. */
export type Invoke<T> = (context: InvokeContext) => Promise<T> | T;

/** What an observation records about a call, apart from who and when. */
export interface Observed {
  outcome: ObservationOutcome;
  result?: JsonValue;
  /** The transport's status (an HTTP status), kept apart from the tool's own error flag. */
  transport_status?: number | null;
  /** The tool said it failed (MCP `isError`), whatever the transport said. */
  tool_error?: boolean | null;
}

/** How long and how often to wait for a decision or an approval. */
export interface WaitOptions {
  /** Give up waiting after this long and return `pending` (default 60 000; 0: ask once, do not wait). */
  timeoutMs?: number;
  /** First wait between polls (default 250); doubles up to `maxPollIntervalMs`. */
  pollIntervalMs?: number;
  /** Longest wait between polls (default 5000). */
  maxPollIntervalMs?: number;
}

/** Options of `execute`. */
export interface ExecuteOptions<T> {
  /** Use this key instead of the one derived from the action. */
  idempotencyKey?: string;
  /** Cancels waiting; during `invoke` it aborts the call, which is then recorded as `unknown`. */
  signal?: AbortSignal;
  /** Time limit of `invoke` (default 60 000). Past it the outcome is `unknown` and it is never retried. */
  invokeTimeoutMs?: number;
  /**
   * The deadline of the execution claim, in seconds (default: the invoke time limit plus
   * {@link CLAIM_MARGIN_SECONDS}). Past it, with no observation, the server records `unknown`;
   * a process that died mid-call is accounted for then instead of after the server's default.
   */
  claimSeconds?: number;
  wait?: WaitOptions;
  /** Turn the tool's return value into an observation (default: `succeeded`, the value as result). */
  observe?: (value: T) => Observed;
  /** Turn a throw from `invoke` into an observation (default: `failed`, the error's name, code and message). */
  observeError?: (error: unknown) => Observed;
  /** Ask the server to run its verifiers after the observation (default true). */
  verify?: boolean;
}

interface ResultBase {
  proposal: ProposalRecord;
  idempotencyKey: string;
  /** The proposal existed already under this key: this call continued or replayed it. */
  replayed: boolean;
}

/** `invoke` ran now, or earlier under the same idempotency key, and its observation is recorded. */
export interface ExecutedResult<T> extends ResultBase {
  status: 'executed';
  decision: DecisionRecord;
  approval: ApprovalView | null;
  /** False when the observation was already there: nothing ran this time. */
  invoked: boolean;
  /** What `invoke` returned, when it ran now and returned. */
  value?: T;
  /** What `invoke` threw, or the timeout, when it ran now and did not return. */
  error?: unknown;
  observation: ObservationRecord;
  verification: VerificationRecord | null;
  /** Why verification is missing, when asking for it failed; the execution stands regardless. */
  verificationError: VouchClientError | null;
}

/** The policy denied the action. Every reason is here; nothing ran. */
export interface DeniedResult extends ResultBase {
  status: 'denied';
  decision: DecisionRecord;
  reasons: PolicyReason[];
}

/** The policy offers a corrected action instead; this one never becomes executable. Nothing ran. */
export interface RepairResult extends ResultBase {
  status: 'repair';
  decision: DecisionRecord;
  reasons: PolicyReason[];
  repair: Repair | null;
}

/** Still waiting for an external decision or a human approval when the wait ended. Nothing ran. */
export interface PendingResult extends ResultBase {
  status: 'pending';
  waitingFor: 'decision' | 'approval';
  decision: DecisionRecord | null;
  approval: ApprovalView | null;
  reasons: PolicyReason[];
}

/** Why the proposal may not run now. */
export type NotAuthorizedCode =
  | 'EXECUTION_NOT_AUTHORIZED'
  | 'APPROVAL_DENIED'
  | 'APPROVAL_EXPIRED'
  | 'APPROVAL_CONSUMED'
  | 'APPROVAL_PAYLOAD_MISMATCH'
  | 'APPROVAL_SCOPE_MISMATCH'
  /** A key of the approver that was live when they approved has been revoked since: ask again. */
  | 'APPROVER_KEY_REVOKED'
  | 'IDENTITY_MISMATCH';

/**
 * A precondition checked at `authorize` does not hold (`PRECONDITION_FAILED`), or no check
 * proved it and the tool's registration blocks unproven ones (`PRECONDITION_UNPROVEN`).
 * Nothing ran and no approval was used; the server recorded the attempt with its checks.
 */
export interface PreconditionFailedResult extends ResultBase {
  status: 'precondition_failed';
  code: 'PRECONDITION_FAILED' | 'PRECONDITION_UNPROVEN';
  decision: DecisionRecord;
  /** The precondition checks as the server reported them (`{ status, checks }`). */
  preconditions: unknown;
}

/** An approval exists but does not authorize this proposal now, or the server refused it at `authorize`. Nothing ran. */
export interface NotAuthorizedResult extends ResultBase {
  status: 'not_authorized';
  code: NotAuthorizedCode;
  decision: DecisionRecord;
  approval: ApprovalView | null;
  reasons: PolicyReason[];
}

/** Every way `execute` can end without throwing. Refusals are results, not exceptions. */
export type ExecuteResult<T> =
  | ExecutedResult<T>
  | DeniedResult
  | RepairResult
  | PendingResult
  | PreconditionFailedResult
  | NotAuthorizedResult;

/** Time the claim leaves, past the invoke time limit, to record the observation. */
export const CLAIM_MARGIN_SECONDS = 30;

/** The claim deadline `execute` asks for: the caller's, else the invoke limit plus the margin. */
export function claimSecondsOf(options: Pick<ExecuteOptions<unknown>, 'claimSeconds' | 'invokeTimeoutMs'>) {
  if (options.claimSeconds !== undefined) return options.claimSeconds;
  return Math.min(86_400, Math.ceil((options.invokeTimeoutMs ?? 60_000) / 1000) + CLAIM_MARGIN_SECONDS);
}

const NOT_AUTHORIZED_BY_STATE: Record<Exclude<ApprovalState, 'approved' | 'pending'>, NotAuthorizedCode> = {
  denied: 'APPROVAL_DENIED',
  expired: 'APPROVAL_EXPIRED',
  consumed: 'APPROVAL_CONSUMED',
  payload_mismatch: 'APPROVAL_PAYLOAD_MISMATCH',
  scope_mismatch: 'APPROVAL_SCOPE_MISMATCH',
};

// What the server may answer `authorize` with when the proposal may not run now.
const REFUSALS_AT_AUTHORIZE: ReadonlySet<string> = new Set<NotAuthorizedCode>([
  'EXECUTION_NOT_AUTHORIZED',
  'IDENTITY_MISMATCH',
  'APPROVAL_SCOPE_MISMATCH',
  'APPROVAL_EXPIRED',
  'APPROVAL_CONSUMED',
  'APPROVAL_PAYLOAD_MISMATCH',
  'APPROVER_KEY_REVOKED',
]);

/**
 * The idempotency keys whose tool this client instance has called. A key found here with no
 * observation on the server is in doubt (the answer to observe was lost): it is recorded as
 * `unknown`, never run again. Bounded; the oldest keys are forgotten first.
 */
export interface ExecutionJournal {
  has(key: string): boolean;
  add(key: string): void;
}

/** An in-memory journal holding the last `limit` keys. */
export function createExecutionJournal(limit = 10_000): ExecutionJournal {
  const keys = new Set<string>();
  return {
    has: (key) => keys.has(key),
    add(key) {
      keys.add(key);
      if (keys.size > limit) keys.delete(keys.values().next().value!);
    },
  };
}

/** What `runExecute` shares across calls of one client. */
export interface ExecuteDeps {
  client: VouchClient;
  inflight: Map<string, Promise<ExecuteResult<unknown>>>;
  journal: ExecutionJournal;
  /**
   * The client signs what it writes: each record in a request of its own, since a fused
   * request's second record (`?authorize=`, `?verify=true`) names an id not known when signing.
   */
  signs?: boolean;
}

/**
 * The gateway flow, with `invoke` as the only step that touches the world:
 * propose -> decide -> (wait for approval) -> authorize -> invoke -> observe -> verify.
 *
 * - `invoke` runs only after `allow`, or after an approval of this exact payload hash for
 *   this requester, server and tool, and only after the server's `authorize` claimed the
 *   execution (a single-use approval cannot be used by two executors).
 * - The idempotency key is derived from the action, so calling `execute` again with the
 *   same action continues the same proposal: it waits on the same approval, and once an
 *   observation exists it is returned (`invoked: false`) instead of running the tool again.
 * - A timeout of `invoke` is recorded as `unknown` and never retried: the tool may have acted.
 *   So is an earlier attempt that claimed the execution but left no observation.
 * - Concurrent calls with one key in this client share one run.
 */
export function runExecute<T>(
  deps: ExecuteDeps,
  action: ExecuteAction,
  invoke: Invoke<T>,
  options: ExecuteOptions<T> = {},
): Promise<ExecuteResult<T>> {
  let payload: ProposalPayload;
  let key: string;
  try {
    payload = proposalPayloadOf(action);
    key = options.idempotencyKey ?? action.idempotency_key ?? deriveIdempotencyKey(payload);
  } catch (error) {
    return Promise.reject(error);
  }
  const running = deps.inflight.get(key);
  if (running) return running as Promise<ExecuteResult<T>>;
  const run = executeOnce(deps, { payload, key, invoke, options }).finally(() => deps.inflight.delete(key));
  deps.inflight.set(key, run);
  return run;
}

async function executeOnce<T>(
  deps: ExecuteDeps,
  input: { payload: ProposalPayload; key: string; invoke: Invoke<T>; options: ExecuteOptions<T> },
): Promise<ExecuteResult<T>> {
  const { client, journal } = deps;
  const signs = deps.signs ?? false;
  const { payload, key, invoke, options } = input;
  const signal = options.signal;
  const wait = {
    timeoutMs: options.wait?.timeoutMs ?? 60_000,
    pollIntervalMs: options.wait?.pollIntervalMs ?? 250,
    maxPollIntervalMs: options.wait?.maxPollIntervalMs ?? 5000,
  };
  const call = signal ? { signal } : {};

  const sentHash = payloadHashOf(payload);
  // The fast path: an allowed new proposal is authorized in the same request, bound to the
  // hash computed here, so a call needs no separate `authorize`.
  const claimSeconds = claimSecondsOf(options);
  const created = await client.proposals.create(
    { ...payload, idempotency_key: key },
    { ...call, ...(signs ? {} : { authorize: sentHash, claimSeconds }) },
  );
  const proposal = created.proposal;
  // The server hashes what it stored: what we sent, plus the postconditions the tool's
  // registration requires (marked `origin: registry`, shown so to the approver). Anything
  // else means what an approver sees and what we would run are different things. Stop before
  // anything runs. (The server authorizes only the hash sent, so a mismatch leaves no
  // execution claim behind.)
  const expectedHash = payloadHashOf(withRequiredPostconditions(payload, proposal));
  // With required postconditions added, the fast path was bound to a hash the server did
  // not record: it claimed nothing, and `authorize` below is asked with the recorded hash.
  const fastPath = !signs && expectedHash === sentHash;
  if (proposal.payload_hash !== expectedHash) {
    throw new VouchClientError(
      'PAYLOAD_HASH_MISMATCH',
      'the server recorded a payload other than the one sent',
      {
        details: { proposal_id: proposal.id, expected: expectedHash, recorded: proposal.payload_hash },
      },
    );
  }
  const base: ResultBase = { proposal, idempotencyKey: key, replayed: created.replayed };
  let decision = created.decision;
  let approval: ApprovalView | null = null;
  let claimedBefore = false;

  if (created.replayed) {
    // An earlier execute made this proposal: it may have run already. Its observation, if
    // any, is the answer; the tool is not called a second time.
    const story = await client.proposals.get(proposal.id, call);
    decision = story.decision;
    approval = story.approval;
    if (story.observation && decision) return replayResult(client, { base, story, decision, options });
    // Another process (or an earlier life of this one) may have claimed the execution and
    // called the tool: a claim without an observation is in doubt, never a reason to run again.
    claimedBefore =
      story.claim !== null || (story.approval?.uses.some((use) => use.proposal_id === proposal.id) ?? false);
  }

  if (!decision) {
    decision = await pollUntil(
      wait,
      signal,
      async () => (await client.proposals.get(proposal.id, call)).decision,
    );
    if (!decision)
      return { ...base, status: 'pending', waitingFor: 'decision', decision: null, approval, reasons: [] };
  }

  switch (decision.verdict) {
    case 'deny':
      return { ...base, status: 'denied', decision, reasons: decision.reasons };
    case 'repair':
      return { ...base, status: 'repair', decision, reasons: decision.reasons, repair: decision.repair };
    case 'require_approval': {
      const requestId = decision.approval_request_id;
      const fetchApproval = async (): Promise<ApprovalView | null> =>
        requestId
          ? client.approvals.get(requestId, call)
          : (await client.proposals.get(proposal.id, call)).approval;
      const settled = await pollUntil(wait, signal, async () => {
        approval = await fetchApproval();
        const state = approval ? approvalStateOf(approval, proposal) : 'pending';
        return state === 'pending' ? null : state;
      });
      if (!settled) {
        return {
          ...base,
          status: 'pending',
          waitingFor: 'approval',
          decision,
          approval,
          reasons: decision.reasons,
        };
      }
      if (settled !== 'approved') {
        const code = NOT_AUTHORIZED_BY_STATE[settled];
        return { ...base, status: 'not_authorized', code, decision, approval, reasons: decision.reasons };
      }
      break;
    }
    case 'allow':
      break;
  }

  // The server refuses an execution by anyone but the authorized identity; checking first
  // keeps the tool from running for a record that would then be refused.
  if (
    decision.authorized_identity === null ||
    !sameIdentity(decision.authorized_identity, proposal.requester)
  ) {
    const reasons = decision.reasons;
    return { ...base, status: 'not_authorized', code: 'IDENTITY_MISMATCH', decision, approval, reasons };
  }

  // An earlier attempt got as far as claiming the execution (or this client called the tool)
  // and left no observation: the tool may have run. That is `unknown`, not a reason to run it again.
  if (claimedBefore || journal.has(key)) {
    return recordInDoubt(client, { base, decision, approval, expectedHash, options });
  }

  // The fast path authorized (or refused) already, in the proposal's own request.
  if (fastPath && created.authorization_refused) {
    const error = stepRefusalError(created.authorization_refused);
    return refusedAtAuthorize(client, { base, decision, approval, options, error });
  }
  if (fastPath && created.authorization) {
    journal.add(key);
    return invokeAndRecord(client, { base, decision, approval, invoke, options, expectedHash, signs });
  }

  try {
    await client.proposals.authorize(
      proposal.id,
      {
        payload_hash: expectedHash,
        ...(decision.approval_request_id ? { approval_request_id: decision.approval_request_id } : {}),
        claim_seconds: claimSeconds,
      },
      call,
    );
  } catch (error) {
    if (!isVouchClientError(error)) throw error;
    return refusedAtAuthorize(client, { base, decision, approval, options, error });
  }

  journal.add(key);
  return invokeAndRecord(client, { base, decision, approval, invoke, options, expectedHash, signs });
}

/** What a refusal of `authorize` (its own call, or the fast path's) means for this execute. */
async function refusedAtAuthorize<T>(
  client: VouchClient,
  input: {
    base: ResultBase;
    decision: DecisionRecord;
    approval: ApprovalView | null;
    options: ExecuteOptions<T>;
    error: VouchClientError;
  },
): Promise<ExecuteResult<T>> {
  const { base, decision, approval, options, error } = input;
  const call = options.signal ? { signal: options.signal } : {};
  if (error.code === 'OBSERVATION_EXISTS') {
    const story = await client.proposals.get(base.proposal.id, call);
    if (story.observation) return replayResult(client, { base, story, decision, options });
  }
  if (error.code === 'PRECONDITION_FAILED' || error.code === 'PRECONDITION_UNPROVEN') {
    const code = error.code;
    return { ...base, status: 'precondition_failed', code, decision, preconditions: error.details ?? null };
  }
  if (REFUSALS_AT_AUTHORIZE.has(error.code)) {
    const code = error.code as NotAuthorizedCode;
    return { ...base, status: 'not_authorized', code, decision, approval, reasons: decision.reasons };
  }
  throw error;
}

async function replayResult<T>(
  client: VouchClient,
  input: { base: ResultBase; story: ProposalStory; decision: DecisionRecord; options: ExecuteOptions<T> },
): Promise<ExecutedResult<T>> {
  const { base, story, decision, options } = input;
  const observation = story.observation!;
  let verification = story.verification;
  let verificationError: VouchClientError | null = null;
  // A retry after a crash between observe and verify finishes the flow.
  if (!verification && options.verify !== false) {
    ({ verification, verificationError } = await verifyObservation(client, observation.id));
  }
  return {
    ...base,
    replayed: true,
    status: 'executed',
    decision,
    approval: story.approval,
    invoked: false,
    observation,
    verification,
    verificationError,
  };
}

async function recordInDoubt<T>(
  client: VouchClient,
  input: {
    base: ResultBase;
    decision: DecisionRecord;
    approval: ApprovalView | null;
    expectedHash: string;
    options: ExecuteOptions<T>;
  },
): Promise<ExecutedResult<T>> {
  const { base, decision, approval, expectedHash, options } = input;
  let recorded: Awaited<ReturnType<VouchClient['observations']['create']>>;
  try {
    recorded = await client.observations.create({
      proposal_id: base.proposal.id,
      outcome: 'unknown',
      result: {
        error: {
          code: 'EXECUTION_IN_DOUBT',
          message:
            'an earlier attempt claimed this execution and recorded no observation; the tool may have run',
        },
      },
      payload_hash: expectedHash,
      ...(decision.approval_request_id ? { approval_request_id: decision.approval_request_id } : {}),
    });
  } catch (error) {
    // The earlier attempt recorded its observation meanwhile: that account stands (the
    // server kept this one as a refused execution), and it is the answer.
    if (!isVouchClientError(error) || error.code !== 'OBSERVATION_CONFLICT') throw error;
    const story = await client.proposals.get(base.proposal.id);
    if (!story.observation) throw error;
    return replayResult(client, { base, story, decision, options });
  }
  let verification: VerificationRecord | null = null;
  let verificationError: VouchClientError | null = null;
  if (options.verify !== false) {
    ({ verification, verificationError } = await verifyObservation(client, recorded.observation.id));
  }
  return {
    ...base,
    status: 'executed',
    decision,
    approval,
    invoked: false,
    observation: recorded.observation,
    verification,
    verificationError,
  };
}

async function invokeAndRecord<T>(
  client: VouchClient,
  input: {
    base: ResultBase;
    decision: DecisionRecord;
    approval: ApprovalView | null;
    invoke: Invoke<T>;
    options: ExecuteOptions<T>;
    expectedHash: string;
    /** The client signs: verification is asked for in a request of its own. */
    signs: boolean;
  },
): Promise<ExecutedResult<T>> {
  const { base, decision, approval, invoke, options } = input;
  const outer = options.signal;
  if (outer?.aborted) throw abortedError(outer);
  const timeoutMs = options.invokeTimeoutMs ?? 60_000;
  const controller = new AbortController();

  const startedAt = new Date().toISOString();
  let observed: Observed;
  let value: T | undefined;
  let error: unknown;
  let cancelled = false;
  try {
    value = await raceInvoke(
      () =>
        invoke({
          signal: controller.signal,
          proposal: base.proposal,
          decision,
          approval,
          idempotencyKey: base.idempotencyKey,
        } as Omit<InvokeContext, typeof madeByExecute> as InvokeContext),
      { controller, timeoutMs, outer },
    );
    observed = options.observe
      ? options.observe(value)
      : { outcome: 'succeeded', result: toJsonResult(value) };
  } catch (thrown) {
    error = thrown;
    if (thrown instanceof InvokeInterrupted) {
      // The call may or may not have acted: `unknown`, recorded once and never retried.
      cancelled = thrown.reason === 'aborted';
      observed = {
        outcome: 'unknown',
        result: {
          error:
            thrown.reason === 'timeout'
              ? { code: 'INVOKE_TIMEOUT', timeout_ms: timeoutMs }
              : { code: 'INVOKE_ABORTED' },
        },
      };
    } else {
      observed = options.observeError
        ? options.observeError(thrown)
        : { outcome: 'failed', result: errorJson(thrown) };
    }
  }
  const finishedAt = new Date().toISOString();

  const verify = options.verify !== false;
  let recorded: Awaited<ReturnType<VouchClient['observations']['create']>>;
  try {
    // Not under the caller's signal: once the tool was called, its record must be written
    // even if the caller stopped waiting; without it a retry could run the tool again.
    // With `verify`, the server verifies in the same request (the fast path's second trip).
    recorded = await client.observations.create(
      {
        proposal_id: base.proposal.id,
        outcome: observed.outcome,
        result: observed.result ?? null,
        transport_status: observed.transport_status ?? null,
        tool_error: observed.tool_error ?? null,
        started_at: startedAt,
        finished_at: finishedAt,
        payload_hash: input.expectedHash,
        ...(decision.approval_request_id ? { approval_request_id: decision.approval_request_id } : {}),
      },
      { verify: verify && !input.signs },
    );
  } catch (cause) {
    throw new VouchClientError(
      'OBSERVATION_NOT_RECORDED',
      `the tool was called for proposal ${base.proposal.id} but its observation was not recorded`,
      {
        cause,
        details: {
          proposal_id: base.proposal.id,
          server_code: isVouchClientError(cause) ? cause.serverCode : null,
          observed: { ...observed, result: observed.result ?? null } as unknown as JsonValue,
        },
      },
    );
  }
  if (cancelled) throw abortedError(outer!);

  const { verification, verificationError } = verify
    ? await verificationOf(client, recorded)
    : { verification: null, verificationError: null };
  return {
    ...base,
    status: 'executed',
    decision,
    approval,
    invoked: true,
    ...(error === undefined ? { value: value as T } : { error }),
    observation: recorded.observation,
    verification,
    verificationError,
  };
}

/** The verification the server ran with the observation, or (a replayed observation) one asked for now. */
async function verificationOf(
  client: VouchClient,
  recorded: ObserveResponse,
): Promise<{ verification: VerificationRecord | null; verificationError: VouchClientError | null }> {
  if (recorded.verification) return { verification: recorded.verification, verificationError: null };
  if (recorded.verification_refused) {
    return { verification: null, verificationError: stepRefusalError(recorded.verification_refused) };
  }
  return verifyObservation(client, recorded.observation.id);
}

async function verifyObservation(
  client: VouchClient,
  observationId: string,
): Promise<{ verification: VerificationRecord | null; verificationError: VouchClientError | null }> {
  try {
    return { verification: await client.observations.verify(observationId), verificationError: null };
  } catch (error) {
    if (!isVouchClientError(error)) throw error;
    return { verification: null, verificationError: error };
  }
}

/** Thrown inside `execute` when `invoke` outlives its time limit or its caller. */
class InvokeInterrupted extends Error {
  override readonly name = 'InvokeInterrupted';
  constructor(readonly reason: 'timeout' | 'aborted') {
    super(reason === 'timeout' ? 'invoke timed out' : 'invoke was cancelled');
  }
}

function raceInvoke<T>(
  start: () => Promise<T> | T,
  options: { controller: AbortController; timeoutMs: number; outer: AbortSignal | undefined },
): Promise<T> {
  const { controller, timeoutMs, outer } = options;
  return new Promise<T>((resolve, reject) => {
    const interrupt = (reason: 'timeout' | 'aborted') => {
      const error = new InvokeInterrupted(reason);
      controller.abort(error);
      reject(error);
    };
    const timer = setTimeout(() => interrupt('timeout'), timeoutMs);
    const onAbort = () => interrupt('aborted');
    outer?.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    };
    // A result that arrives after the timeout is dropped: the outcome was already `unknown`.
    Promise.resolve()
      .then(start)
      .then(
        (value) => {
          settle();
          if (!controller.signal.aborted) resolve(value);
        },
        (error) => {
          settle();
          if (!controller.signal.aborted) reject(error);
        },
      );
  });
}

/** Poll `probe` with backoff until it gives a value, the wait times out (null) or `signal` fires. */
async function pollUntil<R>(
  wait: Required<WaitOptions>,
  signal: AbortSignal | undefined,
  probe: () => Promise<R | null>,
): Promise<R | null> {
  const deadline = Date.now() + wait.timeoutMs;
  let interval = wait.pollIntervalMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    const remaining = deadline - Date.now();
    if (remaining <= 0) return null;
    await delay(Math.min(interval, remaining), signal);
    interval = Math.min(interval * 2, wait.maxPollIntervalMs);
  }
}

function toJsonResult(value: unknown): JsonValue {
  if (value === undefined) return null;
  try {
    // Round-trip to drop what JSON cannot carry the same way the wire would.
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch {
    return { unserializable: typeof value };
  }
}

function errorJson(error: unknown): JsonValue {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      error: {
        name: error.name,
        message: error.message,
        ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
      },
    };
  }
  return { error: { name: 'NonError', message: String(error) } };
}
