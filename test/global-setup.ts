import type { TestProject } from 'vitest/node';
import { buildTestCli } from './helpers/cli-build';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The `vouch` CLI bundled once for this run (test/helpers/cli-build.ts). */
    vouchTestCli: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  project.provide('vouchTestCli', await buildTestCli());
}
