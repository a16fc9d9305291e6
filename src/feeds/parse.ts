import { parseAtomFeed, parseRssFeed } from "feedsmith";
import { cleanPodcastGuid, cleanText, cleanUrl } from "./text";

/** What the service keeps of a feed's channel (docs/API.md §18), every field clean and bounded, or null. */
export interface ChannelFacts {
  title: string | null;
  author: string | null;
  description: string | null;
  imageUrl: string | null;
  siteUrl: string | null;
  language: string | null;
  podcastGuid: string | null;
  /** `<itunes:new-feed-url>`: where the publisher says the feed moved. */
  newFeedUrl: string | null;
}

/** A body that is not a feed the service reads; `message` is kept as the feed's last error. */
export class NotAFeedError extends Error {}

const MAX_TITLE = 500;
const MAX_AUTHOR = 500;
const MAX_DESCRIPTION = 1000;
/** A language tag (BCP 47) is short; anything longer is not one. */
const MAX_LANGUAGE = 35;

/** XML that declares a DOCTYPE or an entity: never a feed here, and never expanded (no entity can grow it). */
const DOCTYPE_OR_ENTITY = /<!(DOCTYPE|ENTITY)/i;
/** Where an RSS channel's first item or an Atom feed's first entry starts: the head ends there. */
export const FIRST_ITEM = /<(item|entry)[\s>/]/;
const ATOM_ROOT = /<feed[\s>]/;

type Rss = ReturnType<typeof parseRssFeed>;
type Atom = ReturnType<typeof parseAtomFeed>;

const orNull = <T>(value: T | undefined): T | null => value ?? null;

function rssFacts(feed: Rss): ChannelFacts {
  return {
    title: orNull(cleanText(feed.title, MAX_TITLE)),
    author: orNull(
      cleanText(feed.itunes?.author, MAX_AUTHOR) ??
        cleanText(feed.managingEditor?.name, MAX_AUTHOR) ??
        cleanText(feed.managingEditor?.email, MAX_AUTHOR),
    ),
    description: orNull(cleanText(feed.description ?? feed.itunes?.summary, MAX_DESCRIPTION)),
    imageUrl: orNull(cleanUrl(feed.itunes?.image) ?? cleanUrl(feed.image?.url)),
    siteUrl: orNull(cleanUrl(feed.link)),
    language: orNull(cleanText(feed.language, MAX_LANGUAGE)),
    podcastGuid: orNull(cleanPodcastGuid(feed.podcast?.guid)),
    newFeedUrl: orNull(cleanUrl(feed.itunes?.newFeedUrl)),
  };
}

function atomFacts(feed: Atom): ChannelFacts {
  const site = feed.links?.find((link) => link.rel === undefined || link.rel === "alternate");
  return {
    title: orNull(cleanText(feed.title?.value, MAX_TITLE)),
    author: orNull(cleanText(feed.itunes?.author, MAX_AUTHOR) ?? cleanText(feed.authors?.[0]?.name, MAX_AUTHOR)),
    description: orNull(cleanText(feed.subtitle?.value ?? feed.itunes?.summary, MAX_DESCRIPTION)),
    imageUrl: orNull(cleanUrl(feed.itunes?.image) ?? cleanUrl(feed.logo) ?? cleanUrl(feed.icon)),
    siteUrl: orNull(cleanUrl(site?.href)),
    language: null,
    // feedsmith reads no `podcast:` namespace in Atom (Podcasting 2.0 is an RSS namespace).
    podcastGuid: null,
    newFeedUrl: orNull(cleanUrl(feed.itunes?.newFeedUrl)),
  };
}

/**
 * The facts of a channel's head (the document up to its first item or entry, or its first 1 MiB): parsed by
 * feedsmith (docs/decisions.md, "Feeds"), as RSS or as Atom by its root element, so one parser runs, not a
 * detection pass of each. Throws NotAFeedError for a DOCTYPE, an entity declaration, or anything not RSS or Atom.
 */
export function parseChannelHead(head: string): ChannelFacts {
  if (DOCTYPE_OR_ENTITY.test(head)) throw new NotAFeedError("not a feed: XML with a DOCTYPE or an entity declaration");
  try {
    return ATOM_ROOT.test(head) && !/<rss[\s>]/.test(head)
      ? atomFacts(parseAtomFeed(head))
      : rssFacts(parseRssFeed(head));
  } catch {
    throw new NotAFeedError("not a feed: neither RSS nor Atom");
  }
}
