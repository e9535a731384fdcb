// Relative: vitest loads global setup without the @vouch/source condition.

import type { TestProject } from 'vitest/node';
import { writePgliteTemplate } from '../packages/ledger/src/pglite-template';
import { buildTestCli } from './helpers/cli-build';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The `vouch` CLI bundled once for this run (test/helpers/cli-build.ts). */
    vouchTestCli: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  // A migrated PGlite saved once per set of migrations, that testBackends() opens fresh
  // databases from (packages/ledger/src/pglite-template.ts).
  const [cli] = await Promise.all([buildTestCli(), writePgliteTemplate()]);
  project.provide('vouchTestCli', cli);
}
