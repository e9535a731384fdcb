/** An in-memory fake of the Vouch API behind a `fetch` function, for testing gateways without a server. */
export type { FakeFailure, FakeVouch, FakeVouchOptions } from './testing/fake-vouch';
export { createFakeVouch } from './testing/fake-vouch';
