import type { Context } from "hono";
import type { ChangeFeedReader } from "./db/change-feed";
import type { AppEnv } from "./env";
import { entityTag, notModified, parseIfNoneMatch, REVALIDATE } from "./etag";
import { dataDocumentText, respondText } from "./jsonapi";
import { type ChangeParams, changeFeedLinks, changesLink, expiredSyncToken, invalidSyncToken } from "./pagination";

/**
 * A change feed as the API answers it (docs/API.md §8), for any resource: what changed after the client's
 * token, oldest change first, deletions included, with its ETag, links and `meta.syncToken`. A resource
 * supplies its collection path and its reader, whose SQL writes the items.
 */
export interface ChangeFeed {
  path: string;
  read: ChangeFeedReader;
  /**
   * Its pages carry related resources (`included`) whose changes take no change number (a subscription's
   * podcast, §18): the user's version cannot tell a copy is current, so such a page has no ETag and is always read.
   */
  includesUnversioned?: boolean;
}

/** One page of a change feed. One more change than the page holds is read to know whether `next` exists. */
export async function changeFeedPage(c: Context<AppEnv>, feed: ChangeFeed, page: ChangeParams): Promise<Response> {
  c.set("routeName", `${feed.path}?filter[since]`);
  const userId = c.get("userId");
  const key = changesLink(feed.path, page.since, page.size);
  const precondition = feed.includesUnversioned
    ? { any: false, version: null }
    : parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
  let result = await feed.read(c.get("db"), userId, page.since, page.size, precondition.version);
  // A token newer than what this replica has seen may come from a write it has not caught up with: the
  // primary decides (docs/API.md §15), never a lagging replica.
  if (page.since > result.version) {
    result = await feed.read(c.get("primaryDb")(), userId, page.since, page.size, precondition.version);
    if (page.since > result.version) throw invalidSyncToken();
  }
  // A purge removed tombstones this token had not seen (docs/API.md §15): 0 always works, and no row keeps a
  // change number below the horizon, so a walk from 0 is never handed an expired token.
  if (page.since > 0 && page.since < result.horizon) throw expiredSyncToken();
  const { version, changes } = result;
  const etag = entityTag(userId, key, version);
  if (!changes || precondition.any) return notModified(c, etag);
  const document = dataDocumentText(
    changes.data,
    { links: changeFeedLinks(feed.path, page, changes.last, changes.more), meta: { syncToken: String(changes.last) } },
    changes.included,
  );
  const headers: Record<string, string> = feed.includesUnversioned ? {} : { ETag: etag };
  return respondText(c, document, 200, { ...headers, "Cache-Control": REVALIDATE });
}
