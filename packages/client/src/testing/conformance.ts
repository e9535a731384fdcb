import {
  approvalDetailSchema,
  authorizationSchema,
  observationResultSchema,
  proposalResultSchema,
  proposalStorySchema,
  type Role,
  recordedVerificationSchema,
  registeredToolSchema,
  toolRecordSchema,
} from '@vouch/records';
import type { z } from 'zod';
import { createVouchClient, type VouchClient } from '../client';
import { isVouchClientError } from '../errors';
import type { ExecuteAction } from '../execute';
import { payloadHashOf, proposalPayloadOf } from '../idempotency-key';

/**
 * One client conformance suite for every server the client talks to: the real app and the
 * in-memory fake answer the same calls the same way, and every answer is exactly a record of
 * `@vouch/records` (no field missing, none extra). Run it with any test runner:
 *
 * @example
 * for (const c of CLIENT_CONFORMANCE_CASES) it(c.name, () => c.run(server));
 */
export interface ConformanceServer {
  /** The server behind a `fetch`: the fake's, or a real app's `app.request`. */
  fetch: typeof fetch;
  /** An API key of `identity` with `roles` (the fake takes any key). */
  keyFor(identity: string, roles: Role[]): Promise<string>;
  /** A human approves an approval request (`approver` role on the real server). */
  approve(requestId: string): Promise<void>;
}

/** One case: a name, and a run that throws on the first difference. */
export interface ConformanceCase {
  name: string;
  run(server: ConformanceServer): Promise<void>;
}

/** What a server must do to pass: its built-in policy allows `read_only` and asks a human for `irreversible`. */
export const CONFORMANCE_POLICY = { allow: 'read_only', requireApproval: 'irreversible' } as const;

class ConformanceError extends Error {
  override name = 'ConformanceError';
}

function expectThat(condition: boolean, message: string, details?: unknown): asserts condition {
  if (!condition) {
    throw new ConformanceError(details === undefined ? message : `${message}: ${JSON.stringify(details)}`);
  }
}

/** The answer is exactly a record of `schema`: it parses, and parsing drops no field. */
function exactly<S extends z.ZodType>(schema: S, answer: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(answer);
  expectThat(parsed.success, `${what} is not the record @vouch/records declares`, parsed.error?.issues);
  const stripped = canonical(parsed.data);
  expectThat(stripped === canonical(answer), `${what} has fields @vouch/records does not declare`, {
    answer,
    declared: parsed.data,
  });
  return parsed.data;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

async function refusal(call: Promise<unknown>): Promise<{ code: string; status: number | null }> {
  try {
    await call;
  } catch (error) {
    expectThat(isVouchClientError(error), 'a refusal is a VouchClientError', String(error));
    return { code: error.code, status: error.status };
  }
  throw new ConformanceError('the call was expected to be refused, and it was not');
}

let run = 0;
/** Names unique to one run of one case, so cases share a server without meeting. */
function unique(label: string): string {
  run += 1;
  return `conf-${label}-${Date.now().toString(36)}-${run}`;
}

async function clients(server: ConformanceServer) {
  const make = async (identity: string, roles: Role[]) =>
    createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey: await server.keyFor(identity, roles),
      fetch: server.fetch,
      retry: { attempts: 1 },
    });
  return { admin: await make('user:admin', ['admin']), gateway: await make('agent:gateway', ['gateway']) };
}

async function registerTool(admin: VouchClient, sideEffect: 'read_only' | 'irreversible') {
  const body = { server_id: unique('server'), tool_name: 'lookup', side_effect: sideEffect };
  const registered = exactly(registeredToolSchema, await admin.tools.register(body), 'a registered tool');
  return { body, tool: registered.tool };
}

function actionFor(tool: { server_id: string; tool_name: string }, sideEffect: 'read_only' | 'irreversible') {
  return {
    action: 'account.lookup',
    server_id: tool.server_id,
    tool_name: tool.tool_name,
    target: { kind: 'account', id: 'acct_1', env: 'staging' },
    arguments: { account: 'acct_1', amounts: [1, 2.5] },
    side_effect: sideEffect,
  } satisfies ExecuteAction;
}

/** The cases, in the order a gateway meets them. */
export const CLIENT_CONFORMANCE_CASES: readonly ConformanceCase[] = [
  {
    name: 'registers a tool, replays the same registration, and lists it',
    async run(server) {
      const { admin } = await clients(server);
      const { body, tool } = await registerTool(admin, 'read_only');
      expectThat(
        tool.version === 1 && tool.side_effect === 'read_only',
        'the registration is stored as sent',
        tool,
      );
      const again = exactly(
        registeredToolSchema,
        await admin.tools.register(body),
        'a replayed registration',
      );
      expectThat(again.replayed && again.tool.id === tool.id, 'the same registration replays', again);
      const listed = (await admin.tools.list()).find((t) => t.id === tool.id);
      expectThat(listed !== undefined, 'the tool is listed');
      exactly(toolRecordSchema, listed, 'a listed tool');
    },
  },
  {
    name: 'proposes an allowed action, replays it by its key, and refuses the key for another payload',
    async run(server) {
      const { admin, gateway } = await clients(server);
      const { tool } = await registerTool(admin, 'read_only');
      const body = { ...actionFor(tool, 'read_only'), idempotency_key: unique('key') };
      const first = exactly(proposalResultSchema, await gateway.proposals.create(body), 'a proposal result');
      expectThat(
        first.decision?.verdict === 'allow' && !first.replayed,
        'a read-only action is allowed',
        first,
      );
      expectThat(first.proposal.requester === 'agent:gateway', 'the requester is the key’s identity');
      expectThat(
        first.proposal.payload_hash === payloadHashOf(proposalPayloadOf(body)),
        'the server hashes the payload as the client does',
      );
      const again = exactly(
        proposalResultSchema,
        await gateway.proposals.create(body),
        'a replayed proposal',
      );
      expectThat(again.replayed && again.proposal.id === first.proposal.id, 'the same key replays', again);
      const conflict = await refusal(gateway.proposals.create({ ...body, arguments: { account: 'acct_2' } }));
      expectThat(
        conflict.code === 'IDEMPOTENCY_CONFLICT' && conflict.status === 409,
        'another payload',
        conflict,
      );
    },
  },
  {
    name: 'authorizes, observes once, verifies, and tells the story',
    async run(server) {
      const { admin, gateway } = await clients(server);
      const { tool } = await registerTool(admin, 'read_only');
      const { proposal } = await gateway.proposals.create({
        ...actionFor(tool, 'read_only'),
        idempotency_key: unique('key'),
      });
      const authorization = exactly(
        authorizationSchema,
        await gateway.proposals.authorize(proposal.id, { payload_hash: proposal.payload_hash }),
        'an authorization',
      );
      expectThat(authorization.approval_use === null, 'an allowed action claims no approval', authorization);
      const observed = { proposal_id: proposal.id, outcome: 'succeeded', result: { rows: 1 } } as const;
      const first = exactly(
        observationResultSchema,
        await gateway.observations.create(observed),
        'an observation',
      );
      expectThat(!first.replayed && first.observation.executed_by === 'agent:gateway', 'observed', first);
      const again = exactly(observationResultSchema, await gateway.observations.create(observed), 'a replay');
      expectThat(again.replayed && again.observation.id === first.observation.id, 'the same account replays');
      const other = await refusal(gateway.observations.create({ ...observed, outcome: 'failed' }));
      expectThat(other.code === 'OBSERVATION_CONFLICT', 'another account of it is refused', other);

      const recorded = exactly(
        recordedVerificationSchema,
        await gateway.observations.verify(first.observation.id),
        'a recorded verification',
      );
      const story = exactly(proposalStorySchema, await gateway.proposals.get(proposal.id), 'a story');
      expectThat(story.stage === 'executed', 'an observed proposal is executed', story.stage);
      expectThat(story.verification?.id === recorded.id, 'the story shows the latest verification');
      expectThat(
        canonical(story.verification_status) === canonical(recorded.verification_status),
        'the story’s status is the one the verification answered with',
      );
      const outcomeOf = { passed: 'verified', failed: 'verification_failed', inconclusive: 'unverified' };
      expectThat(
        story.outcome === outcomeOf[story.verification_status.status],
        'the outcome follows the verification status',
        { outcome: story.outcome, status: story.verification_status.status },
      );
    },
  },
  {
    name: 'waits for a human approval of the exact payload, then runs once',
    async run(server) {
      const { admin, gateway } = await clients(server);
      const { tool } = await registerTool(admin, 'irreversible');
      const body = { ...actionFor(tool, 'irreversible'), idempotency_key: unique('key') };
      const proposed = exactly(
        proposalResultSchema,
        await gateway.proposals.create(body),
        'a proposal result',
      );
      expectThat(proposed.decision?.verdict === 'require_approval', 'an irreversible action needs approval');
      expectThat(proposed.approval !== null, 'the answer names the approval request', proposed);
      const early = await refusal(gateway.proposals.authorize(proposed.proposal.id, {}));
      expectThat(early.status === 403 || early.status === 409, 'nothing runs before the approval', early);

      await server.approve(proposed.approval.id);
      const authorization = exactly(
        authorizationSchema,
        await gateway.proposals.authorize(proposed.proposal.id, {
          payload_hash: proposed.proposal.payload_hash,
        }),
        'an approved authorization',
      );
      expectThat(authorization.approval_use?.validity === 'once', 'the approval is used once', authorization);
      const { observation } = await gateway.observations.create({
        proposal_id: proposed.proposal.id,
        outcome: 'succeeded',
      });
      expectThat(
        observation.approval_use_id === authorization.approval_use.id,
        'the run is the approved use',
      );

      const approval = exactly(
        approvalDetailSchema,
        await gateway.approvals.get(proposed.approval.id),
        'an approval',
      );
      expectThat(approval.status === 'used', 'a single-use approval that ran is used', approval.status);
      expectThat(
        payloadHashOf(approval.payload) === approval.request.payload_hash,
        'the approver is shown exactly the payload that is hashed',
      );
    },
  },
  {
    name: 'runs execute() from proposal to verified observation',
    async run(server) {
      const { admin, gateway } = await clients(server);
      const { tool } = await registerTool(admin, 'read_only');
      let calls = 0;
      const action = { ...actionFor(tool, 'read_only'), arguments: { account: unique('acct') } };
      const result = await gateway.execute(action, () => {
        calls += 1;
        return { ok: true };
      });
      expectThat(result.status === 'executed' && result.invoked && calls === 1, 'the tool ran once', result);
      const replay = await gateway.execute(action, () => {
        calls += 1;
        return { ok: true };
      });
      expectThat(
        replay.status === 'executed' && !replay.invoked && calls === 1,
        'a retry never runs it twice',
      );
    },
  },
  {
    name: 'refuses an unknown proposal with NOT_FOUND',
    async run(server) {
      const { gateway } = await clients(server);
      const missing = await refusal(gateway.proposals.get(unique('missing')));
      expectThat(
        missing.code === 'NOT_FOUND' && missing.status === 404,
        'an unknown id is not found',
        missing,
      );
    },
  },
];
