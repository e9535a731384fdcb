/** An in-memory fake of the Vouch API behind a `fetch` function, for testing gateways without a server. */

/** One conformance suite for every server the client talks to (the fake and the real app). */
export type { ConformanceCase, ConformanceServer } from './testing/conformance';
export { CLIENT_CONFORMANCE_CASES, CONFORMANCE_POLICY } from './testing/conformance';
export type { FakeFailure, FakeVouch, FakeVouchOptions } from './testing/fake-vouch';
export { createFakeVouch } from './testing/fake-vouch';
