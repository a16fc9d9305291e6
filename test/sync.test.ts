import { describe, expect, it } from "vitest";
import {
  addOperation,
  applyChanges,
  as,
  type ChangeFeedDocument,
  countedDatabaseOf,
  expectedSubscription,
  failingD1,
  listAll,
  meteredDatabaseOf,
  newFeed,
  podcastRelationships,
  seedSubscriptions,
  subscriptionDocument,
  syncFrom,
  wrapDatabaseOf,
} from "./helpers";

const feedLink = (since: number | string, size = 25) => `/v1/subscriptions?filter[since]=${since}&page[size]=${size}`;

async function feedPage(user: Awaited<ReturnType<typeof as>>, since: number | string, size?: number) {
  const response = await user.get(
    size === undefined ? `/v1/subscriptions?filter[since]=${since}` : feedLink(since, size),
  );
  return { response, body: (await response.json()) as ChangeFeedDocument };
}

describe("change feed: GET /v1/subscriptions?filter[since]=<token> (docs/API.md §8)", () => {
  it("starts empty for a new user: token 0 echoed, every link key present, no total", async () => {
    const user = await as("sync-empty");
    const { response, body } = await feedPage(user, 0);
    expect(response.status).toBe(200);
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({ syncToken: "0" });
    expect(body.links).toEqual({ self: feedLink(0), first: feedLink(0), prev: null, next: null, last: null });
  });

  it("returns changes oldest first, each active one as the list's resource plus userUnsubscribedAt: null", async () => {
    const user = await as("sync-order");
    const feeds = [newFeed(), newFeed(), newFeed()];
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const { body } = await feedPage(user, 0);
    expect(body.data).toEqual(
      feeds.map((feed) => {
        const resource = expectedSubscription(feed);
        return { ...resource, attributes: { ...resource.attributes, userUnsubscribedAt: null } };
      }),
    );
    expect(body.meta.syncToken).toBe("3");
    expect(body.links.next).toBeNull();
  });

  it("reports an unsubscription as a tombstone without links, and a revival as active again", async () => {
    const user = await as("sync-tombstone");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const subscribed = (await feedPage(user, 0)).body;
    const subscribedAt = subscribed.data[0].attributes.userSubscribedAt;
    const before = Date.now();
    expect((await user.delete(`/v1/subscriptions/${feed.guid}`)).status).toBe(204);

    const removed = (await feedPage(user, subscribed.meta.syncToken)).body;
    expect(removed.data).toHaveLength(1);
    const tombstone = removed.data[0];
    expect(tombstone).toEqual({
      type: "subscription",
      id: feed.guid,
      attributes: {
        feedUrl: feed.feedUrl,
        userSubscribedAt: subscribedAt,
        userUnsubscribedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
      relationships: podcastRelationships(feed.guid),
    });
    expect(Date.parse(tombstone.attributes.userUnsubscribedAt as string)).toBeGreaterThanOrEqual(before - 1);
    // A device that synced from 0 sees only the current state: the tombstone, once.
    expect((await feedPage(user, 0)).body.data).toEqual([tombstone]);

    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, "https://revived.example/feed"));
    const revived = (await feedPage(user, removed.meta.syncToken)).body.data;
    expect(revived).toHaveLength(1);
    expect(revived[0].attributes).toMatchObject({ feedUrl: "https://revived.example/feed", userUnsubscribedAt: null });
    expect(revived[0].links?.unsubscribe).toEqual({ href: `/v1/subscriptions/${feed.guid}`, method: "DELETE" });
  });

  it("pages with links.next and meta.syncToken until next is null; the stored token then yields nothing", async () => {
    const user = await as("sync-pages");
    const feeds = Array.from({ length: 7 }, () => newFeed());
    await user.operations({ "atomic:operations": feeds.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    const first = (await feedPage(user, 0, 3)).body;
    expect(first.data.map((item) => item.id)).toEqual(feeds.slice(0, 3).map((feed) => feed.guid));
    expect(first.meta.syncToken).toBe("3");
    expect(first.links).toEqual({
      self: feedLink(0, 3),
      first: feedLink(0, 3),
      prev: null,
      next: feedLink(3, 3),
      last: null,
    });
    const second = (await feedPage(user, 3, 3)).body;
    expect(second.links.next).toBe(feedLink(6, 3));
    const third = (await feedPage(user, 6, 3)).body;
    expect(third.data.map((item) => item.id)).toEqual([feeds[6].guid]);
    expect(third.meta.syncToken).toBe("7");
    expect(third.links.next).toBeNull();
    // An exact multiple of the page size: the page that ends the history has no next.
    expect((await feedPage(user, 4, 3)).body.links.next).toBeNull();
    const caughtUp = (await feedPage(user, 7, 3)).body;
    expect(caughtUp.data).toEqual([]);
    expect(caughtUp.meta.syncToken).toBe("7");
    expect(caughtUp.links.next).toBeNull();
  });

  it("defaults page[size] to 25 and allows 100", async () => {
    const user = await as("sync-size");
    await seedSubscriptions("sync-size", 120);
    const defaults = (await feedPage(user, 0)).body;
    expect(defaults.data).toHaveLength(25);
    expect(defaults.links.self).toBe(feedLink(0, 25));
    expect((await feedPage(user, 0, 100)).body.data).toHaveLength(100);
  });

  it("shows a subscription that changes while a client pages again, later, with its newer state; skips nothing", async () => {
    const user = await as("sync-moving");
    const feeds = Array.from({ length: 4 }, () => newFeed());
    await user.operations({ "atomic:operations": feeds.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    const page1 = (await feedPage(user, 0, 2)).body;
    // The first subscription moves, the third is dropped, while the client is between pages.
    await user.patch(
      `/v1/subscriptions/${feeds[0].guid}`,
      subscriptionDocument(feeds[0].guid, "https://moved.example/0"),
    );
    await user.delete(`/v1/subscriptions/${feeds[2].guid}`);
    const rest = await syncFrom(user, page1.meta.syncToken, 2);
    // feeds[2] (change 3) moved past the token to change 6: it is reported at its new place, not lost.
    expect(rest.items.map((item) => item.id)).toEqual([feeds[3].guid, feeds[0].guid, feeds[2].guid]);
    const local = applyChanges(applyChanges(new Map(), page1.data), rest.items);
    expect(local).toEqual(await listAll(user));
  });

  it("does not count an idempotent re-add, a same-URL move or a failed write as a change", async () => {
    const user = await as("sync-noop");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const { token } = await syncFrom(user, "0");
    expect(
      (await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, "https://other.example/f"))).status,
    ).toBe(200);
    await user.operations({ "atomic:operations": [addOperation(feed.guid, feed.feedUrl)] });
    await user.patch(`/v1/subscriptions/${feed.guid}`, subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${crypto.randomUUID()}`);
    const after = await syncFrom(user, token);
    expect(after.items).toEqual([]);
    expect(after.token).toBe(token);
  });

  it("keeps users apart: another user's changes never appear, and a token past the user's history is refused", async () => {
    const busy = await as("sync-busy");
    const quiet = await as("sync-quiet");
    await busy.operations({
      "atomic:operations": Array.from({ length: 5 }, () => {
        const feed = newFeed();
        return addOperation(feed.guid, feed.feedUrl);
      }),
    });
    const feed = newFeed();
    await quiet.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const quietFeed = await syncFrom(quiet, "0");
    expect(quietFeed.items.map((item) => item.id)).toEqual([feed.guid]);
    expect(quietFeed.token).toBe("1");
    const busyToken = (await syncFrom(busy, "0")).token;
    expect(busyToken).toBe("5");
    const { response, body } = await feedPage(quiet, busyToken);
    expect(response.status).toBe(400);
    expect(body).toMatchObject({
      errors: [{ status: "400", title: "Invalid sync token", source: { parameter: "filter[since]" } }],
    });
  });

  for (const token of ["", "abc", "-1", "01", "1.5", "1e3", "+1", " 1", "1000000000000000", "99999999999999"]) {
    it(`answers 400 Invalid sync token for filter[since]=${JSON.stringify(token)}`, async () => {
      const user = await as("sync-invalid");
      const response = await user.get(`/v1/subscriptions?filter[since]=${encodeURIComponent(token)}`);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { errors: { title: string; source: unknown }[] };
      expect(body.errors[0]).toMatchObject({ title: "Invalid sync token", source: { parameter: "filter[since]" } });
    });
  }

  it("refuses page[number] with filter[since], other filters, and sizes out of range", async () => {
    const user = await as("sync-params");
    const cases: [string, string, Record<string, unknown>?][] = [
      ["filter[since]=0&page[number]=1", "page[number]"],
      ["page[number]=2&filter[since]=0", "page[number]"],
      ["filter[since]=0&filter[feedUrl]=x", "filter[feedUrl]"],
      ["filter[since]=0&page[size]=101", "page[size]", { maxSize: 100 }],
      ["filter[since]=0&page[size]=0", "page[size]"],
      ["filter[since]=0&filter[since]=0", "filter[since]"],
    ];
    for (const [query, parameter, meta] of cases) {
      const response = await user.get(`/v1/subscriptions?${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { errors: { source: unknown; meta?: unknown }[] };
      expect(body.errors[0].source, query).toEqual({ parameter });
      if (meta) expect(body.errors[0].meta).toEqual(meta);
    }
  });

  it("answers 304 to If-None-Match reading one row while nothing changed, 200 once something did", async () => {
    const user = await as("sync-etag");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const first = await user.get(feedLink(0));
    const etag = first.headers.get("ETag") as string;
    expect(etag).toMatch(/^"[0-9a-f]{8}-1"$/);
    expect(first.headers.get("Cache-Control")).toBe("private, no-cache");

    const meter = await meteredDatabaseOf("sync-etag");
    const metered = await as("sync-etag", meter.bindings);
    const cached = await metered.get(feedLink(0), { "If-None-Match": etag });
    expect(cached.status).toBe(304);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(1);
    // The tag belongs to its URL: the list's tag does not answer the feed, nor another token's.
    const listTag = (await user.get("/v1/subscriptions")).headers.get("ETag") as string;
    expect((await user.get(feedLink(0), { "If-None-Match": listTag })).status).toBe(200);
    expect((await user.get(feedLink(1), { "If-None-Match": etag })).status).toBe(200);

    await user.delete(`/v1/subscriptions/${feed.guid}`);
    const changed = await user.get(feedLink(0), { "If-None-Match": etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("ETag")).not.toBe(etag);
  });

  it("reads at most page size + 2 rows however long the history, and makes one D1 call", async () => {
    await seedSubscriptions("sync-rows", 3000);
    for (const [since, size] of [
      [0, 100],
      [1500, 100],
      [2950, 100],
      [2999, 25],
      [3000, 25],
    ]) {
      const meter = await meteredDatabaseOf("sync-rows");
      const user = await as("sync-rows", meter.bindings);
      const { body } = await feedPage(user, since, size);
      expect(body.data).toHaveLength(Math.min(size, 3000 - since));
      expect(meter.totals.rowsRead, `since ${since}`).toBeLessThanOrEqual(size + 2);
      expect(meter.totals.statements).toHaveLength(1);
    }
    const counter = await countedDatabaseOf("sync-rows");
    const counted = await as("sync-rows", counter.bindings);
    await counted.get(feedLink(10, 100));
    expect(counter.calls()).toBe(1);
  });

  it("answers 503 when D1 fails, and the retry succeeds", async () => {
    const user = await as("sync-fail", await wrapDatabaseOf("sync-fail", (real) => failingD1(real, 1)));
    expect((await user.get(feedLink(0))).status).toBe(503);
    expect((await (await as("sync-fail")).get(feedLink(0))).status).toBe(200);
  });
});
