// The answers the console reads, as types only (declared once in @vouch/records).
export type {
  ApprovalDetail,
  ApprovalPage,
  AuditEvent,
  EventPage,
  ProposalListItem,
  ProposalPage,
  ProposalStory,
  ProposalSummary,
  ToolRecord,
  VerificationPage,
} from '@vouch/records';

export type Role = 'gateway' | 'policy' | 'approver' | 'verifier' | 'auditor' | 'admin' | 'redactor';

/** `GET /v1/me`. */
export interface Me {
  key_id: string;
  identity: string;
  roles: Role[];
  scopes: string[];
  environments: string[] | null;
  logs: string[] | null;
}
