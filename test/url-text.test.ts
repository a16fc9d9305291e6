import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSubscriptionResource } from "../src/resources/subscription";
import { hasForbiddenUrlCharacter, trimUrlWhitespace } from "../src/url-text";
import { as, ORIGIN, send, subscriptionDocument, tokenFor } from "./helpers";
import { propertyOptions } from "./property-options";

// docs/API.md §15: the characters stored URL text (feedUrl, mediaUrl, itemGuid) never holds.

const EXPLICIT_CASES: [string, string][] = [
  ["U+061C arabic letter mark (Cf)", "\u061c"],
  ["U+200B zero width space (Cf)", "\u200b"],
  ["U+2060 word joiner (Cf)", "\u2060"],
  ["U+FEFF byte order mark (Cf)", "\ufeff"],
  ["U+00AD soft hyphen (Cf)", "\u00ad"],
  ["U+202E right-to-left override (Cf)", "\u202e"],
  ["U+E0001 language tag (Cf)", "\u{e0001}"],
  ["U+E007F cancel tag (Cf)", "\u{e007f}"],
  ["U+E000 private use (Co)", "\ue000"],
  ["U+F0000 supplementary private use (Co)", "\u{f0000}"],
  ["U+FDD0 noncharacter", "\ufdd0"],
  ["U+FDEF noncharacter", "\ufdef"],
  ["U+FFFE noncharacter", "\ufffe"],
  ["U+FFFF noncharacter", "\uffff"],
  ["U+1FFFE noncharacter", "\u{1fffe}"],
  ["U+10FFFF noncharacter", "\u{10ffff}"],
  ["lone high surrogate (Cs)", "\ud800"],
  ["lone low surrogate (Cs)", "\udc00"],
  ["reversed surrogate pair (Cs)", "\udc00\ud800"],
  ["U+2028 line separator (Zl)", "\u2028"],
  ["U+2029 paragraph separator (Zp)", "\u2029"],
  ["U+0000 (Cc)", "\u0000"],
  ["U+007F (Cc)", "\u007f"],
  ["U+0085 (Cc)", "\u0085"],
];

/** Allowed characters near the forbidden ones, which must stay allowed. */
const ALLOWED_NEIGHBOURS: [string, string][] = [
  ["U+FDCF (before the noncharacter block)", "\ufdcf"],
  ["U+FDF0 (after it)", "\ufdf0"],
  ["U+FFFD replacement character", "\ufffd"],
  ["U+1FFFD", "\u{1fffd}"],
  ["U+E0080 (after the tags, unassigned)", "\u{e0080}"],
  ["U+DFFF's neighbour U+E000-1 = U+D7FF", "\ud7ff"],
  ["a surrogate pair (emoji)", "\u{1f600}"],
  ["e acute", "\u00e9"],
  ["katakana", "\u30d5"],
];

const GUID = "0e6f1c2a-1111-4222-8333-944445555661";
const accepts = (feedUrl: string) =>
  parseSubscriptionResource({ type: "subscription", id: GUID, attributes: { feedUrl } }, "/data").ok;

/** The rule written out code point by code point from the Unicode categories, as the oracle of the property test. */
function forbiddenByDefinition(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        const codePoint = value.codePointAt(i) as number;
        if ((codePoint & 0xfffe) === 0xfffe) return true; // U+xFFFE, U+xFFFF
        if (codePoint >= 0xe0001 && codePoint <= 0xe007f && (codePoint === 0xe0001 || codePoint >= 0xe0020)) {
          return true; // tag characters (Cf)
        }
        if (codePoint >= 0xf0000) return true; // planes 15 and 16: private use (Co)
        if (/\p{Cf}/u.test(String.fromCodePoint(codePoint))) return true;
        i++;
        continue;
      }
      return true; // lone high surrogate
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return true; // lone low surrogate
    if (unit <= 0x1f || (unit >= 0x7f && unit <= 0x9f)) return true; // Cc
    if (unit >= 0xe000 && unit <= 0xf8ff) return true; // Co
    if (unit >= 0xfdd0 && unit <= 0xfdef) return true;
    if (unit === 0xfffe || unit === 0xffff) return true;
    if (unit === 0x2028 || unit === 0x2029) return true; // Zl, Zp
    if (/\p{Cf}/u.test(String.fromCharCode(unit))) return true;
  }
  return false;
}

describe("hasForbiddenUrlCharacter (the one rule for stored URL text)", () => {
  it.each(EXPLICIT_CASES)("refuses %s, alone and inside a URL", (_name, character) => {
    expect(hasForbiddenUrlCharacter(character)).toBe(true);
    expect(hasForbiddenUrlCharacter(`https://a.example/x${character}y`)).toBe(true);
    expect(accepts(`https://a.example/x${character}y`)).toBe(false);
  });

  it.each(ALLOWED_NEIGHBOURS)("keeps %s", (_name, character) => {
    expect(hasForbiddenUrlCharacter(character)).toBe(false);
    expect(accepts(`https://a.example/x${character}y`)).toBe(true);
  });

  it("agrees with the categories written out code point by code point (20 000 seeded strings)", () => {
    const text = fc.oneof(
      fc.string({ unit: "binary", maxLength: 12 }),
      fc.string({ unit: "grapheme", maxLength: 12 }),
      fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 6 }).map((units) => String.fromCharCode(...units)),
      fc.constantFrom(...EXPLICIT_CASES.map(([, c]) => c), ...ALLOWED_NEIGHBOURS.map(([, c]) => c)),
    );
    fc.assert(
      fc.property(text, (value) => {
        expect(hasForbiddenUrlCharacter(value)).toBe(forbiddenByDefinition(value));
        // The feedUrl check refuses every such URL, whatever else it holds.
        if (forbiddenByDefinition(value)) expect(accepts(`https://a.example/${value}`)).toBe(false);
      }),
      propertyOptions(20261215, 20_000),
    );
  });

  it("every code point of the Basic Multilingual Plane: the rule and the oracle agree", () => {
    for (let unit = 0; unit <= 0xffff; unit++) {
      const value = String.fromCharCode(unit);
      expect(hasForbiddenUrlCharacter(value), unit.toString(16)).toBe(forbiddenByDefinition(value));
    }
  });
});

describe("trimUrlWhitespace", () => {
  it("trims ASCII space, tab, CR and LF only", () => {
    expect(trimUrlWhitespace(" \t\r\nhttps://a.example/f \n\t\r ")).toBe("https://a.example/f");
    for (const kept of ["\u00a0", "\u3000", "\ufeff", "\u000b", "\u000c", "\u2028", "\u200b"]) {
      expect(trimUrlWhitespace(`${kept}https://a.example/f${kept}`)).toBe(`${kept}https://a.example/f${kept}`);
    }
    expect(trimUrlWhitespace("https://a.example/a b")).toBe("https://a.example/a b");
  });
});

describe("feedUrl with a forbidden character over the API", () => {
  it("answers 422 at /data/attributes/feedUrl for POST, and writes nothing", async () => {
    const user = await as(`chars-${crypto.randomUUID()}`);
    for (const [name, character] of EXPLICIT_CASES) {
      const guid = crypto.randomUUID();
      const response = await user.post(
        "/v1/subscriptions",
        subscriptionDocument(guid, `https://a.example/${character}`),
      );
      expect(response.status, name).toBe(422);
      const body = (await response.json()) as { errors: { source: { pointer: string } }[] };
      expect(body.errors[0].source.pointer, name).toBe("/data/attributes/feedUrl");
    }
    const list = (await (await user.get("/v1/subscriptions")).json()) as { meta: { total: number } };
    expect(list.meta.total).toBe(0);
  });

  it("a lone surrogate sent as a JSON escape is refused, not stored with a replacement character", async () => {
    const userId = `chars-surrogate-${crypto.randomUUID()}`;
    const body = `{"data":{"type":"subscription","id":"${crypto.randomUUID()}","attributes":{"feedUrl":"https://a.example/\\ud800"}}}`;
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${await tokenFor(userId)}`, "Content-Type": "application/vnd.api+json" },
        body,
      }),
    );
    expect(response.status).toBe(422);
  });

  it("OPML import skips such outlines with the reason, and imports the rest", async () => {
    const userId = `chars-opml-${crypto.randomUUID()}`;
    // As XML character references: the parser decodes them into the attribute value.
    const refused = ["&#x200B;", "&#x2060;", "&#xFEFF;", "&#x61C;", "&#xE0001;", "&#xE000;", "&#xFDD0;", "&#x2028;"];
    const outlines = [
      ...refused.map((reference, i) => `<outline xmlUrl="https://chars.example/${i}${reference}"/>`),
      '<outline xmlUrl="https://chars.example/fine"/>',
    ].join("");
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions.opml`, {
        method: "POST",
        headers: { Authorization: `Bearer ${await tokenFor(userId)}`, "Content-Type": "text/x-opml" },
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head/><body>${outlines}</body></opml>`,
      }),
    );
    expect(response.status).toBe(200);
    const { meta } = (await response.json()) as {
      meta: { imported: number; skipped: { xmlUrl: string; reason: string }[] };
    };
    expect(meta.imported).toBe(1);
    expect(meta.skipped).toHaveLength(refused.length);
    for (const skipped of meta.skipped) expect(skipped.reason).toMatch(/format characters/);
    expect(meta.skipped[0].xmlUrl).toBe("https://chars.example/0\u200b");
  });
});
