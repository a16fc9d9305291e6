import { SaxesParser } from "saxes";
import { ApiError } from "../jsonapi";
import { MAX_OPML_FEEDS } from "../limits";
import { decodeUtf8 } from "../request-body";
import { isUtf8Label } from "./media-types";

/**
 * Reads the feeds of an OPML document: every `outline` element with an `xmlUrl` attribute, or a `url`
 * attribute (older exporters) when it has no `xmlUrl`, at any depth, in document order. Values are as in
 * the file (XML-unescaped, nothing else).
 *
 * Parsing is streaming and strict (saxes: XML 1.0 well-formedness, no DTD processing), and stops at
 * the first refusal: a DOCTYPE is refused as soon as the parser reaches its end, before any entity
 * it declares could be used, so a "billion laughs" or an external entity costs what its bytes cost
 * to read and nothing more. saxes never expands an entity the document declares and never fetches.
 */

export interface OpmlOutline {
  /** The feed URL attribute as in the file: `xmlUrl`, else `url`. */
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

/** `found` says where the encoding was read ("The XML declaration names", "The byte-order mark says"). */
function unsupportedEncoding(found: string, encoding: string): ApiError {
  return new ApiError({
    status: 400,
    title: "Unsupported encoding",
    detail: `${found} the encoding "${encoding}", and only UTF-8 is taken: convert the file from ${encoding} to UTF-8 (e.g. \`iconv -f ${encoding} -t UTF-8\`) and import it again.`,
  });
}

/** The encoding name of an XML declaration: a letter, then letters, digits, `.`, `_`, `-` (XML 1.0 EncName). */
const XML_DECLARATION_ENCODING = /^<\?xml\s[^>]*?\bencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']/;

/**
 * Refuses a document in another encoding than UTF-8 before decoding it, so that the answer names the
 * encoding to convert from instead of "not valid UTF-8". The declaration is at the very start (after a
 * UTF-8 byte-order mark, if any) and in ASCII, so its bytes are read as characters directly.
 */
function refuseOtherEncodings(bytes: Uint8Array): void {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    throw unsupportedEncoding("The byte-order mark says", "UTF-16");
  }
  if (bytes[0] === 0x3c && bytes[1] === 0x00) throw unsupportedEncoding("The first bytes say", "UTF-16LE");
  if (bytes[0] === 0x00 && bytes[1] === 0x3c) throw unsupportedEncoding("The first bytes say", "UTF-16BE");
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const head = String.fromCharCode(...bytes.subarray(start, start + 256));
  const encoding = XML_DECLARATION_ENCODING.exec(head)?.[1];
  if (encoding !== undefined && !isUtf8Label(encoding)) {
    throw unsupportedEncoding("The XML declaration names", encoding);
  }
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
  refuseOtherEncodings(
    ArrayBuffer.isView(body) ? new Uint8Array(body.buffer, body.byteOffset, body.byteLength) : new Uint8Array(body),
  );
  const text = decodeUtf8(body);
  const outlines: OpmlOutline[] = [];
  let root: string | undefined;
  const parser = new SaxesParser();

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
    const { guid } = tag.attributes;
    const xmlUrl = tag.attributes.xmlUrl ?? tag.attributes.url;
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
