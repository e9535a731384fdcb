import { createHash, randomBytes } from 'node:crypto';
import {
  type CallToolRequest,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createRequestStateCodec,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { JsonObject } from '@vouch/client';
import { approvalMessageOf, supportsFormElicitation } from './approval-prompt';
import type { CallKeys } from './call-keys';
import type { CallToolDeps } from './call-tool';
import type { ForwardingExtra } from './pass-through';
import { type ExecutionMeta, META_KEY } from './tool-results';

/** The name of the gateway's one input request in an `input_required` round. */
export const APPROVAL_INPUT = 'vouch_approval';

/**
 * What the `requestState` of a round carries: the idempotency key of the call's proposal (so
 * the retry continues that proposal, on whichever gateway instance it lands) and a digest of
 * the call it belongs to (so it continues nothing else). Signed, not encrypted: no secret.
 */
export interface RoundState {
  key: string;
  call: string;
}

/** The signed `requestState` of a gateway's rounds. */
export interface ApprovalRounds {
  codec: RequestStateCodec<RoundState>;
}

/** How long a round's state is good for: the user answers once the approval is given. */
const ROUND_STATE_TTL_SECONDS = 24 * 60 * 60;

/**
 * The rounds of one gateway, signed with `key` (random when not given: then only this process
 * can take the retry). The state is bound to the agent the HTTP server authenticated, so one
 * agent cannot continue another's proposal with it.
 */
export function approvalRoundsOf(key: Uint8Array | string | undefined): ApprovalRounds {
  return {
    codec: createRequestStateCodec<RoundState>({
      key: key ?? randomBytes(32),
      ttlSeconds: ROUND_STATE_TTL_SECONDS,
      bind: (ctx) => ctx.http?.authInfo?.clientId ?? '',
    }),
  };
}

/** Handle one call as `handleToolCall` does (deps, the call with its upstream name, extra). */
type HandleCall = (
  deps: CallToolDeps,
  request: CallToolRequest,
  extra: ForwardingExtra,
) => Promise<CallToolResult>;

/**
 * One `tools/call` of an MCP 2026-07-28 client. When the call waits for a human approval and
 * the client declared form elicitation, it is answered as an `input_required` round: the
 * approval prompt is the question, and the proposal's key rides in the signed `requestState`.
 * On the retry the gateway asks Vouch again (after "accept", waiting up to `recheckWaitMs`):
 * only an approval recorded in Vouch lets the call run, whatever the answer says. A declined,
 * cancelled or still pending call is answered as today, the `_meta` fallback.
 */
export async function answerInRounds(
  deps: CallToolDeps,
  request: CallToolRequest,
  ctx: ServerContext,
  rounds: ApprovalRounds,
  extra: ForwardingExtra,
  handle: HandleCall,
): Promise<CallToolResult | InputRequiredResult> {
  const call = callDigestOf(request);
  const state = ctx.mcpReq.requestState<RoundState>();
  const carried = state?.call === call ? state.key : undefined;
  const answer = inputResponse(ctx.mcpReq.inputResponses, APPROVAL_INPUT);
  const answered = answer.kind === 'elicit';
  const prompt = deps.approvalPrompt;

  let used: string | undefined;
  const keys: CallKeys = {
    keyFor(action, agentKey) {
      const own = deps.keys.keyFor(action, agentKey);
      // The proposal of an earlier round goes on; the agent's own key, if any, names the call.
      used = carried ?? own.key;
      return { ...own, key: used };
    },
  };
  // No elicitation is pushed on this exchange: the round is the question.
  const { approvalPrompt: _, ...rest } = deps;
  const recheck = answered && answer.action === 'accept' && prompt;
  const roundDeps: CallToolDeps = {
    ...rest,
    keys,
    ...(recheck ? { approvalWait: { ...deps.approvalWait, timeoutMs: prompt.recheckWaitMs } } : {}),
  };
  const { sendRequest: __, ...roundExtra } = extra;
  const result = await handle(roundDeps, request, roundExtra);

  const meta = result._meta?.[META_KEY] as ExecutionMeta | undefined;
  if (meta?.status !== 'approval_pending' || answered || !prompt || used === undefined) return result;
  if (!supportsFormElicitation(clientCapabilitiesOf(ctx))) return result;
  return inputRequired({
    inputRequests: {
      [APPROVAL_INPUT]: inputRequired.elicit({
        message: approvalMessageOf(prompt, {
          label: request.params.name,
          action: {
            tool_name: request.params.name,
            server_id: deps.serverId,
            target: { env: deps.environment },
            arguments: (request.params.arguments ?? {}) as JsonObject,
          },
          meta,
        }),
        requestedSchema: { type: 'object', properties: {} },
      }),
    },
    requestState: await rounds.codec.mint({ key: used, call }, ctx),
  });
}

/** The client capabilities a 2026-07-28 request declares in its `_meta` envelope. */
function clientCapabilitiesOf(ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
}

/** Names one call: the tool (as the upstream knows it) and its arguments. */
function callDigestOf(request: CallToolRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([request.params.name, request.params.arguments ?? {}]))
    .digest('base64url');
}
