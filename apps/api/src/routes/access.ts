import type { Role } from '../auth/roles';

/**
 * Which roles may call each record route. Kept in one place so the route definitions, their
 * OpenAPI descriptions and a reader auditing the access rules all see the same list. (The
 * table-driven test states its expectations independently, so it can catch a wrong entry.)
 */
export const ACCESS = {
  // A gateway may register only what it discovered, as irreversible (see routes/tools.ts).
  registerTool: ['admin', 'gateway'],
  listTools: ['admin', 'gateway', 'auditor'],
  // A changed tool definition is the registry's to accept, like the registration itself.
  approveToolDefinition: ['admin'],
  propose: ['gateway'],
  getProposal: ['gateway', 'policy', 'approver', 'verifier', 'auditor'],
  // Lists show every requester's proposals: only the humans and verifiers who review them.
  listProposals: ['approver', 'verifier', 'auditor'],
  listVerifications: ['approver', 'verifier', 'auditor'],
  listLogs: ['approver', 'verifier', 'auditor'],
  decide: ['policy'],
  authorize: ['gateway'],
  listApprovals: ['approver', 'auditor'],
  approvalEvents: ['approver', 'auditor'],
  getApproval: ['approver', 'auditor', 'gateway'],
  resolveApproval: ['approver'],
  observe: ['gateway'],
  runVerifiers: ['verifier', 'gateway'],
  postVerification: ['verifier'],
  // Operators (admin) run the targets; auditors read what was notified. Neither sees a secret.
  listWebhookDeliveries: ['admin', 'auditor'],
  // Erasing evidence is its own role: see `redactor` in @vouch/records' ROLES.
  redact: ['redactor'],
} as const satisfies Record<string, readonly Role[]>;

/** "Roles: a, b." for an OpenAPI description. */
export function rolesNote(roles: readonly Role[]): string {
  return `Roles: ${roles.map((r) => `\`${r}\``).join(', ')}.`;
}
