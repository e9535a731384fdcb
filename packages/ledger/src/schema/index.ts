export {
  apiKeyRevocations,
  apiKeys,
  auditEvents,
  checkpointCosignatures,
  checkpoints,
  eventFields,
  merkleNodes,
} from './core';
export {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  evidenceRefs,
  executionClaims,
  observations,
  proposals,
  refusedExecutions,
  tools,
  verifications,
} from './records';
export { verificationJobLeases, verificationJobResults, verificationJobs } from './verification-jobs';
export { webhookAttemptResults, webhookAttempts, webhookCursors, webhookDeliveries } from './webhooks';
