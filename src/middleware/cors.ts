import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { type AppBindings, type AppEnv, configured } from "../env";
import { BOOKMARK_HEADER } from "./d1-session";

function corsFrom(raw: string): MiddlewareHandler<AppEnv> | undefined {
  const allowed = configured(raw)
    ?.split(",")
    .map((origin) => origin.trim())
    .filter((origin) => origin !== "");
  if (!allowed || allowed.length === 0) return undefined;
  return cors({
    origin: allowed.includes("*") ? "*" : (origin) => (allowed.includes(origin) ? origin : null),
    allowMethods: ["GET", "POST", "PATCH", "DELETE"],
    allowHeaders: ["Authorization", "Content-Type", "Accept", "If-None-Match", BOOKMARK_HEADER, "X-Request-Id"],
    exposeHeaders: ["ETag", "Location", "Retry-After", BOOKMARK_HEADER, "X-Request-Id"],
    maxAge: 600,
    credentials: false,
  });
}

/** The CORS middleware of the last CORS_ALLOWED_ORIGINS seen: built once per isolate, not per request. */
let cached: { raw: string; handler: MiddlewareHandler<AppEnv> | undefined } | undefined;

/**
 * CORS for browser-based podcast apps. Origins come from CORS_ALLOWED_ORIGINS (comma-separated, or
 * "*"); none configured means no CORS headers (undefined here), so browsers on other origins are
 * refused. Credentials are bearer tokens in Authorization, never cookies, so credentialed CORS stays
 * off. Preflights are answered by the returned middleware, before authentication.
 */
export function corsPolicy(env: AppBindings): MiddlewareHandler<AppEnv> | undefined {
  const raw = env.CORS_ALLOWED_ORIGINS ?? "";
  if (cached?.raw !== raw) cached = { raw, handler: corsFrom(raw) };
  return cached.handler;
}
