import { SaxesParser, type SaxesTagNS } from "saxes";
import type { PodcastFacts } from "../db/feeds";
import { cleanPodcastGuid, cleanText, cleanUrl, RAW_TEXT_LIMIT } from "./text";

/**
 * The facts of a feed's channel (docs/API.md §18), read from its head by saxes, the streaming XML parser the OPML
 * import uses: strict XML 1.0 tokens, no DTD processing, never an entity expanded or fetched. Not a feed parser:
 * a parser that builds the whole document (feedsmith, on fast-xml-parser) cost 50 times as much CPU on a head of
 * many small elements (553 ms for 1 MiB in workerd against about 25 ms here), the shape a hostile feed can take, and
 * every channel fact is a direct child of the channel (or of its image or author), so what is read here is a
 * table of element names, below (docs/decisions.md, "Feeds").
 */
export type ChannelFacts = PodcastFacts;

/** A body that is not a feed the service reads; `message` is kept as the feed's last error. */
export class NotAFeedError extends Error {}

const MAX_TITLE = 500;
const MAX_AUTHOR = 500;
const MAX_DESCRIPTION = 1000;
/** A language tag (BCP 47) is short; anything longer is not one. */
const MAX_LANGUAGE = 35;

/** An HTML page (a host's error or parking page, a website's home): said so, for the operator reading the error. */
const HTML_PAGE = /^\s*(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html)[\s>]/i;
/** XML that declares a DOCTYPE or an entity: never a feed here, and never expanded (no entity can grow it). */
const DOCTYPE_OR_ENTITY = /<!(DOCTYPE|ENTITY)/i;
/** Where an RSS channel's first item or an Atom feed's first entry starts: the head ends there. */
export const FIRST_ITEM = /<(item|entry|[A-Za-z][\w.-]*:(item|entry))[\s>/]/;

const ATOM = "http://www.w3.org/2005/Atom";
const ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd";
const PODCAST = [
  "https://podcastindex.org/namespace/1.0",
  "https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md",
];
const RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const RSS1 = "http://purl.org/rss/1.0/";
/** Feeds that use these prefixes without declaring them are common: the prefix then names the namespace. */
const USUAL_PREFIXES: Record<string, string> = { itunes: ITUNES, podcast: PODCAST[0], atom: ATOM };

type Field = keyof Omit<ChannelFacts, "newFeedUrl"> | "newFeedUrl" | "summary" | "managingEditor";
/** Where a fact is: a path of `namespace|name` below the channel, the text or an attribute, in order of preference. */
interface Source {
  field: Field;
  path: string;
  attribute?: string;
  /** Atom's `link`: only the one to the site (rel absent or `alternate`). */
  when?: (tag: SaxesTagNS) => boolean;
}

const RSS_SOURCES: Source[] = [
  { field: "title", path: "|title" },
  { field: "siteUrl", path: "|link" },
  { field: "description", path: "|description" },
  { field: "language", path: "|language" },
  { field: "managingEditor", path: "|managingEditor" },
  { field: "imageUrl", path: `${ITUNES}|image`, attribute: "href" },
  { field: "imageUrl", path: "|image/|url" },
];
const RSS1_SOURCES: Source[] = RSS_SOURCES.map((source) => ({
  ...source,
  path: source.path.replaceAll(/(^|\/)\|/g, `$1${RSS1}|`),
}));
const ATOM_SOURCES: Source[] = [
  { field: "title", path: `${ATOM}|title` },
  { field: "description", path: `${ATOM}|subtitle` },
  { field: "author", path: `${ATOM}|author/${ATOM}|name` },
  {
    field: "siteUrl",
    path: `${ATOM}|link`,
    attribute: "href",
    when: (tag) => [undefined, "alternate"].includes(tag.attributes.rel?.value),
  },
  { field: "imageUrl", path: `${ATOM}|logo` },
  { field: "imageUrl", path: `${ATOM}|icon` },
];
/** The iTunes and Podcasting 2.0 elements, in either kind of feed. */
const NAMESPACED: Source[] = [
  { field: "author", path: `${ITUNES}|author` },
  { field: "summary", path: `${ITUNES}|summary` },
  { field: "newFeedUrl", path: `${ITUNES}|new-feed-url` },
  ...PODCAST.map((uri) => ({ field: "podcastGuid" as const, path: `${uri}|guid` })),
];

interface Format {
  /** The channel element's path from the root. */
  channel: string[];
  depth: number;
  sources: Source[];
  /** The sources' indexes by their path below the channel. */
  byPath: Map<string, number[]>;
}

function format(channel: string[], sources: Source[]): Format {
  const byPath = new Map<string, number[]>();
  for (const [index, source] of sources.entries()) byPath.set(source.path, [...(byPath.get(source.path) ?? []), index]);
  return { channel, depth: channel.length, sources, byPath };
}

/** Where the facts are, by the root element. */
const FORMATS: Record<string, Format> = {
  "|rss": format(["|rss", "|channel"], [...NAMESPACED, ...RSS_SOURCES]),
  [`${RDF}|RDF`]: format([`${RDF}|RDF`, `${RSS1}|channel`], [...NAMESPACED, ...RSS1_SOURCES]),
  [`${ATOM}|feed`]: format([`${ATOM}|feed`], [...NAMESPACED, ...ATOM_SOURCES]),
};

const nameOf = (tag: SaxesTagNS) => `${tag.uri || USUAL_PREFIXES[tag.prefix] || ""}|${tag.local}`;

/** The raw text of each field, first occurrence first, from the head's elements. */
function readRawFields(head: string): Map<string, string[]> {
  const parser = new SaxesParser({ xmlns: true, position: false });
  const found = new Map<string, string[]>();
  const path: string[] = [];
  let format: Format | undefined;
  /** The source whose text is being read, and its text so far. */
  let reading: { key: string; depth: number; text: string } | undefined;
  // saxes reports a well-formedness error and goes on: what was read before and after it counts, as a browser's
  // feed reader would; a document whose root is not a feed is refused below.
  parser.on("error", () => {});
  parser.on("opentag", (tag) => {
    path.push(nameOf(tag));
    if (path.length === 1) format = FORMATS[path[0]];
    // Every fact is at most two levels below the channel: deeper elements (and all of an item) cost a push.
    if (!format || reading || path.length <= format.depth || path.length > format.depth + 2) return;
    if (path[format.depth - 1] !== format.channel[format.depth - 1] || path[0] !== format.channel[0]) return;
    const below =
      path.length === format.depth + 1 ? path[format.depth] : `${path[format.depth]}/${path[format.depth + 1]}`;
    for (const index of format.byPath.get(below) ?? []) {
      const source = format.sources[index];
      if (source.when && !source.when(tag)) continue;
      const key = `${source.field}#${index}`;
      if (found.has(key)) continue;
      if (source.attribute) found.set(key, [tag.attributes[source.attribute]?.value ?? ""]);
      else reading = { key, depth: path.length, text: "" };
    }
  });
  const addText = (text: string) => {
    if (reading && reading.text.length < RAW_TEXT_LIMIT) reading.text += text;
  };
  parser.on("text", addText);
  parser.on("cdata", addText);
  parser.on("closetag", () => {
    if (reading && reading.depth === path.length) {
      found.set(reading.key, [reading.text]);
      reading = undefined;
    }
    path.pop();
  });
  // Closing reports the head's open elements as errors (ignored) and hands over the text that ends it: a field the
  // cut went through keeps what was read of it.
  parser.write(head).close();
  if (!format) throw new NotAFeedError("not a feed: neither RSS nor Atom");
  if (reading) found.set(reading.key, [reading.text]);
  return found;
}

const CDATA_OPEN = "<![CDATA[";
const CDATA_CLOSE = "]]>";

/**
 * The head with every CDATA section cut to RAW_TEXT_LIMIT characters (what is kept of a field's text), found by
 * plain string search: show notes in CDATA are most of a real head's bytes, and saxes reads them character by
 * character (half the parse of a 64 KiB head in the bench) only for the cleaning to drop all but their start.
 */
export function withShortCdata(head: string): string {
  let at = head.indexOf(CDATA_OPEN);
  if (at < 0) return head;
  const parts: string[] = [];
  let copied = 0;
  while (at >= 0) {
    const start = at + CDATA_OPEN.length;
    const end = head.indexOf(CDATA_CLOSE, start);
    if (end < 0) break;
    if (end - start > RAW_TEXT_LIMIT) {
      parts.push(head.slice(copied, start + RAW_TEXT_LIMIT));
      copied = end;
    }
    at = head.indexOf(CDATA_OPEN, end + CDATA_CLOSE.length);
  }
  if (copied === 0) return head;
  parts.push(head.slice(copied));
  return parts.join("");
}

/**
 * The facts of a channel's head (the document up to its first item or entry, or its first 64 KiB). Throws
 * NotAFeedError for a DOCTYPE, an entity declaration, or a document whose root is not RSS, RSS 1.0 or Atom.
 */
export function parseChannelHead(head: string): ChannelFacts {
  if (HTML_PAGE.test(head)) throw new NotAFeedError("not a feed: an HTML page");
  if (DOCTYPE_OR_ENTITY.test(head)) throw new NotAFeedError("not a feed: XML with a DOCTYPE or an entity declaration");
  const raw = readRawFields(withShortCdata(head));
  /** The first of the field's sources that the head had, in the table's order. */
  const first = (field: Field) =>
    [...raw.entries()]
      .filter(([key]) => key.startsWith(`${field}#`))
      .sort(([a], [b]) => Number(a.split("#")[1]) - Number(b.split("#")[1]))
      .map(([, [value]]) => value);
  const text = (max: number, ...fields: Field[]) =>
    fields.flatMap(first).reduce<string | undefined>((kept, value) => kept ?? cleanText(value, max), undefined) ?? null;
  const url = (...fields: Field[]) =>
    fields.flatMap(first).reduce<string | undefined>((kept, value) => kept ?? cleanUrl(value), undefined) ?? null;
  return {
    title: text(MAX_TITLE, "title"),
    author: text(MAX_AUTHOR, "author", "managingEditor"),
    description: text(MAX_DESCRIPTION, "description", "summary"),
    imageUrl: url("imageUrl"),
    siteUrl: url("siteUrl"),
    language: text(MAX_LANGUAGE, "language"),
    podcastGuid: first("podcastGuid").reduce<string | null>(
      (kept, value) => kept ?? cleanPodcastGuid(value) ?? null,
      null,
    ),
    newFeedUrl: url("newFeedUrl"),
  };
}
