/** Fixtures: a proposal, its observation and a fixed clock, for verifier tests. */
export { exampleObservation, exampleProposal, fixedNow } from './testing/fixtures';
/** The harness for verifier authors, in the spirit of ESLint's RuleTester. */
export type {
  DescribeFn,
  InvalidOptionsCase,
  IsolatedPlugin,
  ItFn,
  PluginIsolation,
  TesterOutcome,
  VerifierTestCase,
  VerifierTestCases,
  VerifierTesterConfig,
} from './testing/verifier-tester';
export { VerifierTester } from './testing/verifier-tester';
