import type { Context, MiddlewareHandler } from "hono";
import type { WriteBatch } from "../db/batch";
import { renumberedRows } from "../db/storage";
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

/**
 * Live rows a purge may renumber for the price of one request: a bulk request of 100 writes 100 rows, so a purge
 * costs the user no more of the limit than writing the same rows itself would (docs/API.md §15, README).
 */
export const RENUMBERED_ROWS_PER_REQUEST = 100;

/**
 * Charges the user's limit for the rows the request's purges renumbered, after the fact: the request itself is
 * served, and the next ones wait once the limit is spent. At most one window's allowance (600) is charged.
 */
export async function chargeRenumbering(c: Context<AppEnv>, batch: WriteBatch): Promise<void> {
  const extra = Math.min(600, Math.floor(renumberedRows(batch.all()) / RENUMBERED_ROWS_PER_REQUEST));
  const key = c.get("userId");
  await Promise.all(Array.from({ length: extra }, () => c.env.USER_RATE_LIMITER.limit({ key })));
}

/** Per-user limit on every authenticated request (USER_RATE_LIMITER in wrangler.toml). */
export const limitPerUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { success } = await c.env.USER_RATE_LIMITER.limit({ key: c.get("userId") });
  if (!success) throw tooManyRequests("This user has sent too many requests; retry after the time in Retry-After.");
  await next();
};
