import type { Context } from "hono";
import type { AppEnv } from "../env";

export const REQUEST_ID_HEADER = "X-Request-Id";
const MAX_REQUEST_ID_LENGTH = 255;
const HOSTILE_CHARACTER = /[^\w\-=]/;

/**
 * The request's id, for the response header, the access log and error details: the client's
 * X-Request-Id when it is well-formed (so a trace spans services), else a fresh UUID.
 */
export function assignRequestId(c: Context<AppEnv>): string {
  const sent = c.req.header(REQUEST_ID_HEADER);
  const id = sent && sent.length <= MAX_REQUEST_ID_LENGTH && !HOSTILE_CHARACTER.test(sent) ? sent : crypto.randomUUID();
  c.set("requestId", id);
  return id;
}
