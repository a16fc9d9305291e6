import { BoundedMap } from "../bounded-map";
import type { NamedFeed, ResolvedFeed } from "../db/gpodder";
import { podcastGuid } from "../podcast-guid";

/**
 * The feed guids this isolate has seen gpodder URLs resolve to, so an episode upload can compute its episode
 * ids (UUIDv5 in the namespace of the feed's guid) before its one round trip. An upload guesses each URL's
 * guid (the entry here, else the URL's podcast:guid) and its batch refuses to write unless every guess is
 * what the URL resolves to (db/gpodder.ts); a refused guess costs the lookup and a second write, once per
 * URL and isolate, after which the entry here is right. Only guids other than the URL's podcast:guid are
 * kept (that one is the guess anyway). A stale entry is only a wrong guess, caught the same way. Bounded like
 * the other isolate caches, the oldest entry leaving first.
 */
const MAX_KNOWN_FEEDS = 10_000;
const known = new BoundedMap<string, string>(MAX_KNOWN_FEEDS);

function feedKey(userId: string, url: string): string {
  return `${userId}\n${url}`;
}

/** Each URL with its podcast:guid. */
export function nameFeeds(urls: readonly string[]): Promise<NamedFeed[]> {
  return Promise.all(urls.map(async (url) => ({ url, podcastGuid: await podcastGuid(url) })));
}

/** The guid each feed most likely resolves to for this user. */
export function guessFeedGuids(userId: string, feeds: readonly NamedFeed[]): string[] {
  return feeds.map((feed) => known.get(feedKey(userId, feed.url)) ?? feed.podcastGuid);
}

/** Records what the feeds resolved to (from a lookup, or an upload's own adds). */
export function rememberFeedGuids(userId: string, feeds: readonly NamedFeed[], resolved: readonly ResolvedFeed[]) {
  feeds.forEach((feed, index) => {
    const key = feedKey(userId, feed.url);
    const { guid } = resolved[index];
    known.delete(key);
    if (guid === feed.podcastGuid) return;
    known.set(key, guid);
  });
}
