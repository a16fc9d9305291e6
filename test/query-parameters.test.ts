import { describe, expect, it } from "vitest";
import { addOperation, as, type Caller, newFeed, subscriptionDocument } from "./helpers";

/**
 * docs/API.md §3: every /v1 endpoint other than the collection GET takes no query parameters. The names
 * JSON:API reserves answer 400 with source.parameter there, before anything is written; camelCase names
 * (implementation-specific) are ignored.
 */

const OPML = `<?xml version="1.0" encoding="UTF-8"?><opml version="2.0"><body><outline xmlUrl="https://q.example/feed"/></body></opml>`;

/** Each endpoint that takes no query parameters, as a request with `search` appended to its path. */
const endpoints: { name: string; send: (user: Caller, search: string, guid: string) => Promise<Response> }[] = [
  {
    name: "POST /v1/subscriptions",
    send: (user, search) =>
      user.post(`/v1/subscriptions${search}`, subscriptionDocument(newFeed().guid, newFeed().feedUrl)),
  },
  {
    name: "PATCH /v1/subscriptions/{guid}",
    send: (user, search, guid) =>
      user.patch(`/v1/subscriptions/${guid}${search}`, subscriptionDocument(guid, "https://moved.example/feed")),
  },
  {
    name: "GET /v1/subscriptions/{guid}",
    send: (user, search, guid) => user.get(`/v1/subscriptions/${guid}${search}`),
  },
  {
    name: "DELETE /v1/subscriptions/{guid}",
    send: (user, search, guid) => user.delete(`/v1/subscriptions/${guid}${search}`),
  },
  {
    name: "POST /v1/operations",
    send: (user, search) =>
      user.post(
        `/v1/operations${search}`,
        { "atomic:operations": [addOperation(newFeed().guid, newFeed().feedUrl)] },
        {
          "Content-Type": 'application/vnd.api+json;ext="https://jsonapi.org/ext/atomic"',
          Accept: 'application/vnd.api+json;ext="https://jsonapi.org/ext/atomic"',
        },
      ),
  },
  {
    name: "GET /v1/subscriptions.opml",
    send: (user, search) => user.get(`/v1/subscriptions.opml${search}`, { Accept: "text/x-opml" }),
  },
  {
    name: "POST /v1/subscriptions.opml",
    send: (user, search) => user.post(`/v1/subscriptions.opml${search}`, OPML, { "Content-Type": "text/x-opml" }),
  },
];

describe("query parameters on endpoints that take none", () => {
  for (const endpoint of endpoints) {
    it(`${endpoint.name}: reserved names answer 400 naming the parameter, and nothing changes`, async () => {
      const user = await as(`query-${crypto.randomUUID()}`);
      const feed = newFeed();
      expect((await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
      for (const [search, parameter] of [
        ["?include=feed", "include"],
        ["?foo=1", "foo"],
        ["?sort=-id", "sort"],
        ["?fields%5Bsubscription%5D=feedUrl", "fields[subscription]"],
        ["?page[number]=1", "page[number]"],
        ["?filter[since]=0", "filter[since]"],
      ]) {
        const response = await endpoint.send(user, search, feed.guid);
        expect(response.status, `${endpoint.name}${search}`).toBe(400);
        const body = (await response.json()) as { errors: { title: string; source: unknown }[] };
        expect(body.errors).toEqual([
          expect.objectContaining({ title: "Unsupported query parameter", source: { parameter } }),
        ]);
      }
      // Nothing was written: the one subscription is still there, unmoved.
      const list = (await (await user.get("/v1/subscriptions")).json()) as {
        data: { id: string; attributes: { feedUrl: string } }[];
      };
      expect(list.data.map((item) => [item.id, item.attributes.feedUrl])).toEqual([[feed.guid, feed.feedUrl]]);
    });

    it(`${endpoint.name}: a camelCase name is ignored`, async () => {
      const user = await as(`query-camel-${crypto.randomUUID()}`);
      const feed = newFeed();
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
      const response = await endpoint.send(user, "?clientVersion=3", feed.guid);
      expect(response.status, await response.clone().text()).toBeLessThan(300);
    });
  }
});
