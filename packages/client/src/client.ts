import {
  type AuthorKey,
  authorStatement,
  detachedSignature,
  observationClaims,
  parseAuthorPrivateKey,
  proposalClaims,
  signAuthorStatement,
} from '@vouch/audit';
import type {
  ApiKey,
  ApprovalDetail,
  ApprovalPage,
  ApprovalStatus,
  ApproveBody,
  ApproveToolDefinitionBody,
  AuditEvent,
  Authorization,
  AuthorizeBody,
  ChainHead,
  ChainReport,
  CreateKeyBody,
  DecideBody,
  DecideResponse,
  DenyBody,
  EventPage,
  LogList,
  ObserveBody,
  ObserveResponse,
  PostVerificationBody,
  ProposalPage,
  ProposalStory,
  ProposalSummary,
  ProposeBody,
  ProposeResponse,
  RecordedVerification,
  RedactBody,
  RedactionResult,
  RegisterToolBody,
  RegisterToolResponse,
  ToolRecord,
  VerificationPage,
  VerificationStatus,
} from './api-types';
import { VouchClientError } from './errors';
import {
  createExecutionJournal,
  type ExecuteAction,
  type ExecuteOptions,
  type ExecuteResult,
  type ExecutionJournal,
  type Invoke,
  runExecute,
} from './execute';
import { createHttp, type Http, type HttpOptions, type HttpRequest } from './http';

/** Options of {@link createVouchClient}. */
export interface VouchClientOptions extends HttpOptions {
  /** The log (tenant) every record call uses (`?log=`); the server's default is `default`. */
  log?: string;
  /**
   * Which executions this client has started (default: in memory). Pass a durable one to
   * keep recognizing, across restarts, a call that ran but whose observation was lost.
   */
  journal?: ExecutionJournal;
  /**
   * Sign what this client writes in its identity's name (proposals, execution claims and
   * observations; approvals, denials, verifications, decisions; redactions; API keys issued and
   * revoked) with an enrolled author key (docs/chain.md, "Records signed by their authors"):
   * the key (its `vouch-author-key-v1:` text, e.g. from `VOUCH_SIGNING_KEY` or a key file, or
   * the parsed key) and the identity the API key belongs to.
   */
  signing?: { key: AuthorKey | string; identity: string };
}

/** Per-call options every method takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of `proposals.create`. */
export interface ProposeOptions extends CallOptions {
  /**
   * The payload hash this caller computed: when the decision is `allow`, the server also
   * authorizes the execution in the same request (`authorization` in the answer), bound to it.
   */
  authorize?: string;
  /** With `authorize`: the deadline the execution claim asks for (the server caps it at its own). */
  claimSeconds?: number;
}

/** Options of `observations.create`. */
export interface ObserveOptions extends CallOptions {
  /** Also run the server's verifiers on the new observation (`verification` in the answer). */
  verify?: boolean;
}

/** The typed client: one method per API route, plus {@link VouchClient.execute}. */
export interface VouchClient {
  tools: {
    /** Register a tool (admin). Discovery of a registered tool replays the stored registration. */
    register(body: RegisterToolBody, options?: CallOptions): Promise<RegisterToolResponse>;
    /** The latest registration of every tool (admin, gateway, auditor). */
    list(options?: CallOptions): Promise<ToolRecord[]>;
    /** Approve a tool's changed definition, pinning it (admin). */
    approveDefinition(body: ApproveToolDefinitionBody, options?: CallOptions): Promise<RegisterToolResponse>;
  };
  proposals: {
    /** Propose an action. Retried on network failure: the idempotency key makes that a replay. */
    create(body: ProposeBody, options?: ProposeOptions): Promise<ProposeResponse>;
    /** The whole story of one proposal. */
    get(id: string, options?: CallOptions): Promise<ProposalStory>;
    /** Proposals in chain order, filtered (roles `approver`, `verifier`, `auditor`); pass `next` as `after`. */
    list(query?: ProposalListQuery, options?: CallOptions): Promise<ProposalPage>;
    /** Record an external policy engine's decision (role `policy`). */
    decide(id: string, body: DecideBody, options?: CallOptions): Promise<DecideResponse>;
    /**
     * Right before the tool call: check the decision and preconditions and claim the approval
     * use, so a second executor of a single-use approval is refused before it runs. Not retried.
     */
    authorize(id: string, body: AuthorizeBody, options?: CallOptions): Promise<Authorization>;
  };
  approvals: {
    list(
      query?: { status?: ApprovalStatus; after?: number; limit?: number },
      options?: CallOptions,
    ): Promise<ApprovalPage>;
    /** What the approver is shown: the exact payload and its canonical bytes. */
    get(id: string, options?: CallOptions): Promise<ApprovalDetail>;
    /** Approve (role `approver`; never the requester). Not retried: an answer is given once. */
    approve(id: string, body?: ApproveBody, options?: CallOptions): Promise<ApprovalDetail>;
    deny(id: string, body?: DenyBody, options?: CallOptions): Promise<ApprovalDetail>;
  };
  observations: {
    /** Record what the tool returned. Never retried by the client: see {@link RetryPolicy}. */
    create(body: ObserveBody, options?: ObserveOptions): Promise<ObserveResponse>;
    /** Run the server's verifiers on an observation; the status is derived from their checks. */
    verify(id: string, options?: CallOptions): Promise<RecordedVerification>;
  };
  verifications: {
    /** Post checks from an external verifier (role `verifier`); the status is derived by the server. */
    create(body: PostVerificationBody, options?: CallOptions): Promise<RecordedVerification>;
    /** Verification records in chain order, e.g. `{ status: 'failed' }`; pass `next` as `after`. */
    list(
      query?: { status?: VerificationStatus; after?: number; limit?: number },
      options?: CallOptions,
    ): Promise<VerificationPage>;
  };
  audit: {
    /** The logs this key may use. */
    logs(options?: CallOptions): Promise<string[]>;
    events(
      log: string,
      query?: { after?: number; limit?: number },
      options?: CallOptions,
    ): Promise<EventPage>;
    head(log: string, options?: CallOptions): Promise<ChainHead | null>;
    /** Verify a log's chain on the server; pass a head you trust to detect truncation. */
    verify(log: string, query?: { expectHead?: ChainHead }, options?: CallOptions): Promise<ChainReport>;
    /** Every event of a log, streamed from the JSON Lines export with constant memory. */
    export(log: string, query?: { after?: number }, options?: CallOptions): AsyncIterable<AuditEvent>;
    /**
     * Erase fields of a field-committed event (role `redactor`), recorded as an
     * `event.redacted` event; every proof stays valid. Never retried: a lost answer is
     * settled by reading the log, not by erasing again.
     */
    redact(log: string, seq: number, body: RedactBody, options?: CallOptions): Promise<RedactionResult>;
  };
  keys: {
    /**
     * Issue an API key (admin); the secret is in the answer once. Signed (`api_key.create`)
     * when the client is given `signing`.
     */
    create(body: CreateKeyBody, options?: CallOptions): Promise<{ key: ApiKey; secret: string }>;
    /** Revoke an API key (admin; idempotent). Signed (`api_key.revoke`) when the client is given `signing`. */
    revoke(id: string, options?: CallOptions): Promise<{ key: ApiKey }>;
  };
  /**
   * propose -> decide -> (wait for approval) -> authorize -> invoke -> observe -> verify.
   * See {@link ExecuteOptions}; refusals are results, not exceptions.
   */
  execute<T>(
    action: ExecuteAction,
    invoke: Invoke<T>,
    options?: ExecuteOptions<T>,
  ): Promise<ExecuteResult<T>>;
}

/** The filters of `proposals.list`; `outcome` and `stage` are derived, as in a story. */
export interface ProposalListQuery {
  outcome?: ProposalSummary['outcome'];
  stage?: ProposalSummary['stage'];
  tool?: string;
  server?: string;
  requester?: string;
  environment?: string;
  /** ISO 8601: proposed at or after. */
  since?: string;
  /** ISO 8601: proposed before. */
  until?: string;
  after?: number;
  limit?: number;
}

const seg = encodeURIComponent;

/** A body as the server will read it (what JSON drops, dropped): what a signature's claims are built from. */
const onTheWire = (body: object | undefined): Record<string, unknown> =>
  body === undefined ? {} : (JSON.parse(JSON.stringify(body)) as Record<string, unknown>);

/**
 * A typed client for the Vouch HTTP API, built on `fetch` only (Node 20+, browsers, workers).
 * Failures are {@link VouchClientError}s carrying the server's `code`. Reads and
 * idempotency-keyed proposals are retried with backoff; nothing else is.
 *
 * @example
 * const vouch = createVouchClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: process.env.VOUCH_API_KEY! });
 * const result = await vouch.execute(
 *   { action: 'refund.issue', server_id: 'billing', tool_name: 'issue_refund',
 *     target: { kind: 'order', id: 'A-119', env: 'production' },
 *     arguments: { order: 'A-119', amount: 4200 }, side_effect: 'compensatable' },
 *   async () => billing.issueRefund('A-119', 4200),
 * );
 * if (result.status !== 'executed') console.log(result.status, result.reasons);
 */
export function createVouchClient(options: VouchClientOptions): VouchClient {
  const http = createHttp(options);
  const inflight = new Map<string, Promise<ExecuteResult<unknown>>>();
  const journal = options.journal ?? createExecutionJournal();
  // Record routes take the log from `?log=`; audit routes name it in the path.
  const record = <T>(request: Omit<HttpRequest, 'query'> & { query?: HttpRequest['query'] }) =>
    http.json<T>({ ...request, query: { ...request.query, log: options.log } });
  const signer = options.signing && {
    key:
      typeof options.signing.key === 'string'
        ? parseAuthorPrivateKey(options.signing.key)
        : options.signing.key,
    identity: options.signing.identity,
  };
  /** The `Vouch-Signature` header over `claims` as `action` in `log`, when this client signs. */
  const signed = (
    action: string,
    claims: unknown,
    log = options.log ?? 'default',
  ): { headers?: Record<string, string> } =>
    signer
      ? {
          headers: {
            'vouch-signature': detachedSignature(
              signAuthorStatement(authorStatement(log, action, signer.identity, claims), signer.key),
            ),
          },
        }
      : {};

  const client: VouchClient = {
    tools: {
      register: (body, o) =>
        record<RegisterToolResponse>({
          method: 'POST',
          path: '/v1/tools',
          body,
          retry: 'never',
          ...signed('tool.register', onTheWire(body)),
          ...o,
        }),
      list: async (o) =>
        (await record<{ tools: ToolRecord[] }>({ method: 'GET', path: '/v1/tools', retry: 'safe', ...o }))
          .tools,
      approveDefinition: (body, o) =>
        record<RegisterToolResponse>({
          method: 'POST',
          path: '/v1/tools/definition-approvals',
          body,
          retry: 'never',
          ...signed('tool.approve_definition', onTheWire(body)),
          ...o,
        }),
    },
    proposals: {
      // A proposal carries its idempotency key, so sending it again after a lost answer
      // replays the stored proposal instead of creating a second one.
      create: (body, { authorize, claimSeconds, ...o } = {}) =>
        record<ProposeResponse>({
          method: 'POST',
          path: '/v1/proposals',
          query: {
            authorize,
            ...(authorize !== undefined && claimSeconds !== undefined
              ? { claim_seconds: String(claimSeconds) }
              : {}),
          },
          body,
          ...signed('proposal.propose', proposalClaims(onTheWire(body))),
          retry: 'safe',
          ...o,
        }),
      get: (id, o) =>
        record<ProposalStory>({ method: 'GET', path: `/v1/proposals/${seg(id)}`, retry: 'safe', ...o }),
      decide: (id, body, o) =>
        record<DecideResponse>({
          method: 'POST',
          path: `/v1/proposals/${seg(id)}/decision`,
          body,
          ...signed('decision.record', { ...body, proposal_id: id }),
          retry: 'never',
          ...o,
        }),
      list: (query, o) =>
        record<ProposalPage>({
          method: 'GET',
          path: '/v1/proposals',
          query: { ...query },
          retry: 'safe',
          ...o,
        }),
      authorize: (id, body, o) =>
        record<Authorization>({
          method: 'POST',
          path: `/v1/proposals/${seg(id)}/authorize`,
          body,
          ...signed('execution.authorize', { ...onTheWire(body), proposal_id: id }),
          retry: 'never',
          ...o,
        }),
    },
    approvals: {
      list: (query, o) =>
        record<ApprovalPage>({
          method: 'GET',
          path: '/v1/approvals',
          query: { status: query?.status, after: query?.after, limit: query?.limit },
          retry: 'safe',
          ...o,
        }),
      get: (id, o) =>
        record<ApprovalDetail>({ method: 'GET', path: `/v1/approvals/${seg(id)}`, retry: 'safe', ...o }),
      approve: (id, body, o) =>
        record<ApprovalDetail>({
          method: 'POST',
          path: `/v1/approvals/${seg(id)}/approve`,
          body: body ?? {},
          ...signed('approval.approve', { ...body, request_id: id }),
          retry: 'never',
          ...o,
        }),
      deny: (id, body, o) =>
        record<ApprovalDetail>({
          method: 'POST',
          path: `/v1/approvals/${seg(id)}/deny`,
          body: body ?? {},
          ...signed('approval.deny', { ...body, request_id: id }),
          retry: 'never',
          ...o,
        }),
    },
    observations: {
      // Never retried: a lost answer leaves "was it recorded?" open, and guessing by posting
      // again is exactly the double execution record this client exists to prevent.
      create: (body, { verify, ...o } = {}) =>
        record<ObserveResponse>({
          method: 'POST',
          path: '/v1/observations',
          query: { verify: verify ? 'true' : undefined },
          body,
          ...signed('execution.observe', observationClaims(onTheWire(body))),
          retry: 'never',
          ...o,
        }),
      verify: (id, o) =>
        record<RecordedVerification>({
          method: 'POST',
          path: `/v1/observations/${seg(id)}/verify`,
          ...signed('verification.run', { observation_id: id }),
          retry: 'never',
          ...o,
        }),
    },
    verifications: {
      create: (body, o) =>
        record<RecordedVerification>({
          method: 'POST',
          path: '/v1/verifications',
          body,
          ...signed('verification.record', body),
          retry: 'never',
          ...o,
        }),
      list: (query, o) =>
        record<VerificationPage>({
          method: 'GET',
          path: '/v1/verifications',
          query: { status: query?.status, after: query?.after, limit: query?.limit },
          retry: 'safe',
          ...o,
        }),
    },
    audit: {
      logs: async (o) =>
        (await http.json<LogList>({ method: 'GET', path: '/v1/logs', retry: 'safe', ...o })).logs,
      events: (log, query, o) =>
        http.json<EventPage>({
          method: 'GET',
          path: `/v1/logs/${seg(log)}/events`,
          query: { after: query?.after, limit: query?.limit },
          retry: 'safe',
          ...o,
        }),
      head: async (log, o) =>
        (
          await http.json<{ head: ChainHead | null }>({
            method: 'GET',
            path: `/v1/logs/${seg(log)}/head`,
            retry: 'safe',
            ...o,
          })
        ).head,
      verify: (log, query, o) =>
        http.json<ChainReport>({
          method: 'GET',
          path: `/v1/logs/${seg(log)}/verify`,
          query: {
            expect_head: query?.expectHead ? `${query.expectHead.seq}:${query.expectHead.hash}` : undefined,
          },
          retry: 'safe',
          ...o,
        }),
      export: (log, query, o) => exportEvents(http, log, query?.after, o?.signal),
      redact: (log, seq, body, o) =>
        http.json<RedactionResult>({
          method: 'POST',
          path: `/v1/logs/${seg(log)}/events/${seq}/redactions`,
          body,
          ...signed('event.redact', { ...body, seq }, log),
          retry: 'never',
          ...o,
        }),
    },
    keys: {
      create: (body, o) =>
        http.json<{ key: ApiKey; secret: string }>({
          method: 'POST',
          path: '/v1/keys',
          body,
          // Keys are issued in the `system` log.
          ...signed('api_key.create', body, 'system'),
          retry: 'never',
          ...o,
        }),
      revoke: (id, o) =>
        http.json<{ key: ApiKey }>({
          method: 'POST',
          path: `/v1/keys/${seg(id)}/revoke`,
          ...signed('api_key.revoke', { key_id: id }, 'system'),
          retry: 'never',
          ...o,
        }),
    },
    execute: (action, invoke, executeOptions) =>
      runExecute({ client, inflight, journal, signs: signer !== undefined }, action, invoke, executeOptions),
  };
  return client;
}

async function* exportEvents(
  http: Http,
  log: string,
  after: number | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<AuditEvent> {
  const response = await http.stream({
    method: 'GET',
    path: `/v1/logs/${seg(log)}/export`,
    query: { after },
    retry: 'safe',
    accept: 'application/jsonl',
    ...(signal ? { signal } : {}),
  });
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (value) buffered += value;
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim()) yield parseLine(line);
        newline = buffered.indexOf('\n');
      }
      if (done) break;
    }
    if (buffered.trim()) yield parseLine(buffered);
  } finally {
    reader.releaseLock();
  }
}

function parseLine(line: string): AuditEvent {
  try {
    return JSON.parse(line) as AuditEvent;
  } catch (cause) {
    throw new VouchClientError('UNEXPECTED_RESPONSE', 'the export has a line that is not JSON', { cause });
  }
}
