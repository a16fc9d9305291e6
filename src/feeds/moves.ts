import type { LearnedMove } from "../db/feed-aliases";
import { isValidFeedUrl } from "../resources/subscription";

/**
 * Where a feed has moved, learned only from what the feed itself answers (docs/API.md §18, "One podcast across its
 * URLs"; docs/decisions.md, "Feed moves"): a fetch of A that ends through permanent redirects only (301, 308) at B
 * answering a feed moves A to B; an `<itunes:new-feed-url>` B in A's answer moves A to B once B, fetched, answers a
 * feed whose `podcast:guid` is A's when both declare one. A temporary redirect moves nothing, and no other feed's
 * answer (one declaring A's `podcast:guid`, one naming A as its new URL) ever moves A.
 *
 * A chain A -> B -> C (B's own answer names C) is followed to its end within one round, at most
 * NEW_FEED_URL_HOPS fetches of named URLs: every hop checked like the first, every `podcast:guid` declared on the way
 * the same. A chain that comes back to a URL it has already been through moves by none of its named URLs (the feeds
 * name each other: following them would move every subscriber back and forth each day); a permanent redirect of
 * A's own fetch still counts. A hop that fails (no feed, gone, another podcast, the round's budget spent) ends the
 * chain at the last URL that passed.
 */

/** The named URLs a round fetches at most for one feed's chain of moves. */
export const NEW_FEED_URL_HOPS = 3;

/** What one answer of a feed says about where it is. */
export interface FeedAnswer {
  /** The URL fetched. */
  url: string;
  /** Where the fetch ended after redirects, and whether every redirect on the way was permanent. */
  finalUrl: string;
  permanent: boolean;
  podcastGuid: string | null;
  newFeedUrl: string | null;
}

/** URLs compare as the URL parser writes them (`HTTP://Host/a` is `http://host/a`), which is how a fetch ends. */
function hrefOf(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

/**
 * Where an answer itself puts its feed: the end of its redirects when there were some, all permanent, and the end
 * is a feed URL a subscription could store (§5's rules); else the URL fetched.
 */
function placeOf(answer: FeedAnswer): string {
  const redirected = hrefOf(answer.finalUrl) !== hrefOf(answer.url);
  return redirected && answer.permanent && isValidFeedUrl(answer.finalUrl) ? answer.finalUrl : answer.url;
}

/** The move one feed's answer leads to, followed hop by hop as the round fetches the URLs it names. */
export class MoveChain {
  readonly from: string;
  /** Where A's own fetch put it (its permanent redirects): what a cycle of named URLs falls back to. */
  private readonly redirectEnd: string;
  private end: string;
  /** The first `podcast:guid` declared along the chain: every other one declared must be the same. */
  private guid: string | null;
  /** Every URL asked or answered along the chain, as the URL parser writes it. */
  private readonly seen = new Set<string>();
  private hops = 0;
  private state: "open" | "final" | "cut" | "cycle" = "open";
  /** The named URL to fetch next; null once the chain has ended. */
  next: string | null = null;

  constructor(answer: FeedAnswer) {
    this.from = answer.url;
    this.redirectEnd = placeOf(answer);
    this.end = this.redirectEnd;
    this.seen.add(hrefOf(answer.url)).add(hrefOf(answer.finalUrl));
    this.guid = answer.podcastGuid;
    this.follow(answer.newFeedUrl);
  }

  private follow(named: string | null): void {
    if (named === null || hrefOf(named) === hrefOf(this.end)) this.state = "final";
    else if (this.seen.has(hrefOf(named))) this.state = "cycle";
    else if (this.hops === NEW_FEED_URL_HOPS) this.state = "cut";
    else this.next = named;
  }

  /** The answer of `next`: null when it answered no feed, or the round could not fetch or parse it. */
  answered(answer: FeedAnswer | null): void {
    const named = this.next;
    if (named === null) return;
    this.next = null;
    if (answer === null) this.state = "cut";
    else if (this.seen.has(hrefOf(answer.finalUrl))) this.state = "cycle";
    else if (this.guid !== null && answer.podcastGuid !== null && answer.podcastGuid !== this.guid) this.state = "cut";
    else {
      this.hops++;
      this.seen.add(hrefOf(named)).add(hrefOf(answer.finalUrl));
      this.end = placeOf(answer);
      this.guid ??= answer.podcastGuid;
      this.follow(answer.newFeedUrl);
    }
  }

  /** The move learned, once the chain has ended (null: none; the feed stays where it is). */
  move(): LearnedMove | null {
    const to = this.state === "cycle" ? this.redirectEnd : this.end;
    if (hrefOf(to) === hrefOf(this.from)) return null;
    return { from: this.from, to, final: this.state === "final" };
  }
}
