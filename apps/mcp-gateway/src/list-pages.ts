import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

/** More pages than any real list has: past it, an upstream is taken to page forever. */
export const MAX_LIST_PAGES = 1_000;

/** One page of an MCP list: its items and the cursor of the next page, if any. */
export interface ListPage<T> {
  items: readonly T[];
  nextCursor?: string | undefined;
}

/**
 * Every item of a paginated MCP list, page after page. An upstream that repeats a cursor or
 * pages past {@link MAX_LIST_PAGES} is refused (an MCP error), so a list always ends.
 */
export async function allPages<T>(
  what: string,
  page: (cursor: string | undefined) => Promise<ListPage<T>>,
): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages >= MAX_LIST_PAGES) {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `${what} has more than ${MAX_LIST_PAGES} pages`,
      );
    }
    const next = await page(cursor);
    items.push(...next.items);
    cursor = next.nextCursor;
    if (cursor === undefined) return items;
    if (seen.has(cursor)) {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `${what} repeats the cursor ${JSON.stringify(cursor)}`,
      );
    }
    seen.add(cursor);
  }
}
