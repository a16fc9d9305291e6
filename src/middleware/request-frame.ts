import type { Hono, MiddlewareHandler } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import type { AppEnv } from "../env";
import { logRequest } from "./access-log";
import { corsPolicy } from "./cors";
import { methodNotAllowedResponse } from "./errors";
import { assignRequestId, REQUEST_ID_HEADER } from "./request-id";
import { addSecurityHeaders } from "./security-headers";

const nothingMore = async () => {};

/**
 * The outer layer of every request, in one async step instead of five stacked middleware (each layer
 * of Hono's chain costs an async dispatch per request): the request id, CORS (preflights answered
 * here, before authentication), 405 for a known path with another method, the headers every
 * response carries, and the access log line. The inner layers run in the order the five ran:
 * request id, then CORS around the app, then 405 on the app's 404, then the headers, then the log.
 */
export function requestFrame(app: Hono<AppEnv>): MiddlewareHandler<AppEnv> {
  const notAllowed = methodNotAllowed({ app, onMethodNotAllowed: methodNotAllowedResponse });
  const run = async (c: Parameters<MiddlewareHandler<AppEnv>>[0], next: () => Promise<void>) => {
    await next();
    // Only a 404 can be a known path asked with another method (Hono's own check, run after the fact).
    if (c.res.status === 404) await notAllowed(c, nothingMore);
  };
  return async (c, next) => {
    const started = Date.now();
    const requestId = assignRequestId(c);
    const cors = corsPolicy(c.env);
    if (cors) {
      const preflight = await cors(c, () => run(c, next));
      if (preflight) c.res = preflight;
    } else {
      await run(c, next);
    }
    // Straight into the finished response: Hono's c.header() would copy the whole response per call.
    // Every response here is built by this worker, so its headers are mutable.
    const headers = c.res.headers;
    headers.set(REQUEST_ID_HEADER, requestId);
    addSecurityHeaders(headers, c.req.path);
    await logRequest(c, requestId, started);
  };
}
