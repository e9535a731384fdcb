import {
  ProtocolErrorCode as ErrorCode,
  ProtocolError as McpError,
  type Result,
} from '@modelcontextprotocol/server';
import type { JsonObject } from '@vouch/client';
import { actionOfCall, type ToolSettings } from './action-of-call';
import { agentKeyFromRequest, answerAskingTheUser, type CallToolDeps, claimOf } from './call-tool';
import { type ForwardingExtra, forwardingOptions } from './pass-through';
import { type ExecutionMeta, META_KEY } from './tool-results';
import { callUpstreamRequest } from './upstream-call';

/**
 * The requests besides `tools/call` that can be governed, and what each one targets: the
 * resource URI, the prompt name, the completion's reference (a prompt name or a resource
 * template), or, for the list methods, the upstream server itself.
 */
const TARGETS = {
  'resources/read': { kind: 'mcp_resource', of: (params) => params.uri },
  'resources/subscribe': { kind: 'mcp_resource', of: (params) => params.uri },
  'prompts/get': { kind: 'mcp_prompt', of: (params) => params.name },
  'completion/complete': {
    kind: 'mcp_completion',
    of: (params) => {
      const ref = params.ref as Record<string, unknown> | undefined;
      return ref?.type === 'ref/prompt' ? ref.name : ref?.uri;
    },
  },
  'resources/list': { kind: 'mcp_server', of: null },
  'resources/templates/list': { kind: 'mcp_server', of: null },
  'prompts/list': { kind: 'mcp_server', of: null },
} as const satisfies Record<
  string,
  { kind: string; of: ((params: Record<string, unknown>) => unknown) | null }
>;

export type GovernableMethod = keyof typeof TARGETS;

export const GOVERNABLE_METHODS = Object.keys(TARGETS) as [GovernableMethod, ...GovernableMethod[]];

/**
 * One governed method: which requests (`match`, a glob over the URI or prompt name) and how
 * their proposals are described, as for a tool (`action`, `target.kind`, `sideEffect`, …).
 */
export interface GovernedMethod extends ToolSettings {
  method: GovernableMethod;
  match?: string;
}

/** A governed request from the agent: the rule that matched and the target it names (null: the server). */
export interface GovernedMatch {
  rule: GovernedMethod;
  target: string | null;
}

/** The first rule that governs `request`, or null when it passes through ungoverned. */
export function governedMatch(
  rules: readonly GovernedMethod[],
  request: { method: string; params?: Record<string, unknown> },
): GovernedMatch | null {
  if (!Object.hasOwn(TARGETS, request.method)) return null;
  const of = TARGETS[request.method as GovernableMethod].of;
  const value = of === null ? null : of(request.params ?? {});
  const target = of === null ? null : typeof value === 'string' ? value : '';
  const rule = rules.find(
    (candidate) =>
      candidate.method === request.method &&
      (candidate.match === undefined ||
        target === null ||
        spellingsOf(target).some((spelling) => globRegExp(candidate.match!).test(spelling))),
  );
  return rule ? { rule, target } : null;
}

/**
 * Send one governed request through Vouch like a tool call: the proposal's `tool_name` is the
 * method, its `arguments` the request's params (without `_meta`), its target the URI or
 * prompt name (kind `mcp_resource` or `mcp_prompt` unless configured). The upstream is asked
 * only as the `invoke` of `vouch.execute`, so after Vouch allowed it or an approval of exactly
 * these params. The agent gets the upstream's answer with `_meta["vouch.dev/execution"]`, or,
 * when nothing ran (denied, pending approval, …), an MCP error whose `data` holds that meta.
 */
export async function handleGovernedRequest(
  deps: CallToolDeps,
  match: GovernedMatch,
  request: { method: string; params?: Record<string, unknown> },
  extra: ForwardingExtra,
): Promise<Result> {
  const { rule } = match;
  const method = rule.method;
  const { _meta: _, ...params } = request.params ?? {};
  const label = match.target === null ? method : `${method} ${match.target}`;
  const action = actionOfCall({
    serverId: deps.serverId,
    environment: deps.environment,
    toolName: method,
    args: JSON.parse(JSON.stringify(params)) as JsonObject,
    registered: deps.registry.sideEffectOf(method),
    settings: {
      ...rule,
      target: {
        kind: rule.target?.kind ?? TARGETS[method].kind,
        // The target named in the request, else the rule's fixed id, else the server.
        ...(rule.target?.id === undefined && match.target !== null ? { id: match.target } : {}),
        ...(rule.target?.id === undefined ? {} : { id: rule.target.id }),
      },
    },
  });
  const agentKey = agentKeyFromRequest(request.params as { _meta?: Record<string, unknown> } | undefined);
  const answer = await answerAskingTheUser(deps, { label, action, agentKey }, extra, (options) =>
    deps.vouch.execute(
      action,
      (context) => {
        deps.journal.claimed(claimOf(context));
        return callUpstreamRequest(
          deps.upstream,
          context,
          forwardingOptions(request, extra, deps.invokeTimeoutMs),
        );
      },
      options,
    ),
  );
  const meta = answer._meta?.[META_KEY] as ExecutionMeta | undefined;
  // Executed: the upstream's own answer (`contents`, `messages`, …), with `_meta` added.
  if (meta?.status === 'executed') return answer as Result;
  const text = answer.content
    .map((block) => (block.type === 'text' ? block.text : ''))
    .filter(Boolean)
    .join('\n');
  throw new McpError(meta?.status === 'error' ? ErrorCode.InternalError : ErrorCode.InvalidRequest, text, {
    [META_KEY]: meta ?? null,
  });
}

/** `*` within one path segment, `**` across segments, `?` one character; the rest literal. */
/**
 * The target as written and as an upstream may read it: a URI with its scheme and host in
 * lower case, `.` and `..` segments resolved, repeated `/` collapsed and percent-escapes
 * decoded. A rule matching any of them governs the request, so `file:///data/./secrets/k`
 * or `file:///data/%73ecrets/k` cannot slip past a rule for `file:///data/secrets/**`.
 */
export function spellingsOf(target: string): string[] {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return [target];
  }
  const path = url.pathname.replace(/\/{2,}/g, '/');
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: the upstream cannot decode it either.
  }
  const hasAuthority = url.host !== '' || target.slice(url.protocol.length).startsWith('//');
  const base = `${url.protocol}${hasAuthority ? `//${url.host}` : ''}`;
  return [...new Set([target, `${base}${path}${url.search}`, `${base}${decoded}${url.search}`])];
}

function globRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i]!;
    if (char === '*' && glob[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}
