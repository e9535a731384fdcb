// End-to-end support: waiting for what another process does, and whether a process runs.

/** Poll `read` until it returns a value (not undefined), or fail after `ms`. */
export async function eventually<T>(
  what: string,
  read: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Whether process `pid` still runs. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
