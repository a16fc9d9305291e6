import { describe, expect, it } from "vitest";
import { BOOKMARK_SHAPE } from "../src/middleware/d1-session";
import { buildOpenApiDocument } from "../src/openapi/document";
import { FEED_URL_PATTERN } from "../src/resources/subscription";

/**
 * What the OpenAPI document said wrongly or only in prose (issue 22): each statement is checked where a
 * reader, or a generator, finds it.
 */

// biome-ignore lint/suspicious/noExplicitAny: the test walks an arbitrary JSON document.
type Json = Record<string, any>;
const document = buildOpenApiDocument() as Json;
const schemas = document.components.schemas as Json;

describe("the OpenAPI document says", () => {
  it("when a tombstone's user unsubscribed, not that they subscribed", () => {
    const attributes = schemas.TombstoneChange.properties.attributes.properties;
    expect(attributes.userUnsubscribedAt.description).toMatch(/^When the user unsubscribed/);
    expect(attributes.userSubscribedAt.description).toMatch(/^When the user subscribed/);
  });

  it("feedUrl is a pattern every accepted URL matches, never format: uri", () => {
    for (const name of [
      "Subscription",
      "BulkSubscription",
      "ActiveChange",
      "TombstoneChange",
      "SubscriptionResourceObject",
    ]) {
      const feedUrl = schemas[name].properties.attributes.properties.feedUrl;
      expect(feedUrl.pattern, name).toBe(FEED_URL_PATTERN);
      expect(feedUrl.format, name).toBeUndefined();
    }
  });

  it("X-D1-Bookmark's pattern, in the request parameter and the response header", () => {
    expect(document.components.parameters.bookmarkRequest.schema.pattern).toBe(BOOKMARK_SHAPE.source);
    expect(document.components.headers["X-D1-Bookmark"].schema.pattern).toBe(BOOKMARK_SHAPE.source);
  });

  it("that filter[since] and page[number] exclude each other, on both parameters and as a 400 example", () => {
    const { pageNumber, since } = document.components.parameters;
    expect(pageNumber.description).toContain("filter[since]");
    expect(since.description).toContain("page[number]");
    const examples =
      document.paths["/v1/subscriptions"].get.responses["400"].content["application/vnd.api+json"].examples;
    expect(examples.numberWithSince.value.errors[0].source).toEqual({ parameter: "page[number]" });
  });

  it("what an OPML body is: an <opml> document, not a bare string", () => {
    const operation = document.paths["/v1/subscriptions.opml"];
    for (const content of [
      ...Object.values(operation.post.requestBody.content as Json),
      ...Object.values(operation.get.responses["200"].content as Json),
    ]) {
      expect(content.schema.pattern).toBe("<opml[\\s/>]");
      expect(content.schema.description).toMatch(/OPML/);
    }
  });

  it("that every operation but the collection GET refuses reserved query parameters (a 400 example each)", () => {
    for (const [path, item] of Object.entries(document.paths as Json)) {
      if (!path.startsWith("/v1/")) continue;
      for (const [method, operation] of Object.entries(item as Json)) {
        if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
        if (path === "/v1/subscriptions" && method === "get") continue;
        const [content] = Object.values((operation.responses["400"]?.content ?? {}) as Json);
        const examples = content?.examples ?? {};
        expect(examples.unsupportedQuery?.value.errors[0].source, `${method} ${path}`).toEqual({
          parameter: "include",
        });
        expect(examples.badBookmark?.value.errors[0].source, `${method} ${path}`).toEqual({ header: "X-D1-Bookmark" });
      }
    }
  });
});
