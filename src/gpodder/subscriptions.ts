import type { ResolvedFeed } from "../db/gpodder";
import { isValidFeedUrl } from "../resources/subscription";
import { trimUrlWhitespace } from "../url-text";
import { badRequest, MAX_GPODDER_ITEMS, tooMany } from "./protocol";

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

/** Checks an upload's shape: at most 1000 URLs (413), none both added and removed (400). */
export function checkUpload(add: readonly SentUrl[], remove: readonly SentUrl[]): void {
  if (add.length + remove.length > MAX_GPODDER_ITEMS) throw tooMany("URLs");
  const removed = new Set(remove.map((item) => item.url ?? item.sent));
  const both = add.find((item) => removed.has(item.url ?? item.sent));
  if (both) throw badRequest(`${both.sent} is both added and removed.`);
}

/**
 * `update_urls` from what each added URL resolved to once the batch ran (db/gpodder.ts): subscribed under
 * its own URL (listed only when trimming changed it), its guid active under another URL (`[sent, stored]`),
 * or neither: invalid, or refused by the quota (`[sent, ""]`). `resolved` holds the valid adds in order.
 */
export function updateUrls(add: readonly SentUrl[], resolved: readonly ResolvedFeed[]): [string, string][] {
  const pairs: [string, string][] = [];
  let next = 0;
  for (const { sent, url } of add) {
    if (url === undefined) {
      pairs.push([sent, ""]);
      continue;
    }
    const { activeUrl } = resolved[next++];
    if (activeUrl === url) {
      if (url !== sent) pairs.push([sent, url]);
    } else {
      pairs.push([sent, activeUrl ?? ""]);
    }
  }
  return pairs;
}
