import { isValidFeedUrl } from "../resources/subscription";
import { pagedTextStream } from "../text-stream";

/**
 * The OPML 2.0 export document. Attribute values are escaped for XML: `&`, `<`, `>` and `"`, and
 * tab, line feed and carriage return as character references so that attribute-value normalisation
 * gives them back unchanged.
 */

export interface OpmlFeed {
  guid: string;
  feedUrl: string;
  /** The podcast's title when the service knows it (docs/API.md §18): `text` and `title`, else the feed URL. */
  title?: string | null;
  /** The podcast's site (the channel's `link`): `htmlUrl` when known and an http(s) URL. */
  siteUrl?: string | null;
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "\t": "&#9;",
  "\n": "&#10;",
  "\r": "&#13;",
};

export function escapeXml(value: string): string {
  return value.replace(/[&<>"\t\n\r]/g, (ch) => ESCAPES[ch]);
}

export const OPML_TITLE = "Podcast subscriptions";

/** Everything before the first outline; `dateCreated` in RFC 822 form (GMT). */
function opmlHead(created: Date): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<opml version="2.0">\n' +
    "  <head>\n" +
    `    <title>${escapeXml(OPML_TITLE)}</title>\n` +
    `    <dateCreated>${created.toUTCString()}</dateCreated>\n` +
    "  </head>\n" +
    "  <body>\n"
  );
}

/**
 * What XML 1.0 cannot hold at all, even as a character reference: the C0 controls but tab, LF and CR, lone
 * surrogates, U+FFFE and U+FFFF. The feed round stores no such character (docs/API.md §15, §18); a title that
 * held one anyway loses it rather than making the whole export ill-formed.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed here.
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ud800-\udfff\ufffe\uffff]/gu;

/**
 * One `<outline type="rss">` per feed, in the order given: named by its podcast's title when known (docs/API.md
 * §18), with its site as `htmlUrl` when that passes the feedUrl rules (an http(s) URL: never `javascript:`).
 */
function opmlOutlines(feeds: readonly OpmlFeed[]): string {
  let text = "";
  for (const { guid, feedUrl, title, siteUrl } of feeds) {
    const url = escapeXml(feedUrl);
    const name = title ? escapeXml(title.replace(NOT_XML, "")) : url;
    const site = siteUrl && isValidFeedUrl(siteUrl) ? ` htmlUrl="${escapeXml(siteUrl)}"` : "";
    text += `    <outline type="rss" text="${name}" title="${name}" xmlUrl="${url}"${site} guid="${escapeXml(guid)}"/>\n`;
  }
  return text;
}

const OPML_TAIL = "  </body>\n</opml>\n";

/** The whole document at once, for a few feeds (the OpenAPI example); the export streams (opmlStream). */
export function serialiseOpml(feeds: readonly OpmlFeed[], created: Date): string {
  return opmlHead(created) + opmlOutlines(feeds) + OPML_TAIL;
}

/**
 * The document as a byte stream over pages of feeds (text-stream.ts): what the export holds in memory is one
 * page of rows and its text, however many feeds the account has.
 */
export function opmlStream(
  pages: AsyncIterator<readonly OpmlFeed[]>,
  created: Date,
  onError: (err: unknown) => void,
): ReadableStream<Uint8Array> {
  return pagedTextStream(pages, { head: opmlHead(created), page: opmlOutlines, tail: () => OPML_TAIL }, onError);
}
