import type { ResolvedFeed } from "../db/gpodder";
import { isValidFeedUrl } from "../resources/subscription";
import { trimUrlWhitespace } from "../url-text";
import { badRequest, MAX_SUBSCRIPTION_URLS, tooMany } from "./protocol";

/**
 * gpodder subscription writes (docs/API.md §14): each sent URL is trimmed and checked; the batch then names
 * each by a guid in SQL (the user's tombstone with exactly that URL, else the feed's podcast:guid), removes
 * first, then adds (db/gpodder.ts). `update_urls` tells the client what became of every URL it did not get
 * stored exactly as sent.
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

/** Checks an upload's shape: at most 10 000 URLs (413), none both added and removed (400). */
export function checkUpload(add: readonly SentUrl[], remove: readonly SentUrl[]): void {
  if (add.length + remove.length > MAX_SUBSCRIPTION_URLS) throw tooMany("URLs", MAX_SUBSCRIPTION_URLS);
  const removed = new Set(remove.map((item) => item.url ?? item.sent));
  const both = add.find((item) => removed.has(item.url ?? item.sent));
  if (both) throw badRequest(`${both.sent} is both added and removed.`);
}

/** The valid URLs of the adds, each once, in the order of their first add (what the batch writes). */
export function uniqueUrls(add: readonly SentUrl[]): string[] {
  return [...new Set(add.flatMap((item) => (item.url === undefined ? [] : [item.url])))];
}

/**
 * `update_urls` from what each added URL resolved to once the batch ran (db/gpodder.ts): subscribed under
 * its own URL (listed only when trimming changed it), its guid active under another URL (`[sent, stored]`),
 * or neither: invalid, or refused by the quota or the budget (`[sent, ""]`). `resolved` holds the URLs of
 * `uniqueUrls(add)`, in order.
 */
export function updateUrls(add: readonly SentUrl[], resolved: readonly ResolvedFeed[]): [string, string][] {
  const urls = uniqueUrls(add);
  const byUrl = new Map(urls.map((url, index) => [url, resolved[index]]));
  const pairs: [string, string][] = [];
  for (const { sent, url } of add) {
    if (url === undefined) {
      pairs.push([sent, ""]);
      continue;
    }
    const { activeUrl } = byUrl.get(url) as ResolvedFeed;
    if (activeUrl === url) {
      if (url !== sent) pairs.push([sent, url]);
    } else {
      pairs.push([sent, activeUrl ?? ""]);
    }
  }
  return pairs;
}
