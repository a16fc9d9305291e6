import type { MiddlewareHandler } from "hono";
import { database } from "../db/subscriptions";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";

export const BOOKMARK_HEADER = "X-D1-Bookmark";

/**
 * D1 read replication (Sessions API). Reads run in a session that starts at the client's bookmark,
 * or anywhere ("first-unconstrained", the nearest replica) when it sent none; writes start at the
 * primary. The response carries the session's latest bookmark: sending it back on the next request
 * guarantees that request sees this one's writes.
 */
export const d1Session: MiddlewareHandler<AppEnv> = async (c, next) => {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  const isRead = c.req.method === "GET" || c.req.method === "HEAD";
  let session: D1DatabaseSession;
  try {
    session = c.env.DB.withSession(isRead ? (bookmark ?? "first-unconstrained") : "first-primary");
  } catch {
    throw new ApiError({
      status: 400,
      title: "Invalid bookmark",
      detail: `${BOOKMARK_HEADER} must be a bookmark this service returned.`,
      source: { header: BOOKMARK_HEADER },
    });
  }
  c.set("db", database(session));
  await next();
  const latest = session.getBookmark();
  if (latest) c.header(BOOKMARK_HEADER, latest);
};
