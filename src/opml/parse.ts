import { SaxesParser } from "saxes";
import { ApiError } from "../jsonapi";
import { MAX_OPML_FEEDS } from "../limits";
import { decodeUtf8 } from "../request-body";
import { isUtf8Label } from "./media-types";

/**
 * Reads the feeds of an OPML document: every `outline` element with an `xmlUrl` attribute, at any
 * depth, in document order. Values are as in the file (XML-unescaped, nothing else).
 *
 * Parsing is streaming and strict (saxes: XML 1.0 well-formedness, no DTD processing), and stops at
 * the first refusal: a DOCTYPE is refused as soon as the parser reaches its end, before any entity
 * it declares could be used, so a "billion laughs" or an external entity costs what its bytes cost
 * to read and nothing more. saxes never expands an entity the document declares and never fetches.
 */

export interface OpmlOutline {
  xmlUrl: string;
  /** The outline's `guid` attribute, when it has one (not yet checked to be a UUID). */
  guid?: string;
}

export function invalidOpml(detail: string): ApiError {
  return new ApiError({ status: 400, title: "Invalid OPML", detail });
}

function doctypeRefused(): ApiError {
  return new ApiError({
    status: 400,
    title: "DOCTYPE not allowed",
    detail: "The document has a DOCTYPE. DOCTYPEs and entity declarations are refused, never expanded; remove it.",
  });
}

function unsupportedEncoding(encoding: string): ApiError {
  return new ApiError({
    status: 400,
    title: "Unsupported encoding",
    detail: `The XML declaration names the encoding "${encoding}"; send the document in UTF-8.`,
  });
}

function tooManyFeeds(): ApiError {
  return new ApiError({
    status: 413,
    title: "Too many feeds",
    detail: `An OPML import may hold at most ${MAX_OPML_FEEDS} outlines with an xmlUrl; split the file.`,
    meta: { maxFeeds: MAX_OPML_FEEDS },
  });
}

/** The feeds of an OPML document, or the ApiError that refuses it (400, or 413 past MAX_OPML_FEEDS). */
export function parseOpml(body: BufferSource): OpmlOutline[] {
  const text = decodeUtf8(body);
  const outlines: OpmlOutline[] = [];
  let root: string | undefined;
  const parser = new SaxesParser();

  parser.on("xmldecl", ({ encoding }) => {
    if (encoding !== undefined && !isUtf8Label(encoding)) throw unsupportedEncoding(encoding);
  });
  parser.on("doctype", () => {
    throw doctypeRefused();
  });
  parser.on("opentag", (tag) => {
    if (root === undefined) {
      root = tag.name;
      if (root !== "opml") throw invalidOpml(`The root element is <${root}>, not <opml>.`);
      return;
    }
    if (tag.name !== "outline") return;
    const { xmlUrl, guid } = tag.attributes;
    if (xmlUrl === undefined) return;
    if (outlines.length === MAX_OPML_FEEDS) throw tooManyFeeds();
    outlines.push(guid === undefined ? { xmlUrl } : { xmlUrl, guid });
  });

  try {
    parser.write(text).close();
  } catch (error) {
    if (error instanceof ApiError) throw error;
    // saxes reports the first well-formedness error as `line:column: message`.
    throw invalidOpml(`The document is not well-formed XML (${error instanceof Error ? error.message : error}).`);
  }
  return outlines;
}
