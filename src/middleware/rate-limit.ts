import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";

/** The longest window the Rate Limiting binding uses (its `period` is 10 or 60 s): a safe time to wait. */
const RETRY_AFTER_SECONDS = 60;

function tooManyRequests(detail: string): ApiError {
  return new ApiError({
    status: 429,
    title: "Too many requests",
    detail,
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
  });
}

/** Per-user limit on every authenticated request (USER_RATE_LIMITER in wrangler.toml). */
export const limitPerUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { success } = await c.env.USER_RATE_LIMITER.limit({ key: c.get("userId") });
  if (!success) throw tooManyRequests("This user has sent too many requests; retry after the time in Retry-After.");
  await next();
};

/** The client's IP as Cloudflare saw it; one shared key when absent (local tools), so the limit still applies. */
function clientIp(c: Context<AppEnv>): string {
  return c.req.header("CF-Connecting-IP") ?? "unknown";
}

/**
 * Counts one failed authentication against the client's IP (AUTH_FAILURE_RATE_LIMITER). Returns the
 * 429 to answer instead of the 401 once the IP is over its limit.
 */
export async function authFailureLimit(c: Context<AppEnv>): Promise<ApiError | undefined> {
  const { success } = await c.env.AUTH_FAILURE_RATE_LIMITER.limit({ key: clientIp(c) });
  if (success) return undefined;
  return tooManyRequests("Too many failed authentications from this address; retry after the time in Retry-After.");
}
