/**
 * The OPML 2.0 export document. Attribute values are escaped for XML: `&`, `<`, `>` and `"`, and
 * tab, line feed and carriage return as character references so that attribute-value normalisation
 * gives them back unchanged.
 */

export interface OpmlFeed {
  guid: string;
  feedUrl: string;
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

/** One `<outline type="rss">` per feed, in the order given; `dateCreated` in RFC 822 form (GMT). */
export function serialiseOpml(feeds: readonly OpmlFeed[], created: Date): string {
  const outlines = feeds.map(({ guid, feedUrl }) => {
    const url = escapeXml(feedUrl);
    return `    <outline type="rss" text="${url}" xmlUrl="${url}" guid="${escapeXml(guid)}"/>\n`;
  });
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<opml version="2.0">\n' +
    "  <head>\n" +
    `    <title>${escapeXml(OPML_TITLE)}</title>\n` +
    `    <dateCreated>${created.toUTCString()}</dateCreated>\n` +
    "  </head>\n" +
    "  <body>\n" +
    outlines.join("") +
    "  </body>\n" +
    "</opml>\n"
  );
}
