import { decodeHTML } from "entities";
import { isValidFeedUrl } from "../resources/subscription";
import { withoutForbiddenCharacters } from "../url-text";

/**
 * What a feed's text becomes before it is kept (docs/API.md §18): a publisher's (or an attacker's) text, shown on
 * pages and in every API, so it is plain, bounded text whatever the feed held.
 */

/**
 * At most this much of a field's raw text is read (src/feeds/parse.ts), and at most `rawLimit(max)` of it is
 * cleaned: the bound on the work one field can cost (a 64 KiB title is cut first; the cleaning was a good part of
 * a long description's parse in the bench). Markup rarely takes more than a few times the text it wraps, so 8
 * characters of raw text per kept code point, plus 2 KiB, keep a real field whole.
 */
export const RAW_TEXT_LIMIT = 12 * 1024;
const rawLimit = (maxCodePoints: number) => Math.min(RAW_TEXT_LIMIT, maxCodePoints * 8 + 2048);

/** Elements whose content is not text a person reads. */
const NON_TEXT_ELEMENTS = /<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
/** A tag, a comment or a processing instruction: markup, removed (each leaves a space, as `<br>` would show). */
const MARKUP = /<[!?/]?[A-Za-z][^>]*>|<!--[\s\S]*?-->/g;
const WHITESPACE_RUN = /\s+/g;

/**
 * Text as kept: markup removed, character references decoded, runs of whitespace made one space, the refused code
 * points of §15 removed, the ends trimmed, then at most `maxCodePoints` code points. Not text at all: undefined.
 */
export function cleanText(raw: unknown, maxCodePoints: number): string | undefined {
  if (typeof raw !== "string") return undefined;
  const text = withoutForbiddenCharacters(
    decodeHTML(raw.slice(0, rawLimit(maxCodePoints)).replace(NON_TEXT_ELEMENTS, " ").replace(MARKUP, " ")).replace(
      WHITESPACE_RUN,
      " ",
    ),
  ).trim();
  if (text === "") return undefined;
  // A code point takes at most two UTF-16 units: a text of at most `maxCodePoints` units needs no counting.
  if (text.length <= maxCodePoints) return text;
  const codePoints = Array.from(text);
  return codePoints.length <= maxCodePoints ? text : codePoints.slice(0, maxCodePoints).join("").trimEnd();
}

/** A URL as kept: one that passes the feedUrl rules of §5 (so never `javascript:` or `data:`), else undefined. */
export function cleanUrl(raw: unknown): string | undefined {
  if (typeof raw !== "string") return undefined;
  const url = raw.trim();
  return isValidFeedUrl(url) ? url : undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `<podcast:guid>` when it is a UUID, lowercase. */
export function cleanPodcastGuid(raw: unknown): string | undefined {
  if (typeof raw !== "string") return undefined;
  const guid = raw.trim().toLowerCase();
  return UUID.test(guid) ? guid : undefined;
}
