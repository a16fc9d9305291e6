import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";

/**
 * Headers every response carries. User data is never stored by shared caches: routes that send an
 * ETag set `private, no-cache` themselves; everything else is `private, no-store`.
 */
export const securityHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  if (!c.res.headers.has("Cache-Control")) c.header("Cache-Control", "private, no-store");
  // Every representation depends on Accept (negotiation may answer 406 or change the media type).
  c.header("Vary", "Accept", { append: true });
};
