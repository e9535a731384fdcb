/** The rows of a drizzle `execute` result, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  // postgres-js returns the rows array itself; PGlite returns { rows }.
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
}
