// Feed documents shaped like real podcast feeds, and hostile ones (docs/API.md §18): what the local feed server
// (test/feed-server.ts) serves, and what the parse tests read directly. Plain strings: importable in workerd too.
export const ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd";
const PODCAST = "https://podcastindex.org/namespace/1.0";

/** An episode item, as real feeds carry dozens: what the fetch must never read. */
const item = (n: number) => `
    <item>
      <title>Episode ${n}: the long road</title>
      <guid isPermaLink="false">tech-${n}</guid>
      <enclosure url="https://media.example.com/tech/${n}.mp3" length="${1000 * n}" type="audio/mpeg"/>
      <itunes:duration>00:4${n % 10}:00</itunes:duration>
      <description><![CDATA[<p>Show notes for episode ${n}</p>]]></description>
    </item>`;

export const TECH_GUID = "917393e3-1b1e-5cef-ace4-edaa54e1f810";

/** What the service keeps of techFeed's channel: its text clean (docs/API.md §18). */
export const TECH_FACTS = {
  title: "Tech Talk Weekly",
  author: "Ada & Grace",
  description: "Every week, two engineers talk about the tools they use. Join us & learn.",
  imageUrl: "https://cdn.example.com/tech/cover.jpg",
  siteUrl: "https://tech.example.com/",
  language: "en-us",
  podcastGuid: TECH_GUID,
};

/** A podcast feed as hosts write them: iTunes and Podcasting 2.0 namespaces, CDATA, HTML in the description. */
/** The tech podcast's feed; `guid` other than TECH_GUID makes it another podcast (§18: one guid, one podcast). */
export const techFeed = (title = "Tech Talk Weekly", guid = TECH_GUID) => `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="${ITUNES}" xmlns:podcast="${PODCAST}" xmlns:atom="http://www.w3.org/2005/Atom"
  xmlns:content="http://purl.org/rss/1.0/modules/content/">
  <channel>
    <atom:link href="https://feeds.example.com/tech.rss" rel="self" type="application/rss+xml"/>
    <title><![CDATA[${title}]]></title>
    <link>https://tech.example.com/</link>
    <language>en-us</language>
    <copyright>&#169; 2026 Tech Talk Media</copyright>
    <itunes:author>Ada &amp; Grace</itunes:author>
    <managingEditor>editor@tech.example.com (The Editor)</managingEditor>
    <description><![CDATA[<p>Every week, <b>two engineers</b> talk about the tools they use.</p>
      <p>Join us &amp; learn.</p>]]></description>
    <itunes:image href="https://cdn.example.com/tech/cover.jpg"/>
    <image><url>https://cdn.example.com/tech/small.jpg</url><title>Tech</title><link>https://tech.example.com/</link></image>
    <itunes:category text="Technology"><itunes:category text="Tech News"/></itunes:category>
    <itunes:explicit>false</itunes:explicit>
    <podcast:guid>${guid.toUpperCase()}</podcast:guid>
    <podcast:locked>no</podcast:locked>${item(3)}${item(2)}${item(1)}
  </channel>
</rss>`;

export const atomFeed = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:itunes="${ITUNES}">
  <title type="html">Atom &lt;em&gt;Audio&lt;/em&gt; Notes</title>
  <subtitle>Short notes, read aloud.</subtitle>
  <link rel="alternate" href="https://atom.example.org/"/>
  <link rel="self" href="https://atom.example.org/feed.atom"/>
  <author><name>Ann Atom</name></author>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <updated>2026-11-30T10:00:00Z</updated>
  <logo>https://atom.example.org/logo.png</logo>
  <entry>
    <title>First note</title><id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <updated>2026-11-30T10:00:00Z</updated>
    <link rel="enclosure" href="https://atom.example.org/1.mp3" type="audio/mpeg" length="1"/>
  </entry>
</feed>`;

/** Markup and control characters in every field, a `javascript:` link and image, bidi controls. */
export const hostileFeed = `<?xml version="1.0"?>
<rss version="2.0" xmlns:itunes="${ITUNES}" xmlns:podcast="${PODCAST}"><channel>
  <title><![CDATA[<script>alert("t")</script><img src=x onerror=alert(1)>Evil\u0007 \u202eTitle]]></title>
  <link>javascript:alert(document.cookie)</link>
  <itunes:author>&lt;b onclick="x()"&gt;Mallory&lt;/b&gt;\u0000\u009b</itunes:author>
  <description><![CDATA[<style>body{display:none}</style><iframe src="https://evil.example/"></iframe>Plain words]]></description>
  <itunes:image href="javascript:alert(2)"/>
  <image><url>data:image/png;base64,AAAA</url></image>
  <language><![CDATA[<x>en</x>]]></language>
  <podcast:guid>not-a-uuid</podcast:guid>
  <item><title>x</title></item>
</channel></rss>`;

export const DOCTYPE = `<?xml version="1.0"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="0.91"><channel><title>With a DOCTYPE</title></channel></rss>`;
export const ENTITIES = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<rss version="2.0"><channel><title>&lol2;</title></channel></rss>`;
export const HTML_PAGE = `<!doctype html><html><head><title>Welcome to nginx!</title></head><body><h1>It works</h1></body></html>`;
export const NOT_XML = "This is plain text, not a feed.";

/** What a feed of the feed server's `/named/<name>` answers (test/feed-server.ts), as a test defines it. */
export interface NamedFeed {
  title?: string;
  /** `<podcast:guid>`. */
  guid?: string;
  /** `<itunes:new-feed-url>`. */
  newFeedUrl?: string;
  /** Characters of channel description: a head this long. */
  padding?: number;
  /** Answered instead of a feed: a redirect to `location` (301 when no status is given), or an error. */
  status?: number;
  location?: string;
  /** An item with an `<enclosure>` for each (apps such as gPodder keep only items with one); else one item without. */
  enclosures?: string[];
}

/** A small podcast feed that may say where it moved and which podcast it is. */
export const namedFeed = ({
  title = "A named feed",
  guid,
  newFeedUrl,
  padding = 0,
  enclosures,
}: NamedFeed) => `<?xml version="1.0"?>
<rss version="2.0" xmlns:itunes="${ITUNES}" xmlns:podcast="${PODCAST}"><channel>
  <title>${title}</title>${guid ? `\n  <podcast:guid>${guid}</podcast:guid>` : ""}${
    newFeedUrl ? `\n  <itunes:new-feed-url>${newFeedUrl.replaceAll("&", "&amp;")}</itunes:new-feed-url>` : ""
  }
  <description>${"Notes. ".repeat(Math.ceil(padding / 7))}</description>
  ${
    enclosures?.length
      ? enclosures
          .map(
            (url, n) =>
              `<item><title>Episode ${n + 1}</title><guid>episode-${n + 1}</guid>` +
              `<enclosure url="${url.replaceAll("&", "&amp;")}" length="1000" type="audio/mpeg"/></item>`,
          )
          .join("\n  ")
      : "<item><title>One</title><guid>one</guid></item>"
  }
</channel></rss>`;
