import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSubscriptionResource, subscriptionResourceSchema } from "../src/resources/subscription";
import { propertyOptions } from "./property-options";

/** Resources near and far from valid: the validator's quick path must agree with the schema on all of them. */
const guid = fc.oneof(
  fc.uuid(),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.string({ maxLength: 40 }),
  fc.constant("0e6f1c2a-1111-4222-8333-94444555566g"),
);
const feedUrl = fc.oneof(
  fc.webUrl(),
  fc.constantFrom(
    "https://a.example/f",
    "ftp://a.example/f",
    "https://",
    "/relative",
    "https://a.example/\u202e",
    "https://a.example/ x",
  ),
  fc.string({ maxLength: 30 }).map((path) => `https://a.example/${path}`),
  fc.string({ minLength: 2040, maxLength: 2060 }).map((path) => `https://a.example/${path}`),
  fc.anything(),
);
const resource = fc.oneof(
  fc.record(
    {
      type: fc.oneof(fc.constant("subscription"), fc.constant("Subscription"), fc.anything()),
      id: fc.oneof(guid, fc.anything()),
      attributes: fc.oneof(fc.record({ feedUrl }, { requiredKeys: [] }), fc.array(fc.anything()), fc.anything()),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);

describe("subscription resource validation", () => {
  it("accepts exactly what the zod schema accepts, with the same value, and words refusals the same (5 000 seeded cases)", () => {
    fc.assert(
      fc.property(resource, (candidate) => {
        const ours = parseSubscriptionResource(candidate, "/data");
        const schema = subscriptionResourceSchema.safeParse(candidate);
        expect(ours.ok).toBe(schema.success);
        if (ours.ok && schema.success) {
          expect(ours.value).toEqual({ guid: schema.data.id, feedUrl: schema.data.attributes.feedUrl });
        }
      }),
      propertyOptions(20261123, 5000),
    );
  });
});

/** What the feedUrl check decided with a URL object before it used URL.canParse (the oracle of the test below). */
function httpUrlByObject(value: string): boolean {
  const url = URL.parse(value);
  return url !== null && (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/**
 * Strings near the edges of URL parsing: schemes in any case, missing or odd hosts, ports, userinfo,
 * backslashes. None holds whitespace or a control character and none is long (rules checked before the parse).
 */
const urlLike = fc
  .tuple(
    fc.constantFrom("http:", "https:", "HTTP:", "hTTpS:", "http", "https:/", "ftp:", "httpx:", "ws:", "", "h:"),
    fc.constantFrom("//", "/", "///", "\\\\", "", "//@", "//user:pw@", "//:80", "//[::1]", "//[::1", "//1.2.3.999"),
    fc.oneof(
      fc.constantFrom("a.example", "", ":8080", "a.example:99999", "xn--", "%zz", "a..b", "192.168.0.1", "0x7f.1"),
      fc.domain(),
      fc.string({ maxLength: 12 }),
    ),
    fc.oneof(fc.constantFrom("", "/", "/feed.xml", "?q=1", "#f", "/%", "/\u00e9"), fc.string({ maxLength: 12 })),
  )
  .map((parts) => parts.join(""))
  .filter((candidate) => !/\s/.test(candidate));

describe("feedUrl check", () => {
  it("accepts exactly the http(s) URLs with a host that a URL object accepts (10 000 seeded cases)", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(urlLike, fc.webUrl()), (feedUrl) => {
        const resource = { type: "subscription", id: "0e6f1c2a-1111-4222-8333-944445555661", attributes: { feedUrl } };
        const ours = parseSubscriptionResource(resource, "/data").ok;
        expect(ours).toBe(httpUrlByObject(feedUrl));
        if (ours) accepted++;
      }),
      propertyOptions(20261123, 10_000),
    );
    expect(accepted).toBeGreaterThan(2000);
  });
});
