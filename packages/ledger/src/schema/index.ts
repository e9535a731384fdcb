export { apiKeyRevocations, apiKeys, auditEvents, checkpoints, eventFields, merkleNodes } from './core';
export {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  executionClaims,
  observations,
  proposals,
  refusedExecutions,
  tools,
  verifications,
} from './records';
export { webhookAttemptResults, webhookAttempts, webhookCursors, webhookDeliveries } from './webhooks';
