import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { AppEnv } from "../env";
import { userDigest } from "../user-digest";

async function userHash(userId: string): Promise<string> {
  const digest = await userDigest(userId);
  return [...digest.slice(0, 8)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * One structured JSON line per request, for `wrangler tail` and Workers Logs. It names the route
 * pattern, never the path (which holds guids), and a hash of the user, never the id, a token or a feed.
 */
export const accessLog: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = Date.now();
  await next();
  const userId = c.get("userId");
  console.log(
    JSON.stringify({
      level: "info",
      event: "request",
      requestId: c.get("requestId"),
      method: c.req.method,
      route: c.get("routeName") ?? routePath(c, -1),
      status: c.res.status,
      durationMs: Date.now() - started,
      user: userId ? await userHash(userId) : null,
    }),
  );
};
