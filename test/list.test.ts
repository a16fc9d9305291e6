import { describe, expect, it } from "vitest";
import { as, databaseFor, expectedSubscription, JSONAPI, newFeed, subscriptionDocument } from "./helpers";

type ListDocument = {
  jsonapi: { version: string };
  data: {
    type: string;
    id: string;
    attributes: { feedUrl: string; userSubscribedAt: string };
    links: { self: string; unsubscribe: { href: string; method: string } };
  }[];
  links: { self: string; first: string; prev: string | null; next: string | null; last: string };
  meta: { total: number };
};

const link = (number: number, size: number) => `/v1/subscriptions?page[number]=${number}&page[size]=${size}`;

/** Stores `count` active subscriptions for `userId` through the API, one request each. */
async function subscribeTimes(userId: string, count: number) {
  const user = await as(userId);
  for (let i = 0; i < count; i++) {
    const feed = newFeed();
    expect((await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
  }
  return user;
}

async function listPage(userId: string, query = "") {
  const response = await (await as(userId)).get(`/v1/subscriptions${query}`);
  return { response, body: (await response.json()) as ListDocument };
}

describe("GET /v1/subscriptions", () => {
  it("lists nothing for a new user, with every pagination link and total 0", async () => {
    const { response, body } = await listPage("list-empty");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe(JSONAPI);
    expect(body.jsonapi).toEqual({ version: "1.1" });
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({ total: 0 });
    expect(body.links).toEqual({ self: link(1, 25), first: link(1, 25), prev: null, next: null, last: link(1, 25) });
  });

  it("serialises each subscription with links.self and links.unsubscribe", async () => {
    const user = await as("list-shape");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const { body } = await listPage("list-shape");
    expect(body.data).toHaveLength(1);
    const [resource] = body.data;
    expect(resource).toEqual(expectedSubscription(feed));
  });

  it("orders by userSubscribedAt, then id, and pages through an exact multiple of the page size", async () => {
    // Rows written straight to D1 so that several share one timestamp: the id breaks the tie.
    const rows = [
      ["c0000000-0000-4000-8000-000000000000", 2000],
      ["a0000000-0000-4000-8000-000000000000", 1000],
      ["d0000000-0000-4000-8000-000000000000", 2000],
      ["b0000000-0000-4000-8000-000000000000", 2000],
    ] as const;
    const db = await databaseFor("list-order");
    await db.batch(
      rows.map(([guid, at]) =>
        db
          .prepare(
            "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, change_seq) VALUES ('list-order', ?, ?, ?, ?)",
          )
          .bind(guid, `https://feeds.example.com/${guid}`, at, rows.findIndex((row) => row[0] === guid) + 1),
      ),
    );
    const page1 = await listPage("list-order", "?page[size]=2");
    const page2 = await listPage("list-order", "?page[number]=2&page[size]=2");
    expect([...page1.body.data, ...page2.body.data].map((r) => r.id)).toEqual([
      "a0000000-0000-4000-8000-000000000000",
      "b0000000-0000-4000-8000-000000000000",
      "c0000000-0000-4000-8000-000000000000",
      "d0000000-0000-4000-8000-000000000000",
    ]);
    expect(page1.body.data[0].attributes.userSubscribedAt).toBe(new Date(1000).toISOString());
    expect(page1.body.meta.total).toBe(4);
    expect(page1.body.links).toEqual({
      self: link(1, 2),
      first: link(1, 2),
      prev: null,
      next: link(2, 2),
      last: link(2, 2),
    });
    expect(page2.body.links).toEqual({
      self: link(2, 2),
      first: link(1, 2),
      prev: link(1, 2),
      next: null,
      last: link(2, 2),
    });
  });

  it("has a partial last page and answers a page past the end with 200 and no data", async () => {
    await subscribeTimes("list-partial", 5);
    const last = await listPage("list-partial", "?page[number]=3&page[size]=2");
    expect(last.body.data).toHaveLength(1);
    expect(last.body.links.next).toBeNull();
    expect(last.body.links.last).toBe(link(3, 2));
    const past = await listPage("list-partial", "?page[number]=9&page[size]=2");
    expect(past.response.status).toBe(200);
    expect(past.body.data).toEqual([]);
    expect(past.body.meta.total).toBe(5);
    expect(past.body.links).toEqual({
      self: link(9, 2),
      first: link(1, 2),
      prev: link(8, 2),
      next: null,
      last: link(3, 2),
    });
  });

  it("makes the defaults explicit in links.self and caps nothing below 100", async () => {
    await subscribeTimes("list-defaults", 3);
    const sized = await listPage("list-defaults", "?page[size]=100");
    expect(sized.body.links.self).toBe(link(1, 100));
    const numbered = await listPage("list-defaults", "?page[number]=1");
    expect(numbered.body.links.self).toBe(link(1, 25));
  });

  it("leaves unsubscribed feeds out of data and total", async () => {
    const user = await subscribeTimes("list-tombstones", 3);
    const { body } = await listPage("list-tombstones");
    await user.delete(`/v1/subscriptions/${body.data[1].id}`);
    const after = await listPage("list-tombstones");
    expect(after.body.meta.total).toBe(2);
    expect(after.body.data.map((r) => r.id)).toEqual([body.data[0].id, body.data[2].id]);
  });

  const invalid: [string, string, Record<string, unknown>?][] = [
    ["page[number]=0", "page[number]"],
    ["page[number]=-1", "page[number]"],
    ["page[number]=abc", "page[number]"],
    ["page[number]=1.5", "page[number]"],
    ["page[number]=", "page[number]"],
    ["page[number]=1e2", "page[number]"],
    ["page[number]=1&page[number]=2", "page[number]"],
    ["page[size]=0", "page[size]"],
    ["page[size]=-1", "page[size]"],
    ["page[size]=abc", "page[size]"],
    ["page[size]=1.5", "page[size]"],
    ["page[size]=", "page[size]"],
    ["page[size]=101", "page[size]", { maxSize: 100 }],
    ["page[size]=99999999999999999999", "page[size]", { maxSize: 100 }],
    ["include=author", "include"],
    ["sort=-userSubscribedAt", "sort"],
    ["fields[subscription]=feedUrl", "fields[subscription]"],
    ["filter[feedUrl]=x", "filter[feedUrl]"],
    ["page[offset]=10", "page[offset]"],
    ["page[cursor]=abc", "page[cursor]"],
    ["foo=bar", "foo"],
  ];
  for (const [query, parameter, meta] of invalid) {
    it(`answers 400 naming ${parameter} for ?${query}`, async () => {
      const { response, body } = await listPage("list-invalid", `?${query}`);
      expect(response.status).toBe(400);
      const error = (body as unknown as { errors: Record<string, unknown>[] }).errors[0];
      expect(error).toMatchObject({ status: "400", source: { parameter } });
      expect(typeof error.title).toBe("string");
      expect(typeof error.detail).toBe("string");
      if (meta) expect(error.meta).toEqual(meta);
      else expect(error.meta).toBeUndefined();
    });
  }

  it("ignores implementation-specific (non all-lowercase) parameters", async () => {
    expect((await listPage("list-ignored", "?fooBar=1&x_y=2")).response.status).toBe(200);
  });
});

describe("ties of userSubscribedAt keep the order of subscribing (docs/API.md §4)", () => {
  it("the feeds of one bulk request list, export and page in request order, whatever their guids", async () => {
    const user = await as("ties-bulk");
    // Guids in descending order: the old tie-break (guid) would list them reversed.
    const feeds = ["f", "e", "d", "c", "b", "a"].map((first, i) => ({
      guid: `${first}0000000-0000-4000-8000-00000000000${i}`,
      feedUrl: `https://ties.example/${first}.xml`,
    }));
    const bulk = await user.operations({
      "atomic:operations": feeds.map((feed) => ({
        op: "add",
        data: { type: "subscription", id: feed.guid, attributes: { feedUrl: feed.feedUrl } },
      })),
    });
    const results = (
      (await bulk.json()) as { "atomic:results": { data: { attributes: { userSubscribedAt: string } } }[] }
    )["atomic:results"];
    // One request, one time: the order can only come from the order of subscribing.
    expect(new Set(results.map((result) => result.data.attributes.userSubscribedAt)).size).toBe(1);
    const pages = [];
    for (const number of [1, 2, 3]) {
      const { body } = await listPage("ties-bulk", `?page[number]=${number}&page[size]=2`);
      pages.push(...body.data.map((item) => item.id));
    }
    expect(pages).toEqual(feeds.map((feed) => feed.guid));
    const opml = await (await user.get("/v1/subscriptions.opml", { Accept: "text/x-opml" })).text();
    expect([...opml.matchAll(/guid="([^"]+)"/g)].map((match) => match[1])).toEqual(feeds.map((feed) => feed.guid));
  });

  it("a revived feed moves to the end; a feed move keeps its place", async () => {
    const user = await as("ties-revive");
    const feeds = [newFeed(), newFeed(), newFeed()];
    await user.operations({
      "atomic:operations": feeds.map((feed) => ({
        op: "add",
        data: { type: "subscription", id: feed.guid, attributes: { feedUrl: feed.feedUrl } },
      })),
    });
    await user.patch(
      `/v1/subscriptions/${feeds[0].guid}`,
      subscriptionDocument(feeds[0].guid, `${feeds[0].feedUrl}?moved`),
    );
    expect((await user.delete(`/v1/subscriptions/${feeds[1].guid}`)).status).toBe(204);
    await user.post("/v1/subscriptions", subscriptionDocument(feeds[1].guid, feeds[1].feedUrl));
    const { body } = await listPage("ties-revive");
    expect(body.data.map((item) => item.id)).toEqual([feeds[0].guid, feeds[2].guid, feeds[1].guid]);
  });
});
