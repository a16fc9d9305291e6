import type { KnownFeed } from "../db/gpodder";
import type { WriteOperation, WriteResult } from "../db/subscriptions";
import { podcastGuid } from "../podcast-guid";
import { isValidFeedUrl } from "../resources/subscription";
import { trimUrlWhitespace } from "../url-text";
import { badRequest, MAX_GPODDER_ITEMS, tooMany } from "./protocol";

/**
 * gpodder subscription writes (docs/API.md §14) as the JSON:API's operations: each sent URL is trimmed and
 * checked, then named by a guid (the user's tombstone with exactly that URL, else the feed's podcast:guid),
 * removes first, then adds. `update_urls` tells the client what became of every URL it did not get stored
 * exactly as sent.
 */

export interface SentUrl {
  sent: string;
  /** The URL as it would be stored; undefined when it fails the feedUrl rules. */
  url?: string;
}

export function cleanUrls(urls: readonly string[]): SentUrl[] {
  return urls.map((sent) => {
    const url = trimUrlWhitespace(sent);
    return isValidFeedUrl(url) ? { sent, url } : { sent };
  });
}

/** Checks an upload's shape: at most 1000 URLs (413), none both added and removed (400). */
export function checkUpload(add: readonly SentUrl[], remove: readonly SentUrl[]): void {
  if (add.length + remove.length > MAX_GPODDER_ITEMS) throw tooMany("URLs");
  const removed = new Set(remove.map((item) => item.url ?? item.sent));
  const both = add.find((item) => removed.has(item.url ?? item.sent));
  if (both) throw badRequest(`${both.sent} is both added and removed.`);
}

/** The podcast:guid of every valid URL to add: what the lookup must find if it is already stored. */
export function candidateGuids(add: readonly SentUrl[]): Promise<(string | undefined)[]> {
  return Promise.all(add.map((item) => (item.url === undefined ? undefined : podcastGuid(item.url))));
}

export interface SubscriptionPlan {
  operations: WriteOperation[];
  /** Reads the write results into `update_urls` pairs `[sent, stored]`. */
  updateUrls(results: readonly WriteResult<WriteOperation>[]): [string, string][];
}

/** Plans removes (every active subscription with the URL), then adds, against the stored feeds `known`. */
export function planSubscriptionChanges(
  add: readonly SentUrl[],
  remove: readonly SentUrl[],
  guids: readonly (string | undefined)[],
  known: readonly KnownFeed[],
): SubscriptionPlan {
  const operations: WriteOperation[] = [];
  const removedGuids = new Set<string>();
  const removedUrls = new Set(remove.flatMap((item) => (item.url === undefined ? [] : [item.url])));
  for (const feed of known) {
    if (feed.active && removedUrls.has(feed.feedUrl) && !removedGuids.has(feed.guid)) {
      removedGuids.add(feed.guid);
      operations.push({ op: "remove", guid: feed.guid });
    }
  }
  const activeUrlOf = new Map<string, string>();
  const activeUrls = new Set<string>();
  for (const feed of known) {
    if (feed.active && !removedGuids.has(feed.guid)) {
      activeUrlOf.set(feed.guid, feed.feedUrl);
      activeUrls.add(feed.feedUrl);
    }
  }
  const pairs: ([string, string] | undefined)[] = [];
  const addAt = new Map<number, SentUrl>();
  for (const [index, item] of add.entries()) {
    const { sent, url } = item;
    if (url === undefined) {
      pairs.push([sent, ""]);
      continue;
    }
    const changed: [string, string] | undefined = url === sent ? undefined : [sent, url];
    if (activeUrls.has(url)) {
      pairs.push(changed);
      continue;
    }
    const tombstone = known
      .filter((feed) => feed.feedUrl === url && (!feed.active || removedGuids.has(feed.guid)))
      .sort((a, b) => b.changeSeq - a.changeSeq)[0];
    const guid = tombstone?.guid ?? (guids[index] as string);
    const other = activeUrlOf.get(guid);
    if (other !== undefined) {
      pairs.push([sent, other]);
      continue;
    }
    activeUrlOf.set(guid, url);
    activeUrls.add(url);
    addAt.set(operations.length, item);
    operations.push({ op: "add", guid, feedUrl: url });
    pairs.push(changed);
  }
  return {
    operations,
    updateUrls(results) {
      const refused = new Set<string>();
      results.forEach((result, index) => {
        const item = addAt.get(index);
        if (item && result.kind === "limit") refused.add(item.sent);
      });
      return pairs
        .map((pair, index) => (refused.has(add[index].sent) ? ([add[index].sent, ""] as [string, string]) : pair))
        .filter((pair): pair is [string, string] => pair !== undefined);
    },
  };
}
