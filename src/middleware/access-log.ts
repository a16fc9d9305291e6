import type { Context } from "hono";
import { routePath } from "hono/route";
import type { AppEnv } from "../env";
import { cachedUserDigest, userDigest } from "../user-digest";

/** The log's name for a user: the first 8 bytes of its digest in hex, kept beside the cached digest. */
const hashes = new WeakMap<Uint8Array, string>();

function hashOf(digest: Uint8Array): string {
  let hash = hashes.get(digest);
  if (hash === undefined) {
    hash = [...digest.slice(0, 8)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
    hashes.set(digest, hash);
  }
  return hash;
}

function writeLine(c: Context<AppEnv>, requestId: string, started: number, user: string | null): void {
  console.log(
    JSON.stringify({
      level: "info",
      event: "request",
      requestId,
      method: c.req.method,
      route: c.get("routeName") ?? routePath(c, -1),
      status: c.res.status,
      durationMs: Date.now() - started,
      user,
    }),
  );
}

/**
 * One structured JSON line per request, for `wrangler tail` and Workers Logs. It names the route
 * pattern, never the path (which holds guids), and a hash of the user, never the id, a token or a feed.
 * Synchronous (nothing to await) unless the user's digest is not yet cached in this isolate.
 */
export function logRequest(c: Context<AppEnv>, requestId: string, started: number): Promise<void> | undefined {
  const userId = c.get("userId");
  const digest = userId ? cachedUserDigest(userId) : undefined;
  if (!userId || digest) {
    writeLine(c, requestId, started, digest ? hashOf(digest) : null);
    return undefined;
  }
  return userDigest(userId).then((computed) => writeLine(c, requestId, started, hashOf(computed)));
}
