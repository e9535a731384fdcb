export { apiKeys, auditEvents, checkpoints, merkleNodes } from './core';
