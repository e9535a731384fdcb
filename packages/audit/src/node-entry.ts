// `@vouch/audit/node`: what only Node can do faster, kept out of the browser-safe entries.
export type { VerifyBundleFileOptions } from './bundle-file-node';
export { verifyBundleFile } from './bundle-file-node';
export { startModuleWorker } from './module-worker-node';
export { WorkerPool } from './part-pool-node';
