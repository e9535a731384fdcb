import { createRoute } from '@hono/zod-openapi';
import type { Records } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { hasRole, requireRole } from '../auth/authorize';
import { ApiError } from '../errors';
import { jsonBody } from '../http/json-body';
import {
  bearerSecurity,
  bodyErrors,
  commonErrors,
  errorResponseSpec,
  STANDBY_READ_NOTE,
} from '../schemas/common';
import {
  LogQuerySchema,
  RegisteredToolSchema,
  ToolDefinitionApprovalInputSchema,
  ToolInputSchema,
  ToolListSchema,
} from '../schemas/records';
import { ACCESS, rolesNote } from './access';
import { logOf, rawBody, recordContext } from './record-context';

const registerTool = createRoute({
  method: 'post',
  path: '/v1/tools',
  tags: ['tools'],
  summary: 'Register a tool, or a new version of it',
  description: `An unregistered tool is never allowed. A side-effect class left out means \`irreversible\`; discovery is not authorization: a \`gateway\` key may register only what it discovered (\`source: discovery\`, irreversible, no \`postconditions\`), and a discovery never overrides an operator's registration. \`postconditions\` lists what every call must prove: each is added to every proposal of the tool at propose (marked \`origin: registry\`, with \`verifiers\` when restricted), its \`params\` bound to the proposal's payload by a JSON pointer (\`{"pointer": "/arguments/order_id"}\`), a CEL expression (\`{"cel": "arguments.amount * 100.0"}\`) or a literal (\`{"value": "EUR"}\`); a CEL expression that does not parse is \`VALIDATION_FAILED\`. A registrar who holds an enrolled signing key (or once \`signatures.required\` is recorded) signs the request (\`Vouch-Signature\`, action \`tool.register\`, claims: this body), or is refused with 403 \`SIGNATURE_REQUIRED\` / \`SIGNATURE_INVALID\`; a registration in such a registrar's name without it decides nothing (409 \`RECORD_SIGNATURE_INVALID\`). Names (\`server_id\`, \`tool_name\`, postcondition names) are plain identifiers (\`IDENTIFIER_INVALID\`). ${rolesNote(ACCESS.registerTool)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.registerTool), jsonBody({ required: true })] as const,
  request: {
    query: LogQuerySchema,
    body: { required: true, content: { 'application/json': { schema: ToolInputSchema } } },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: {
      description: 'Registered (a new version)',
      content: { 'application/json': { schema: RegisteredToolSchema } },
    },
    200: {
      description: 'The same registration again: the stored one, `replayed: true`',
      content: { 'application/json': { schema: RegisteredToolSchema } },
    },
    409: errorResponseSpec('Registered already; pass `replaces_version` (`TOOL_EXISTS`)'),
  },
});

const approveToolDefinition = createRoute({
  method: 'post',
  path: '/v1/tools/definition-approvals',
  tags: ['tools'],
  summary: "Approve a tool's changed definition",
  description: `Pins \`definition_sha256\` as the tool's approved definition (a new version of its registration, chained like any other) and settles a pending \`changed_definition_sha256\` equal to it. A gateway refuses calls to a tool whose served definition differs from the pinned one (rug-pull defence). \`replaces_version\` is the version the approver looked at: \`TOOL_EXISTS\` when the registration changed since; \`TOOL_NOT_REGISTERED\` for an unknown tool. ${rolesNote(ACCESS.approveToolDefinition)} An admin who holds an enrolled signing key (or once \`signatures.required\` is recorded) signs the request (\`Vouch-Signature\`, action \`tool.approve_definition\`, claims: this body).`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.approveToolDefinition), jsonBody({ required: true })] as const,
  request: {
    query: LogQuerySchema,
    body: { required: true, content: { 'application/json': { schema: ToolDefinitionApprovalInputSchema } } },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: {
      description: 'Approved (a new version)',
      content: { 'application/json': { schema: RegisteredToolSchema } },
    },
    200: {
      description: 'Already the approved definition: the stored registration, `replayed: true`',
      content: { 'application/json': { schema: RegisteredToolSchema } },
    },
    409: errorResponseSpec('The registration changed since `replaces_version` (`TOOL_EXISTS`)'),
    422: errorResponseSpec('No such tool (`TOOL_NOT_REGISTERED`)'),
  },
});

const listTools = createRoute({
  method: 'get',
  path: '/v1/tools',
  tags: ['tools'],
  summary: 'The latest registration of every tool of a log',
  description: `${rolesNote(ACCESS.listTools)}\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listTools)] as const,
  request: { query: LogQuerySchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'Every tool',
      content: { 'application/json': { schema: ToolListSchema } },
    },
  },
});

/** `/v1/tools`: the registry. */
export function registerToolRoutes(app: VouchApp, deps: { records: Records }): void {
  app.openapi(registerTool, async (c) => {
    const log = logOf(c);
    const principal = c.get('principal');
    if (!hasRole(principal, 'admin')) {
      // Discovery is not authorization: what a gateway saw on a tool server is recorded as
      // discovered and irreversible; only an operator declares a tool safer than that. What
      // every call must prove is the operator's too: the audited party sets none of it.
      const body = c.req.valid('json');
      if (
        body.source !== 'discovery' ||
        (body.side_effect ?? 'irreversible') !== 'irreversible' ||
        body.postconditions !== undefined
      ) {
        throw new ApiError(
          'ROLE_FORBIDDEN',
          'a gateway key may only register discovered tools (source: discovery, side_effect irreversible or left out, no postconditions)',
          { details: { required: ['admin'], held: principal.roles } },
        );
      }
    }
    const { tool, replayed } = await deps.records.registerTool(recordContext(c, log), rawBody(c));
    return c.json({ tool, replayed }, replayed ? 200 : 201);
  });
  app.openapi(approveToolDefinition, async (c) => {
    const { tool, replayed } = await deps.records.approveToolDefinition(
      recordContext(c, logOf(c)),
      rawBody(c),
    );
    return c.json({ tool, replayed }, replayed ? 200 : 201);
  });
  app.openapi(listTools, async (c) => {
    const log = logOf(c);
    const { records } = await c.get('readSide')();
    return c.json({ tools: await records.listTools(log) }, 200);
  });
}
