import { canonicalJson } from '@vouch/audit';
import { deriveOutcome, deriveStage } from '@vouch/records';
import type {
  ApprovalDetail,
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  Authorization,
  DecisionRecord,
  EffectiveVerification,
  ExecutionClaimRecord,
  ObservationRecord,
  ObserveResponse,
  PolicyReason,
  ProposalRecord,
  ProposalStory,
  ProposeBody,
  ProposeResponse,
  RecordedVerification,
  RegisterToolBody,
  RegisterToolResponse,
  ToolRecord,
  Verdict,
  VerificationRecord,
} from '../api-types';
import { payloadHashOf, proposalPayloadOf } from '../idempotency-key';

/**
 * An in-memory stand-in for the Vouch API, served through a `fetch` function: enough of the
 * records semantics (idempotent proposals, one decision, approvals bound to a payload hash,
 * one observation per proposal, derived verification) to test a gateway's flow without a
 * database. It is a test double, not a second implementation: end-to-end tests run the
 * real server.
 */
export interface FakeVouch {
  /** Pass as `createVouchClient({ fetch })`. */
  fetch: typeof fetch;
  /** Every request, in order: `POST /v1/observations`, ... */
  readonly requests: string[];
  readonly proposals: Map<string, ProposalRecord>;
  readonly observations: ObservationRecord[];
  /** The tool registry, by `server_id/tool_name`. */
  readonly tools: Map<string, ToolRecord>;
  /**
   * Answer the next `count` requests to `route` (`POST /v1/proposals`) with a network failure,
   * a status, or a status with a given error code.
   */
  failNext(route: string, failure: FakeFailure, count?: number): void;
  /** Approve an approval request as `resolver` (default `user:approver`). */
  approve(
    requestId: string,
    options?: { resolver?: string; validity?: 'once' | 'window'; validUntil?: string },
  ): void;
  deny(requestId: string, resolver?: string): void;
  /** Make a pending request expire now. */
  expire(requestId: string): void;
  /** Decide a proposal that was left undecided (`decide: () => null`). */
  decide(proposalId: string, verdict: Verdict): void;
}

/** A planned failure: the network, a status (with a generic code), or a status and code. */
export type FakeFailure = 'network' | number | { status: number; code: string; details?: unknown };

/** How the fake decides, who the caller is, and what its verifiers find. */
export interface FakeVouchOptions {
  /** The verdict for a new proposal; `null` leaves it undecided (an external engine decides later). */
  decide?: (proposal: ProposalRecord) => Verdict | null;
  /** The identity behind the API key (default `agent:gateway`). */
  identity?: string;
  /** The status the fake's verifier derives (default `passed`). */
  verificationStatus?: VerificationRecord['status'];
}

const REASONS: Record<Verdict, PolicyReason> = {
  allow: { code: 'POLICY_SATISFIED', effect: 'allow', message: 'every rule of the policy is met' },
  deny: { code: 'TOOL_NOT_REGISTERED', effect: 'deny', message: 'the tool is not registered' },
  repair: { code: 'DRY_RUN_FIRST', effect: 'repair', message: 'run the dry run first' },
  require_approval: { code: 'IRREVERSIBLE', effect: 'require_approval', message: 'needs a human approval' },
};

/** Build a fake Vouch server. */
export function createFakeVouch(options: FakeVouchOptions = {}): FakeVouch {
  const identity = options.identity ?? 'agent:gateway';
  const decideVerdict = options.decide ?? (() => 'allow');
  const requests: string[] = [];
  const failures = new Map<string, FakeFailure[]>();
  const proposals = new Map<string, ProposalRecord>();
  const byKey = new Map<string, ProposalRecord>();
  const decisions = new Map<string, DecisionRecord>();
  const requestsById = new Map<string, ApprovalRequestRecord>();
  const resolutions = new Map<string, ApprovalResolutionRecord>();
  const uses: ApprovalUseRecord[] = [];
  const observations: ObservationRecord[] = [];
  const claims = new Map<string, ExecutionClaimRecord>();
  const verifications: VerificationRecord[] = [];
  const tools = new Map<string, ToolRecord>();
  let counter = 0;
  const id = (prefix: string) => `${prefix}_${++counter}`;
  const now = () => new Date().toISOString();

  function approvalView(requestId: string): ApprovalDetail | null {
    const request = requestsById.get(requestId);
    if (!request) return null;
    const resolution = resolutions.get(requestId) ?? null;
    const requestUses = uses.filter((u) => u.request_id === requestId);
    const at = new Date().toISOString();
    // As the ledger derives it (approvalStatusOf).
    const status: ApprovalDetail['status'] =
      resolution === null
        ? request.expires_at > at
          ? 'pending'
          : 'expired'
        : resolution.resolution === 'denied'
          ? 'denied'
          : resolution.validity === 'once' && requestUses.length > 0
            ? 'used'
            : resolution.valid_until !== null && resolution.valid_until > at
              ? 'approved'
              : 'expired';
    const proposal = proposals.get(request.proposal_id)!;
    const payload = proposalPayloadOf(proposal);
    return {
      request,
      resolution,
      uses: requestUses,
      status,
      proposal,
      payload,
      canonical_payload: canonicalJson(payload),
    };
  }

  /** What `authorize` checks, as the ledger's checkExecution does; claims the approval use. */
  function authorize(
    proposal: ProposalRecord,
    body: { payload_hash?: string },
  ): Response | ApprovalUseRecord | null {
    const decision = decisions.get(proposal.id);
    if (!decision || decision.verdict === 'deny' || decision.verdict === 'repair') {
      return error(403, 'EXECUTION_NOT_AUTHORIZED', 'not authorized');
    }
    if (decision.authorized_identity !== identity) return error(403, 'IDENTITY_MISMATCH', 'another identity');
    if (body.payload_hash !== undefined && body.payload_hash !== proposal.payload_hash) {
      return error(409, 'APPROVAL_PAYLOAD_MISMATCH', 'another payload');
    }
    if (decision.verdict === 'allow') return null;
    const view = approvalView(decision.approval_request_id!)!;
    const own = view.uses.find((u) => u.proposal_id === proposal.id);
    if (own) return own;
    if (view.status === 'used') return error(409, 'APPROVAL_CONSUMED', 'used');
    if (view.status === 'expired') return error(409, 'APPROVAL_EXPIRED', 'expired');
    if (view.status !== 'approved') return error(403, 'EXECUTION_NOT_AUTHORIZED', 'not approved');
    const use: ApprovalUseRecord = {
      id: id('use'),
      request_id: view.request.id,
      resolution_id: view.resolution!.id,
      proposal_id: proposal.id,
      validity: view.resolution!.validity ?? 'once',
      used_by: identity,
      used_at: now(),
    };
    uses.push(use);
    return use;
  }

  function makeDecision(proposal: ProposalRecord, verdict: Verdict): DecisionRecord {
    let approvalRequestId: string | null = null;
    if (verdict === 'require_approval') {
      const request: ApprovalRequestRecord = {
        id: id('apr'),
        proposal_id: proposal.id,
        payload_hash: proposal.payload_hash,
        requester: proposal.requester,
        server_id: proposal.server_id,
        tool_name: proposal.tool_name,
        environment: proposal.target.env,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        max_window_seconds: 3600,
        requested_at: now(),
      };
      requestsById.set(request.id, request);
      approvalRequestId = request.id;
    }
    const decision: DecisionRecord = {
      id: id('dec'),
      proposal_id: proposal.id,
      verdict,
      reasons: [REASONS[verdict]],
      repair:
        verdict === 'repair'
          ? {
              kind: 'dry_run_first',
              action: proposal.action,
              server_id: proposal.server_id,
              tool_name: `${proposal.tool_name}_dry_run`,
              target: proposal.target,
              arguments: proposal.arguments,
              message: 'propose the dry run first',
            }
          : null,
      authorized_identity: verdict === 'allow' || verdict === 'require_approval' ? proposal.requester : null,
      source: 'built_in',
      tool_id: null,
      approval_request_id: approvalRequestId,
      decided_by: 'system:policy',
      decided_at: now(),
    };
    decisions.set(proposal.id, decision);
    return decision;
  }

  function requestOf(decision: DecisionRecord | null): ApprovalRequestRecord | null {
    return decision?.approval_request_id ? (requestsById.get(decision.approval_request_id) ?? null) : null;
  }

  function story(proposal: ProposalRecord): ProposalStory {
    const decision = decisions.get(proposal.id) ?? null;
    const observation = observations.find((o) => o.proposal_id === proposal.id) ?? null;
    const approval = decision?.approval_request_id ? approvalView(decision.approval_request_id) : null;
    const proposalVerifications = verifications.filter((v) => v.proposal_id === proposal.id);
    const verification = proposalVerifications.at(-1) ?? null;
    return {
      proposal,
      decision,
      approval: approval && {
        request: approval.request,
        resolution: approval.resolution,
        uses: approval.uses,
        status: approval.status,
        proposal: approval.proposal,
      },
      claim: claims.get(proposal.id) ?? null,
      observation,
      refusals: [],
      verifications: proposalVerifications,
      verification,
      verification_status: statusOf(verification),
      // The ledger's own derivations, from the latest record's status (see statusOf).
      outcome: deriveOutcome({ observation, verificationStatus: verification?.status ?? null }),
      stage: deriveStage({ proposal, decision, approval, observation, refusals: [] }),
      events: [],
    };
  }

  // The fake keeps no refused executions, so it never reports `execution_refused`. It takes
  // the latest record's status as the proposal's: the real rules (per declared postcondition,
  // across records, supersession: the ledger's effectiveVerification) need the verifier SDK
  // and the ledger, and are tested against the real app.
  function statusOf(verification: VerificationRecord | null): EffectiveVerification {
    const status = verification?.status ?? 'inconclusive';
    return {
      status,
      reason: verification === null ? 'NOT_VERIFIED' : status === 'inconclusive' ? 'UNPROVEN' : null,
      postconditions: [],
      superseded: [],
      settles_at: null,
    };
  }

  /** What an observation keeps of the body, as canonical JSON: a retry compares equal. */
  const observedText = (o: Record<string, unknown>) =>
    canonicalJson({
      outcome: o.outcome,
      result: o.result ?? null,
      transport_status: o.transport_status ?? null,
      tool_error: o.tool_error ?? null,
      started_at: o.started_at ?? null,
      finished_at: o.finished_at ?? null,
    });

  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const error = (status: number, code: string, message: string, details?: unknown) =>
    json(status, {
      error: { code, message, ...(details === undefined ? {} : { details }), request_id: `req_${counter}` },
    });

  /** The failure planned with `failNext` for this route, if any; `network` is thrown. */
  function plannedFailure(route: string): Response | undefined {
    const failure = failures.get(route)?.shift();
    if (failure === 'network') throw new TypeError('fetch failed');
    if (typeof failure === 'number')
      return error(failure, failure === 503 ? 'DATABASE_UNAVAILABLE' : 'INTERNAL', 'planned');
    if (failure) return error(failure.status, failure.code, 'planned', failure.details);
    return undefined;
  }

  /**
   * A fused step (`?authorize=`, `?verify=true`): its own route's answer (or the failure planned
   * for that route), as a result or a refusal beside the record already written.
   */
  async function step(
    method: string,
    path: string,
    body: unknown,
  ): Promise<{ result: unknown; refused: unknown }> {
    const answer = plannedFailure(`${method} ${path}`) ?? (await handle(method, path, body));
    const json = (await answer.json()) as { error?: { code: string; message: string; details?: unknown } };
    if (answer.ok) return { result: json, refused: null };
    const { code, message, details } = json.error!;
    return {
      result: null,
      refused: { status: answer.status, code, message, ...(details === undefined ? {} : { details }) },
    };
  }

  async function handle(
    method: string,
    path: string,
    body: unknown,
    query = new URLSearchParams(),
  ): Promise<Response> {
    const param = (pattern: RegExp): string | undefined => {
      const found = path.match(pattern)?.[1];
      return found === undefined ? undefined : decodeURIComponent(found);
    };
    const proposalId = method === 'GET' ? param(/^\/v1\/proposals\/([^/]+)$/) : undefined;
    const approvalId = method === 'GET' ? param(/^\/v1\/approvals\/([^/]+)$/) : undefined;
    const verifyId = method === 'POST' ? param(/^\/v1\/observations\/([^/]+)\/verify$/) : undefined;
    const authorizeId = method === 'POST' ? param(/^\/v1\/proposals\/([^/]+)\/authorize$/) : undefined;
    if (method === 'GET' && path === '/v1/tools') return json(200, { tools: [...tools.values()] });
    if (method === 'POST' && path === '/v1/tools') {
      const input = body as RegisterToolBody;
      const name = `${input.server_id}/${input.tool_name}`;
      const current = tools.get(name);
      const replay = (tool: ToolRecord) => json(200, { tool, replayed: true } satisfies RegisterToolResponse);
      // As the ledger: discovery never overrides a registration, the same one again replays,
      // and another one must name the version it replaces.
      if (current && input.source === 'discovery') return replay(current);
      const registration: Omit<ToolRecord, 'id' | 'version' | 'registered_by' | 'registered_at'> = {
        server_id: input.server_id,
        tool_name: input.tool_name,
        side_effect: input.side_effect ?? 'irreversible',
        required_scopes: input.required_scopes ?? [],
        allowed_environments: input.allowed_environments ?? null,
        dry_run_tool: input.dry_run_tool ?? null,
        compensation_tool: input.compensation_tool ?? null,
        approval_required: input.approval_required ?? false,
        requires_target_id: input.requires_target_id ?? true,
        max_approval_window_seconds: input.max_approval_window_seconds ?? null,
        source: input.source ?? 'manual',
      };
      if (current) {
        const { id: _id, version, registered_by: _by, registered_at: _at, ...stored } = current;
        if (canonicalJson(stored) === canonicalJson(registration)) return replay(current);
        if (input.replaces_version !== version) {
          return error(409, 'TOOL_EXISTS', 'name the version this registration replaces', { version });
        }
      }
      const tool: ToolRecord = {
        ...registration,
        id: id('tool'),
        version: (current?.version ?? 0) + 1,
        registered_by: identity,
        registered_at: now(),
      };
      tools.set(name, tool);
      return json(201, { tool, replayed: false } satisfies RegisterToolResponse);
    }
    if (method === 'POST' && path === '/v1/proposals') {
      const input = body as ProposeBody;
      const payload = proposalPayloadOf(input);
      const hash = payloadHashOf(payload);
      const existing = byKey.get(input.idempotency_key);
      if (existing) {
        if (existing.payload_hash !== hash)
          return error(409, 'IDEMPOTENCY_CONFLICT', 'key used for another payload');
        const decision = decisions.get(existing.id) ?? null;
        return json(200, {
          proposal: existing,
          decision,
          approval: requestOf(decision),
          replayed: true,
        } satisfies ProposeResponse);
      }
      const proposal: ProposalRecord = {
        ...payload,
        id: id('prp'),
        idempotency_key: input.idempotency_key,
        requester: identity,
        requester_scopes: [],
        requester_environments: null,
        payload_hash: hash,
        proposed_at: now(),
      };
      proposals.set(proposal.id, proposal);
      byKey.set(proposal.idempotency_key, proposal);
      const verdict = decideVerdict(proposal);
      const decision = verdict === null ? null : makeDecision(proposal, verdict);
      const answer: ProposeResponse = { proposal, decision, approval: requestOf(decision), replayed: false };
      const authorizeHash = query.get('authorize');
      if (authorizeHash !== null) {
        // As the server: only an allowed new proposal is authorized in the same request.
        const { result, refused } =
          decision?.verdict === 'allow'
            ? await step('POST', `/v1/proposals/${proposal.id}/authorize`, { payload_hash: authorizeHash })
            : { result: null, refused: null };
        answer.authorization = result as Authorization | null;
        answer.authorization_refused = refused as ProposeResponse['authorization_refused'];
      }
      return json(decision ? 201 : 202, answer);
    }
    if (authorizeId !== undefined) {
      const proposal = proposals.get(authorizeId);
      if (!proposal) return error(404, 'NOT_FOUND', 'no such proposal');
      const observed = observations.find((o) => o.proposal_id === proposal.id);
      if (observed) return error(409, 'OBSERVATION_EXISTS', 'already executed');
      const claimed = authorize(proposal, (body ?? {}) as { payload_hash?: string });
      if (claimed instanceof Response) return claimed;
      const decision = decisions.get(proposal.id)!;
      const claim = claims.get(proposal.id) ?? {
        id: `clm_${proposal.id}`,
        proposal_id: proposal.id,
        decision_id: decision.id,
        approval_use_id: claimed?.id ?? null,
        claimed_by: identity,
        claimed_at: now(),
        deadline: new Date(Date.parse(now()) + 600_000).toISOString(),
      };
      claims.set(proposal.id, claim);
      return json(200, {
        proposal,
        decision,
        approval_use: claimed,
        claim,
        preconditions: null,
      } satisfies Authorization);
    }
    if (proposalId !== undefined) {
      const proposal = proposals.get(proposalId);
      return proposal
        ? json(200, story(proposal) satisfies ProposalStory)
        : error(404, 'NOT_FOUND', 'no such proposal');
    }
    if (approvalId !== undefined) {
      const view = approvalView(approvalId);
      return view ? json(200, view satisfies ApprovalDetail) : error(404, 'NOT_FOUND', 'no such approval');
    }
    if (method === 'POST' && path === '/v1/observations') {
      const input = body as Record<string, unknown>;
      const proposal = proposals.get(String(input.proposal_id));
      if (!proposal) return error(404, 'NOT_FOUND', 'no such proposal');
      const existing = observations.find((o) => o.proposal_id === proposal.id);
      if (existing) {
        // As the ledger: the same account again is a replay, another one a conflict.
        if (observedText(input) === observedText(existing as unknown as Record<string, unknown>)) {
          return json(200, { observation: existing, replayed: true } satisfies ObserveResponse);
        }
        return error(409, 'OBSERVATION_CONFLICT', 'another account of a recorded execution', {
          proposal_id: proposal.id,
          observation_id: existing.id,
        });
      }
      const decision = decisions.get(proposal.id)!;
      // As the ledger: every execution is claimed by `authorize` first.
      const claim = claims.get(proposal.id);
      if (!claim) {
        return error(409, 'EXECUTION_NOT_CLAIMED', 'authorize before executing', {
          proposal_id: proposal.id,
        });
      }
      const checked = authorize(proposal, input as { payload_hash?: string });
      if (checked instanceof Response) return checked;
      const useId = claim.approval_use_id;
      const observation: ObservationRecord = {
        id: id('obs'),
        proposal_id: proposal.id,
        decision_id: decision.id,
        approval_use_id: useId,
        server_id: proposal.server_id,
        tool_name: proposal.tool_name,
        executed_by: identity,
        outcome: input.outcome as ObservationRecord['outcome'],
        result: (input.result ?? null) as ObservationRecord['result'],
        transport_status: (input.transport_status ?? null) as number | null,
        tool_error: (input.tool_error ?? null) as boolean | null,
        started_at: (input.started_at ?? null) as string | null,
        finished_at: (input.finished_at ?? null) as string | null,
        observed_at: now(),
      };
      observations.push(observation);
      const answer: ObserveResponse = { observation, replayed: false };
      if (query.get('verify') === 'true') {
        const { result, refused } = await step('POST', `/v1/observations/${observation.id}/verify`, {});
        answer.verification = result as RecordedVerification | null;
        answer.verification_refused = refused as ObserveResponse['verification_refused'];
      }
      return json(201, answer);
    }
    if (verifyId !== undefined) {
      const observation = observations.find((o) => o.id === verifyId);
      if (!observation) return error(404, 'NOT_FOUND', 'no such observation');
      const status = options.verificationStatus ?? 'passed';
      const verification: VerificationRecord = {
        id: id('ver'),
        observation_id: observation.id,
        proposal_id: observation.proposal_id,
        checks: [
          { name: 'fake.check', status: status === 'passed' ? 'pass' : 'fail', source: 'fake-source' },
        ],
        status,
        verifier: 'fake',
        verified_at: now(),
      };
      verifications.push(verification);
      return json(201, {
        ...verification,
        verification_status: statusOf(verification),
      } satisfies RecordedVerification);
    }
    return error(404, 'ROUTE_NOT_FOUND', `no route ${method} ${path}`);
  }

  const fakeFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? 'GET').toUpperCase();
    const route = `${method} ${url.pathname}`;
    requests.push(route);
    const failed = plannedFailure(route);
    if (failed) return failed;
    const text = typeof init?.body === 'string' ? init.body : undefined;
    return handle(method, url.pathname, text === undefined ? undefined : JSON.parse(text), url.searchParams);
  };

  return {
    fetch: fakeFetch as typeof fetch,
    requests,
    proposals,
    observations,
    tools,
    failNext(route, failure, count = 1) {
      failures.set(route, [...(failures.get(route) ?? []), ...Array.from({ length: count }, () => failure)]);
    },
    approve(requestId, o = {}) {
      resolutions.set(requestId, {
        id: id('res'),
        request_id: requestId,
        resolution: 'approved',
        resolver: o.resolver ?? 'user:approver',
        validity: o.validity ?? 'once',
        window_seconds: null,
        window_source: null,
        valid_until: o.validUntil ?? new Date(Date.now() + 3_600_000).toISOString(),
        comment: null,
        resolved_at: now(),
      });
    },
    deny(requestId, resolver = 'user:approver') {
      resolutions.set(requestId, {
        id: id('res'),
        request_id: requestId,
        resolution: 'denied',
        resolver,
        validity: null,
        window_seconds: null,
        window_source: null,
        valid_until: null,
        comment: null,
        resolved_at: now(),
      });
    },
    expire(requestId) {
      const request = requestsById.get(requestId);
      if (request)
        requestsById.set(requestId, { ...request, expires_at: new Date(Date.now() - 1000).toISOString() });
    },
    decide(proposalId, verdict) {
      makeDecision(proposals.get(proposalId)!, verdict);
    },
  };
}
