import type { MiddlewareHandler } from "hono";
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
