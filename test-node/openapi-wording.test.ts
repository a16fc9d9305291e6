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

/** What the server enforces that the document only said in prose, or not at all (issue 30). */
describe("the OpenAPI document states what the server enforces", () => {
  it("a device's type is one of five values and its caption at most 100 characters", () => {
    const body = document.paths["/api/2/devices/{username}/{file}"].post.requestBody.content["application/json"].schema;
    expect(body.properties.type.enum).toEqual(["desktop", "laptop", "mobile", "server", "other"]);
    expect(body.properties.caption.maxLength).toBe(100);
    const listed = document.paths["/api/2/devices/{file}"].get.responses["200"].content["application/json"].schema;
    expect(listed.items.properties.type.enum).toEqual(body.properties.type.enum);
  });

  it("the longest gpodder since: 15 digits", () => {
    for (const [path, method] of [
      ["/api/2/subscriptions/{username}/{file}", "get"],
      ["/api/2/episodes/{file}", "get"],
    ]) {
      const since = (document.paths[path][method].parameters as Json[]).find((parameter) => parameter.name === "since");
      expect(since?.schema, path).toMatchObject({ type: "integer", minimum: 0, maximum: 999_999_999_999_999 });
    }
  });

  it("episode and app-password ids are UUIDs, in paths and bodies", () => {
    const uuid = { type: "string", format: "uuid" };
    expect(document.paths["/v1/episodes/{id}"].parameters[0].schema).toMatchObject(uuid);
    for (const method of ["get", "delete"]) {
      expect(document.paths["/v1/app-passwords/{id}"][method].parameters[0].schema, method).toMatchObject(uuid);
    }
    expect(schemas.EpisodeResourceObject.properties.id).toMatchObject(uuid);
    expect(schemas.Episode.properties.id).toMatchObject(uuid);
  });

  it("a URL pattern that refuses a scheme without a host (htTP:/), as the server does", () => {
    const pattern = new RegExp(FEED_URL_PATTERN, "u");
    for (const refused of ["htTP:/", "http://", "https:?x", "http:#x", "HTTP:\\\\"]) {
      expect(pattern.test(refused), refused).toBe(false);
    }
    for (const accepted of ["http:x", "htTP:/a.example", "https:///a.example/f", "hTtP:\\\\a.example"]) {
      expect(pattern.test(accepted), accepted).toBe(true);
    }
    expect(schemas.EpisodeResourceObject.properties.attributes.properties.mediaUrl.pattern).toBe(FEED_URL_PATTERN);
  });

  it("changedAt is required with position or played (dependentRequired), in creates and merges", () => {
    const dependent = { position: ["changedAt"], played: ["changedAt"] };
    expect(schemas.EpisodeResourceObject.properties.attributes.dependentRequired).toEqual(dependent);
    expect(schemas.EpisodePatchResourceObject.properties.attributes.dependentRequired).toEqual(dependent);
  });
});
