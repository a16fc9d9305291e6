import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { type AppEnv, configured } from "../env";
import { BOOKMARK_HEADER } from "./d1-session";

/**
 * CORS for browser-based podcast apps. Origins come from CORS_ALLOWED_ORIGINS (comma-separated, or
 * "*"); none configured means no CORS headers, so browsers on other origins are refused. Credentials
 * are bearer tokens in Authorization, never cookies, so credentialed CORS stays off. Preflights are
 * answered here, before authentication.
 */
export const corsPolicy: MiddlewareHandler<AppEnv> = async (c, next) => {
  const allowed = configured(c.env.CORS_ALLOWED_ORIGINS)
    ?.split(",")
    .map((origin) => origin.trim())
    .filter((origin) => origin !== "");
  if (!allowed || allowed.length === 0) return next();
  return cors({
    origin: allowed.includes("*") ? "*" : (origin) => (allowed.includes(origin) ? origin : null),
    allowMethods: ["GET", "POST", "PATCH", "DELETE"],
    allowHeaders: ["Authorization", "Content-Type", "Accept", "If-None-Match", BOOKMARK_HEADER, "X-Request-Id"],
    exposeHeaders: ["ETag", "Location", "Retry-After", BOOKMARK_HEADER, "X-Request-Id"],
    maxAge: 600,
    credentials: false,
  })(c, next);
};
