import type { Context } from "hono";
import type { AppEnv } from "./env";
import { entityTag, notModified, parseIfNoneMatch, REVALIDATE } from "./etag";
import { dataDocument, respond } from "./jsonapi";

/**
 * `GET` of one resource of the user with its ETag (docs/API.md §4, §13): the resource is always read, so a
 * client's current tag never turns a 404 into a 304 (§12); a current tag answers 304, else 200 with the tag.
 * `key` is the resource's path; `read` returns the user's version of that resource kind and the resource,
 * or `undefined` when it does not exist (`notFound` is thrown then).
 */
export async function conditionalResource<T>(
  c: Context<AppEnv>,
  key: string,
  read: () => Promise<{ version: number; found?: T }>,
  toResource: (found: T) => unknown,
  notFound: () => Error,
): Promise<Response> {
  const userId = c.get("userId");
  const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
  const { version, found } = await read();
  if (found === undefined) throw notFound();
  const etag = entityTag(userId, key, version);
  if (precondition.any || precondition.version === version) return notModified(c, etag);
  return respond(c, dataDocument(toResource(found)), 200, { ETag: etag, "Cache-Control": REVALIDATE });
}
