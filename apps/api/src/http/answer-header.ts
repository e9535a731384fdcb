import type { Context } from 'hono';

/**
 * Set a header on the answer a handler already made. hono's `c.header()` at that point
 * rebuilds the answer around its body, which turns the node adapter's plain string body into
 * a web `Response` and a stream copied to the socket; the answer's own headers take the value
 * in place. Only headers that cannot be changed (an answer from `fetch()`) go through hono.
 */
export function setAnswerHeader(c: Context, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}
