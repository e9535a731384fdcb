import type { FetchGrant } from '@vouch/verifier-sdk';

/** A stand-in for the carrier's API: a `fetch` that answers from a table, with no network. */
export function fakeCarrier(
  shipments: Record<string, { state?: string; tracking?: string; recipient?: string } | number>,
): FetchGrant {
  return async (input, init) => {
    init?.signal?.throwIfAborted();
    const id = decodeURIComponent(String(input).split('/shipments/')[1] ?? '');
    const entry = shipments[id];
    if (typeof entry === 'number') return new Response(null, { status: entry });
    if (entry === undefined) return new Response(null, { status: 404 });
    return new Response(JSON.stringify(entry), { headers: { 'content-type': 'application/json' } });
  };
}
