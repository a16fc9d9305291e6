/**
 * The characters that stored URL text never holds (docs/API.md §15): `feedUrl`, and the episode state's
 * `mediaUrl` and `itemGuid`, the URLs the gpodder API writes, device captions, and a Login Flow's app name.
 * One rule, here, for all of them.
 *
 * Refused: every code point of the Unicode general categories
 * - Cc (C0, DEL, C1 controls): the URL parser strips or rewrites them, and XML 1.0 cannot carry most;
 * - Cf (format characters: bidi controls U+200E/U+200F/U+202A-U+202E/U+2066-U+2069/U+061C, zero-width
 *   U+200B/U+2060, the BOM U+FEFF, tag characters U+E0001-U+E007F): invisible, so two URLs that look
 *   the same differ, and a URL can display as something else (`/\u202egpj.exe` as `exe.jpg`);
 * - Co (private use): no meaning outside one vendor's font;
 * - Cs (a lone surrogate): cannot be stored as UTF-8 unchanged, and the text is stored exactly as sent;
 * - Zl, Zp (U+2028, U+2029): line breaks that break line-based formats and logs;
 * and every noncharacter (U+FDD0-U+FDEF and the last two code points of every plane, U+xFFFE/U+xFFFF),
 * which are not for interchange and which XML 1.0 partly cannot carry (the OPML export could not write them).
 *
 * With the `u` flag a surrogate pair is one code point (never Cs); only a lone surrogate matches `\p{Cs}`.
 */
const FORBIDDEN_URL_TEXT_CLASS = String.raw`\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}`;

const FORBIDDEN_URL_TEXT = new RegExp(`[${FORBIDDEN_URL_TEXT_CLASS}]`, "u");

const EVERY_FORBIDDEN_URL_TEXT = new RegExp(`[${FORBIDDEN_URL_TEXT_CLASS}]`, "gu");

/**
 * `value` with every refused character removed: for text the service keeps from a client that cannot be
 * asked to send it again (a Login Flow's app name, its `User-Agent`: docs/API.md §17; a feed's text: §18), where refusing the
 * whole request would help nobody.
 */
export function withoutForbiddenCharacters(value: string): string {
  return value.replace(EVERY_FORBIDDEN_URL_TEXT, "");
}

/** True when `value` holds a character that stored URL text refuses (see FORBIDDEN_URL_TEXT_CLASS). */
export function hasForbiddenUrlCharacter(value: string): boolean {
  return FORBIDDEN_URL_TEXT.test(value);
}

/**
 * The whitespace trimmed around a URL that arrives in a file or a list (OPML import, gpodder): ASCII
 * space, tab, CR and LF only. Anything else around a URL (U+00A0, U+3000, U+FEFF) is kept, and then
 * refused by the rules above or by the URL check, rather than silently dropped.
 */
const SURROUNDING_URL_WHITESPACE = /^[ \t\r\n]+|[ \t\r\n]+$/g;

/** `value` without surrounding ASCII space, tab, CR and LF (docs/API.md §15). */
export function trimUrlWhitespace(value: string): string {
  return value.replace(SURROUNDING_URL_WHITESPACE, "");
}
