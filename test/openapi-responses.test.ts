import fc from "fast-check";
import { describe, expect, it } from "vitest";
import document from "../public/openapi.json";
import { FEED_URL_PATTERN, subscriptionResourceSchema } from "../src/resources/subscription";
import { as, ORIGIN, subscriptionDocument } from "./helpers";
import { type AppRoute, checkExchange, type Exchange } from "./openapi-check";
import { propertyOptions } from "./property-options";

/**
 * The response check itself (./openapi-check.ts; ./recorded-responses.ts runs it on every response of
 * every test file): what it refuses, and the feedUrl values the old document's `format: uri` refused.
 */

type Json = Record<string, unknown>;

const routes: AppRoute[] = [
  { method: "ALL", path: "/v1/*" },
  { method: "POST", path: "/v1/subscriptions" },
  { method: "GET", path: "/v1/episodes/:id" },
];

async function exchangeOf(method: string, response: Response): Promise<Exchange> {
  return {
    method,
    url: `${ORIGIN}/v1/subscriptions`,
    status: response.status,
    headers: response.headers,
    body: await response.clone().text(),
  };
}

/** URLs the server accepts (the URL standard parses them) that are not RFC 3986 URIs. */
const NOT_RFC3986 = [
  "https://feeds.example.com/a|b.xml",
  "https://feeds.example.com/{id}.xml",
  "https://feeds.example.com/%zz.xml",
  "https://feeds.example.com\\podcast\\feed.xml",
  "https://feeds.example.com/épisodes/flux.xml",
  "https://пример.example/подкаст",
];

describe("the OpenAPI response check", () => {
  it("passes a created subscription whose feedUrl is no RFC 3986 URI, which format: uri refused", async () => {
    const user = await as(`openapi-check-${crypto.randomUUID()}`);
    const uriFormat = structuredClone(document) as Json;
    const schemas = (uriFormat.components as { schemas: Record<string, Json> }).schemas;
    for (const name of ["Subscription", "BulkSubscription", "ActiveChange", "TombstoneChange"]) {
      const attributes = (schemas[name].properties as Record<string, Json>).attributes;
      const feedUrl = (attributes.properties as Record<string, Json>).feedUrl;
      (attributes.properties as Record<string, Json>).feedUrl = { ...feedUrl, pattern: undefined, format: "uri" };
    }
    for (const feedUrl of NOT_RFC3986) {
      const response = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl));
      expect(response.status, feedUrl).toBe(201);
      const exchange = await exchangeOf("POST", response);
      expect(checkExchange(document, routes, exchange)).toBeUndefined();
      // The check reads formats: under the old description the same response fails, naming the member.
      expect(checkExchange(uriFormat, routes, exchange)).toMatch(/feedUrl: String does not match format "uri"/);
    }
  });

  it("every feedUrl the server accepts matches the documented pattern (5 000 seeded cases)", () => {
    const pattern = new RegExp(FEED_URL_PATTERN, "u");
    const candidate = fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc
        .tuple(
          fc.constantFrom("http://", "HTTPS://", "https:", "hTtP:\\\\"),
          fc.string({ unit: "grapheme", maxLength: 30 }),
        )
        .map(([scheme, rest]) => `${scheme}a.example/${rest}`),
      fc.string({ unit: "binary", maxLength: 40 }).map((rest) => `https://a.example/${rest}`),
      fc.constantFrom(...NOT_RFC3986),
    );
    let accepted = 0;
    fc.assert(
      fc.property(candidate, (feedUrl) => {
        const parsed = subscriptionResourceSchema.safeParse({
          type: "subscription",
          id: crypto.randomUUID(),
          attributes: { feedUrl },
        });
        if (!parsed.success) return;
        accepted++;
        expect(pattern.test(feedUrl), feedUrl).toBe(true);
      }),
      propertyOptions(20261124, 5000),
    );
    expect(accepted).toBeGreaterThan(2000);
  });

  it("names an undocumented operation and says what to add where", () => {
    // A route the app would serve that the document does not describe (a resource added without its file).
    const withPlaylists = [...routes, { method: "GET", path: "/v1/playlists/:id" }];
    const problem = checkExchange(document, withPlaylists, {
      method: "GET",
      url: `${ORIGIN}/v1/playlists/${crypto.randomUUID()}`,
      status: 200,
      headers: new Headers({ "Content-Type": "application/vnd.api+json" }),
      body: "{}",
    });
    expect(problem).toMatch(/^GET \/v1\/playlists\/[0-9a-f-]+: undocumented operation \(it answered 200\)/);
    expect(problem).toContain("src/routes/playlists.openapi.ts");
    expect(problem).toContain("npm run openapi");
  });

  it("names an undocumented status, media type, body or header", async () => {
    const base = {
      method: "POST",
      url: `${ORIGIN}/v1/subscriptions`,
      headers: new Headers({ "Content-Type": "application/vnd.api+json" }),
    };
    expect(checkExchange(document, routes, { ...base, status: 418, body: "{}" })).toMatch(
      /^POST \/v1\/subscriptions \(operationId subscribe\): status 418 is not documented/,
    );
    expect(
      checkExchange(document, routes, {
        ...base,
        headers: new Headers({ "Content-Type": "text/plain" }),
        status: 201,
        body: "x",
      }),
    ).toMatch(/media type text\/plain is not documented/);
    expect(checkExchange(document, routes, { ...base, status: 201, body: '{"data":{}}' })).toMatch(
      /the body does not match the documented schema/,
    );
    // A real 201, with its bookmark replaced by one of another shape.
    const user = await as(`openapi-check-header-${crypto.randomUUID()}`);
    const created = await exchangeOf(
      "POST",
      await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://h.example/feed")),
    );
    expect(checkExchange(document, routes, created)).toBeUndefined();
    created.headers = new Headers(created.headers);
    created.headers.set("X-D1-Bookmark", "garbage");
    expect(checkExchange(document, routes, created)).toMatch(
      /header X-D1-Bookmark does not match its documented schema/,
    );
  });

  it("takes the app's own 404 for an unknown path and 405 for another method, as JSON:API errors", async () => {
    const user = await as(`openapi-check-404-${crypto.randomUUID()}`);
    for (const [method, response] of [
      ["GET", await user.get("/v1/nothing-here")],
      ["PUT", await user.patch("/v1/operations", {})],
    ] as const) {
      const exchange = { ...(await exchangeOf(method, response)), url: response.url || `${ORIGIN}/v1/nothing-here` };
      expect([404, 405]).toContain(exchange.status);
      expect(checkExchange(document, routes, exchange)).toBeUndefined();
      expect(checkExchange(document, routes, { ...exchange, body: '{"errors":"none"}' })).toMatch(/does not match/);
    }
  });
});
