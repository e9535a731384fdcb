import type { RecordContext } from '@vouch/ledger';

/**
 * The context of a second record a fused request writes (`?authorize=`, `?verify=true`): the
 * request's signature speaks for its first record only, and the second names an id the author
 * could not know when signing, so it is written unsigned (`SIGNATURE_REQUIRED` for an author
 * who must sign: such an author asks for the second step in a request of its own).
 */
export function unsigned(ctx: RecordContext): RecordContext {
  const { signature: _signature, ...caller } = ctx.caller;
  return { ...ctx, caller };
}
