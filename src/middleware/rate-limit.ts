import type { Context, MiddlewareHandler } from "hono";
import type { WriteBatch } from "../db/batch";
import { renumberedRows } from "../db/storage";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";

/** The longest window the Rate Limiting binding uses (its `period` is 10 or 60 s): a safe time to wait. */
const RETRY_AFTER_SECONDS = 60;

export function tooManyRequests(detail: string): ApiError {
  return new ApiError({
    status: 429,
    title: "Too many requests",
    detail,
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
  });
}

/**
 * Live rows a purge may renumber for the price of one request: a bulk request of 100 writes 100 rows, so a purge
 * costs the user no more of the limit than writing the same rows itself would (docs/API.md §15; docs/storage.md, "What a purge costs").
 */
export const RENUMBERED_ROWS_PER_REQUEST = 100;

/** Requests' worth of the limit beyond the request itself for `rows` rows of work: a bulk of 100 is one request. */
function extraFor(rows: number): number {
  return Math.max(0, Math.ceil(rows / RENUMBERED_ROWS_PER_REQUEST) - 1);
}

/** Charges the user's limit after the fact, at most one window's allowance (600): the next requests wait. */
async function charge(c: Context<AppEnv>, extra: number): Promise<void> {
  const key = c.get("userId");
  await Promise.all(Array.from({ length: Math.min(600, extra) }, () => c.env.USER_RATE_LIMITER.limit({ key })));
}

/**
 * Charges the user's limit for the rows the request's purges renumbered, after the fact: the request itself is
 * served, and the next ones wait once the limit is spent. With `rowsWritten` (an OPML import's subscribes), the
 * request's own writes are charged as the bulk requests of 100 writing them would be: an import of 1 000 holds
 * the database ~10 times as long as a bulk of 100 (docs/storage.md, "What a purge costs").
 */
export async function chargeRenumbering(c: Context<AppEnv>, batch: WriteBatch, rowsWritten = 0): Promise<void> {
  await charge(c, Math.floor(renumberedRows(batch.all()) / RENUMBERED_ROWS_PER_REQUEST) + extraFor(rowsWritten));
}

/**
 * Charges a request that cannot be split for the rows of its one statement or transaction, as requests of 100
 * rows each would be: an account's erasure (one D1 transaction: docs/API.md §15 keeps it atomic) for the rows
 * it deleted, and the gpodder subscription changes (one statement, whose adds and removes are settled over the
 * whole history) for the changes it read. What bounds how often they hold the database is then the limit.
 */
export async function chargeRows(c: Context<AppEnv>, rows: number): Promise<void> {
  await charge(c, extraFor(rows));
}

/**
 * Charges a read streamed page by page as it goes, as chargeRows would charge its rows at once (one request per
 * 100 rows beyond the first 100, at most one window's allowance in all): each call adds the rows of a page just
 * read and charges what they owe beyond what was charged. The large gpodder GETs (docs/API.md §14): an answer of
 * 50 000 episode states held its database as long as 500 requests of 100, and was one request.
 */
export function rowCharger(c: Context<AppEnv>): (rows: number) => Promise<void> {
  let walked = 0;
  let charged = 0;
  return async (rows) => {
    walked += rows;
    const due = Math.min(600, extraFor(walked)) - charged;
    if (due <= 0) return;
    charged += due;
    await charge(c, due);
  };
}

/** Per-user limit on every authenticated request (USER_RATE_LIMITER in wrangler.toml). */
export const limitPerUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { success } = await c.env.USER_RATE_LIMITER.limit({ key: c.get("userId") });
  if (!success) throw tooManyRequests("This user has sent too many requests; retry after the time in Retry-After.");
  await next();
};
