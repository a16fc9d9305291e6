import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { type Database, database } from "../db/database";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";
import { shardOfUser, shardRouting } from "../shards";

export const BOOKMARK_HEADER = "X-D1-Bookmark";

/** The shape of a D1 bookmark; anything else is refused before it reaches D1 and is never echoed. */
export const BOOKMARK_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** A bucket move copies a few thousand rows at most per second of freeze: a short wait is enough. */
const FROZEN_RETRY_AFTER_SECONDS = 5;

export function invalidBookmark(): ApiError {
  return new ApiError({
    status: 400,
    title: "Invalid bookmark",
    detail: `${BOOKMARK_HEADER} must be a bookmark this service returned.`,
    source: { header: BOOKMARK_HEADER },
  });
}

export function frozenForMove(): ApiError {
  return new ApiError({
    status: 503,
    title: "Temporarily read-only",
    detail: "This account's data is being moved to another database. Reads work; nothing was changed: retry the write.",
    headers: { "Retry-After": String(FROZEN_RETRY_AFTER_SECONDS) },
  });
}

/**
 * Whether a route (not only middleware, which `app.use` registers for every method) answers this method
 * and path: a request no route takes gets its 404 or 405 whatever headers it carries.
 */
function isRouted(c: Context<AppEnv>): boolean {
  return matchedRoutes(c).some((route) => route.method !== "ALL");
}

/**
 * The client's bookmark, checked by shape; undefined when it sent none. `"unrouted"`: the bookmark is bad
 * but no route takes the request, so the 404 or 405 it gets says more than a 400 would (docs/API.md §12).
 */
function clientBookmark(c: Context<AppEnv>): string | undefined | "unrouted" {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  if (bookmark === undefined || BOOKMARK_SHAPE.test(bookmark)) return bookmark;
  if (isRouted(c)) throw invalidBookmark();
  return "unrouted";
}

/**
 * Reads the bucket map (SHARD_MAP, SHARD_FROZEN) before anything else: a wrong map stops every /v1
 * request with a configuration error (500, see middleware/errors.ts) rather than reading the wrong database.
 */
export const shardConfiguration: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("shards", shardRouting(c.env));
  await next();
};

/** The user's shard; a write to a frozen bucket is refused (503) before anything is read. */
async function userShard(c: Context<AppEnv>) {
  const shard = await shardOfUser(c.get("shards"), c.get("userId"));
  const isRead = c.req.method === "GET" || c.req.method === "HEAD";
  if (!isRead && shard.frozen) throw frozenForMove();
  return { shard, isRead };
}

/**
 * The gpodder paths read and write the user's primary database, never a lagging replica (docs/API.md §14):
 * their `since` is a time, and a client that just uploaded must read what it uploaded. No bookmark is
 * taken or given.
 */
export const d1PrimarySession: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { shard } = await userShard(c);
  c.set("db", database(shard.database.withSession("first-primary")));
  await next();
};

/**
 * Picks the one database of the request (the user's shard, from the token's user) and opens a D1
 * session on it (read replication, Sessions API). Reads start at the client's bookmark, or anywhere
 * ("first-unconstrained", the nearest replica) without one; writes start at the primary. The response
 * carries the session's latest bookmark: sending it back guarantees the next request sees this one's writes.
 *
 * A bookmark is a position in one database's history, so it must never reach another database. The
 * header keeps D1's exact shape (no room for a shard tag); a user's shard changes only when a bucket move
 * switches the map, and a move switches it while the buckets are frozen. Frozen buckets refuse writes
 * (503) and read the primary whatever bookmark comes with the request, so a bookmark of the old database
 * is ignored while replicas of the new one catch up; the move unfreezes only after that (see
 * docs/CAPACITY.md, "Moving buckets").
 */
export const d1Session: MiddlewareHandler<AppEnv> = async (c, next) => {
  const bookmark = clientBookmark(c);
  if (bookmark === "unrouted") return next();
  const { shard, isRead } = await userShard(c);
  const constraint = !isRead || shard.frozen ? "first-primary" : (bookmark ?? "first-unconstrained");
  let session: D1DatabaseSession;
  try {
    session = shard.database.withSession(constraint);
  } catch {
    throw invalidBookmark();
  }
  c.set("db", database(session));
  let primary: Database | undefined;
  c.set("primaryDb", () => {
    primary ??= isRead && !shard.frozen ? database(shard.database.withSession("first-primary")) : database(session);
    return primary;
  });
  await next();
  const latest = session.getBookmark();
  // Straight into the finished response (this worker built it, so its headers are mutable): Hono's
  // c.header() on a finished response copies the whole response first.
  if (latest) c.res.headers.set(BOOKMARK_HEADER, latest);
};
