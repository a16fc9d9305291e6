import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  ATOMIC_MEDIA_TYPE,
  createSubscriptionsClient,
  JSONAPI_MEDIA_TYPE,
  OPML_MEDIA_TYPE,
  podcastGuid,
  type SubscriptionsApiError,
} from "../client/src/index";
import {
  changeFeedDocumentSchema,
  errorDocumentSchema,
  operationsResultDocumentSchema,
  opmlImportDocumentSchema,
  podcastDocumentSchema,
  subscriptionDocumentResponseSchema,
  subscriptionListDocumentSchema,
} from "../src/openapi/schemas";
import { newFeed, ORIGIN, rejectionOf, seedPodcast, tokenFor } from "./helpers";
import { recordExchange } from "./recorded-responses";

/**
 * The typed client (client/src/index.ts) driving the real worker through SELF.fetch. Every response
 * it reads is also checked against the schema the OpenAPI document gives for it.
 */

interface Recorded {
  request: Request;
  response: Response;
}

/** A client acting as `userId`, recording each request and its (cloned) response. */
async function clientFor(userId: string) {
  const token = await tokenFor(userId);
  const exchanges: Recorded[] = [];
  const client = createSubscriptionsClient({
    baseUrl: ORIGIN,
    token: () => token,
    fetch: async (request) => {
      const response = await SELF.fetch(request.clone());
      recordExchange(request, response);
      exchanges.push({ request, response: response.clone() });
      return response;
    },
  });
  return { client, exchanges, token, last: () => exchanges[exchanges.length - 1] };
}

async function bodyOf(recorded: Recorded): Promise<unknown> {
  return recorded.response.clone().json();
}

/** The SubscriptionsApiError a client call fails with. */
const rejection = (promise: Promise<unknown>) => rejectionOf<SubscriptionsApiError>(promise);

describe("typed client", () => {
  it("subscribes with the JSON:API media type and the bearer token, then confirms", async () => {
    const { client, last, token } = await clientFor(`client-${crypto.randomUUID()}`);
    const feed = newFeed();

    const first = await client.subscribe(feed);
    expect(first.created).toBe(true);
    expect(first.subscription).toMatchObject({
      type: "subscription",
      id: feed.guid,
      attributes: { feedUrl: feed.feedUrl },
    });
    expect(first.subscription.links.unsubscribe).toEqual({ href: `/v1/subscriptions/${feed.guid}`, method: "DELETE" });
    const { request, response } = last();
    expect(request.method).toBe("POST");
    expect(request.headers.get("Content-Type")).toBe(JSONAPI_MEDIA_TYPE);
    expect(request.headers.get("Accept")).toBe(JSONAPI_MEDIA_TYPE);
    expect(request.headers.get("Authorization")).toBe(`Bearer ${token}`);
    expect(response.status).toBe(201);
    subscriptionDocumentResponseSchema.parse(await bodyOf(last()));

    const again = await client.subscribe({ guid: feed.guid, feedUrl: "https://elsewhere.example.com/feed.xml" });
    expect(again.created).toBe(false);
    expect(again.subscription).toEqual(first.subscription);
    expect(last().response.status).toBe(200);
  });

  it("gets one subscription, and reports a missing one as a 404 error with the specification's title", async () => {
    const { client, last } = await clientFor(`client-${crypto.randomUUID()}`);
    const feed = newFeed();
    await client.subscribe(feed);

    const subscription = await client.getSubscription(feed.guid.toUpperCase());
    expect(subscription.id).toBe(feed.guid);
    expect(last().request.headers.get("Accept")).toBe(JSONAPI_MEDIA_TYPE);
    subscriptionDocumentResponseSchema.parse(await bodyOf(last()));

    const error = await rejection(client.getSubscription(crypto.randomUUID()));
    expect(error.name).toBe("SubscriptionsApiError");
    expect(error.status).toBe(404);
    expect(error.errors[0]).toMatchObject({ status: "404", title: "Subscription not found" });
    expect(error.requestId).toBeTruthy();
    errorDocumentSchema.parse(await bodyOf(last()));
  });

  it("lists page by page, and iterates over every subscription", async () => {
    const { client, exchanges, last } = await clientFor(`client-${crypto.randomUUID()}`);
    const feeds = [newFeed(), newFeed(), newFeed()];
    for (const feed of feeds) await client.subscribe(feed);

    const page = await client.listSubscriptions({ page: { number: 2, size: 2 } });
    expect(new URL(last().request.url).searchParams.get("page[number]")).toBe("2");
    expect(page.data.map((subscription) => subscription.id)).toEqual([feeds[2].guid]);
    expect(page.links).toMatchObject({ prev: "/v1/subscriptions?page[number]=1&page[size]=2", next: null });
    expect(page.meta.total).toBe(3);
    subscriptionListDocumentSchema.parse(await bodyOf(last()));

    const defaults = await client.listSubscriptions();
    expect(defaults.links.self).toBe("/v1/subscriptions?page[number]=1&page[size]=25");

    const before = exchanges.length;
    const all = await client.allSubscriptions({ pageSize: 2 });
    expect(all.subscriptions.map((subscription) => subscription.id)).toEqual(feeds.map((feed) => feed.guid));
    // The list's resource, exactly: no change-feed attribute left in it.
    expect(all.subscriptions[0]).toEqual(await client.getSubscription(feeds[0].guid));
    expect(all.syncToken).toBe("3");
    expect(exchanges.length - before).toBeGreaterThanOrEqual(2);
  });

  it("unsubscribes with DELETE, and reports a second unsubscribe as 404", async () => {
    const { client, last } = await clientFor(`client-${crypto.randomUUID()}`);
    const feed = newFeed();
    await client.subscribe(feed);

    await expect(client.unsubscribe(feed.guid)).resolves.toBeUndefined();
    expect(last().request.method).toBe("DELETE");
    expect(last().response.status).toBe(204);
    expect((await client.listSubscriptions()).meta.total).toBe(0);
    await expect(rejection(client.unsubscribe(feed.guid))).resolves.toMatchObject({ status: 404 });
  });

  it("bulk-subscribes with the atomic media type, item by item", async () => {
    const { client, last } = await clientFor(`client-${crypto.randomUUID()}`);
    const existing = newFeed();
    await client.subscribe(existing);
    const fresh = newFeed();

    const result = await client.bulkSubscribe([fresh, existing, { guid: crypto.randomUUID(), feedUrl: "not a url" }]);
    const { request } = last();
    expect(request.url).toBe(`${ORIGIN}/v1/operations`);
    expect(request.headers.get("Content-Type")).toBe(ATOMIC_MEDIA_TYPE);
    expect(request.headers.get("Accept")).toBe(ATOMIC_MEDIA_TYPE);
    expect(last().response.headers.get("Content-Type")).toBe(ATOMIC_MEDIA_TYPE);
    operationsResultDocumentSchema.parse(await bodyOf(last()));

    expect(result.succeeded).toBe(1);
    expect(result.failed).toBe(2);
    expect(result.results[0]).toMatchObject({ data: { id: fresh.guid, attributes: { feedUrl: fresh.feedUrl } } });
    expect(result.results[1]).toMatchObject({
      errors: [
        { status: "409", title: "Already Subscribed", meta: { guid: existing.guid, feedUrl: existing.feedUrl } },
      ],
    });
    expect(result.results[2]).toMatchObject({ errors: [{ status: "422" }] });
  });

  it("splits a long bulk list into requests of at most 100 operations", async () => {
    const { client, exchanges } = await clientFor(`client-${crypto.randomUUID()}`);
    const feeds = Array.from({ length: 150 }, () => newFeed());

    const result = await client.bulkSubscribe(feeds);
    expect(exchanges.length).toBe(2);
    expect(result.results.length).toBe(150);
    expect(result.succeeded).toBe(150);
    expect((await client.listSubscriptions()).meta.total).toBe(150);
  });

  it("exports OPML, and imports it into another account: the same subscriptions", async () => {
    const from = await clientFor(`client-${crypto.randomUUID()}`);
    const feeds = [newFeed(), newFeed()];
    for (const feed of feeds) await from.client.subscribe(feed);

    const opml = await from.client.exportOpml();
    expect(from.last().request.headers.get("Accept")).toBe(OPML_MEDIA_TYPE);
    expect(from.last().response.headers.get("Content-Type")).toBe(`${OPML_MEDIA_TYPE}; charset=utf-8`);
    for (const feed of feeds) expect(opml).toContain(`guid="${feed.guid}"`);

    const to = await clientFor(`client-${crypto.randomUUID()}`);
    const result = await to.client.importOpml(opml);
    expect(to.last().request.headers.get("Content-Type")).toBe(OPML_MEDIA_TYPE);
    expect(to.last().request.headers.get("Accept")).toBe(JSONAPI_MEDIA_TYPE);
    opmlImportDocumentSchema.parse(await bodyOf(to.last()));
    expect(result).toEqual({ imported: 2, alreadySubscribed: 0, skipped: [] });
    const imported = (await to.client.allSubscriptions()).subscriptions;
    expect(imported.map((subscription) => [subscription.id, subscription.attributes.feedUrl]).sort()).toEqual(
      feeds.map((feed) => [feed.guid, feed.feedUrl]).sort(),
    );
  });

  it("imports UTF-8 bytes, and reports a refused file as a JSON:API error", async () => {
    const { client } = await clientFor(`client-${crypto.randomUUID()}`);
    const bytes = new TextEncoder().encode('<opml><body><outline xmlUrl="https://podnews.net/rss"/></body></opml>');
    expect(await client.importOpml(bytes)).toMatchObject({ imported: 1 });
    const [subscription] = (await client.listSubscriptions()).data;
    expect(subscription.id).toBe(await podcastGuid("https://podnews.net/rss"));

    const error = await rejection(client.importOpml("<rss/>"));
    expect(error.status).toBe(400);
    expect(error.errors[0]).toMatchObject({ title: "Invalid OPML" });
  });

  it("exports podcastGuid, the server's own podcast:guid function", async () => {
    expect(await podcastGuid("https://example.com/feed1")).toBe("677ea490-690e-51cb-8b43-755df6c55270");
  });

  it("syncs: follows links.next, returns every change (tombstones included) and the token to store", async () => {
    const { client, exchanges } = await clientFor(`client-${crypto.randomUUID()}`);
    const feeds = Array.from({ length: 5 }, () => newFeed());
    await client.bulkSubscribe(feeds);
    const first = await client.sync(undefined, { pageSize: 2 });
    expect(first.changes.map((change) => change.id)).toEqual(feeds.map((feed) => feed.guid));
    expect(first.syncToken).toBe("5");
    const feedRequests = exchanges.filter(({ request }) => request.url.includes("filter"));
    expect(feedRequests).toHaveLength(3);
    for (const { response } of feedRequests) changeFeedDocumentSchema.parse(await response.clone().json());

    const moved = await client.moveFeed(feeds[0].guid, "https://moved.example/0");
    expect(moved.attributes.feedUrl).toBe("https://moved.example/0");
    const removed = await client.bulkRemove([feeds[1].guid, crypto.randomUUID()]);
    expect(removed.results[0]).toEqual({});
    const notSubscribed = removed.results[1];
    expect("errors" in notSubscribed && notSubscribed.errors[0].status).toBe("404");
    expect({ succeeded: removed.succeeded, failed: removed.failed }).toEqual({ succeeded: 1, failed: 1 });
    operationsResultDocumentSchema.parse(await bodyOf(exchanges[exchanges.length - 1]));

    const next = await client.sync(first.syncToken);
    expect(next.changes.map((change) => [change.id, change.attributes.userUnsubscribedAt === null])).toEqual([
      [feeds[0].guid, true],
      [feeds[1].guid, false],
    ]);
    expect(next.syncToken).toBe("7");
    expect((await client.sync(next.syncToken)).changes).toEqual([]);
    const error = await rejection(client.moveFeed(feeds[1].guid, "https://x.example/"));
    expect(error.status).toBe(404);
  });

  it("runs a mixed bulk in order", async () => {
    const { client } = await clientFor(`client-${crypto.randomUUID()}`);
    const feed = newFeed();
    const result = await client.bulk([
      { op: "add", ...feed },
      { op: "update", guid: feed.guid, feedUrl: "https://moved.example/f" },
      { op: "remove", guid: feed.guid },
    ]);
    expect(result.results.map((item) => ("errors" in item ? "error" : "data" in item ? "data" : "{}"))).toEqual([
      "data",
      "data",
      "{}",
    ]);
    expect(result.succeeded).toBe(3);
  });

  it("reports a rejected token as a 401 error", async () => {
    const client = createSubscriptionsClient({
      baseUrl: ORIGIN,
      token: "not-a-jwt",
      fetch: (request) => SELF.fetch(request),
    });
    const error = await rejection(client.listSubscriptions());
    expect(error.status).toBe(401);
    expect(error.errors[0]).toMatchObject({ status: "401", title: "Unauthorized" });
  });

  it("sends back the last X-D1-Bookmark it received", async () => {
    const seen: (string | null)[] = [];
    const client = createSubscriptionsClient({
      baseUrl: `${ORIGIN}/`,
      token: "token",
      fetch: async (request) => {
        seen.push(request.headers.get("X-D1-Bookmark"));
        const body = JSON.stringify({ jsonapi: { version: "1.1" }, data: [], links: {}, meta: { total: 0 } });
        return new Response(body, { headers: { "X-D1-Bookmark": `bookmark-${seen.length}` } });
      },
    });
    await client.listSubscriptions();
    await client.listSubscriptions();
    await client.listSubscriptions();
    expect(seen).toEqual([null, "bookmark-1", "bookmark-2"]);
  });
});

describe("typed client: podcasts (docs/API.md §18)", () => {
  it("reads a podcast, a subscription with its podcast, and a page with include: podcast", async () => {
    const userId = `client-podcasts-${crypto.randomUUID()}`;
    const { client, last } = await clientFor(userId);
    const [fetched, pending] = [newFeed(), newFeed()];
    await client.subscribe(fetched);
    await client.subscribe(pending);
    await seedPodcast(userId, fetched.feedUrl, { title: "Fetched Show", author: "Someone", language: "en" });

    const podcast = await client.getPodcast(fetched.guid);
    expect(last().request.url).toBe(`${ORIGIN}/v1/subscriptions/${fetched.guid}/podcast`);
    podcastDocumentSchema.parse(await bodyOf(last()));
    expect(podcast).toMatchObject({
      type: "podcast",
      id: fetched.guid,
      attributes: { title: "Fetched Show", author: "Someone", language: "en", status: "ok" },
    });
    expect((await client.getPodcast(pending.guid)).attributes.status).toBe("pending");

    const both = await client.getSubscriptionWithPodcast(fetched.guid);
    expect(both.subscription.relationships.podcast.data).toEqual({ type: "podcast", id: fetched.guid });
    expect(both.podcast).toEqual(podcast);

    const page = await client.listSubscriptions({ include: "podcast" });
    expect(new URL(last().request.url).searchParams.get("include")).toBe("podcast");
    subscriptionListDocumentSchema.parse(await bodyOf(last()));
    expect(page.included?.map((item) => [item.id, item.attributes.title])).toEqual([
      [fetched.guid, "Fetched Show"],
      [pending.guid, null],
    ]);
    const { subscriptions } = await client.allSubscriptions();
    expect(subscriptions.map((item) => item.relationships.podcast.links.related)).toEqual([
      `/v1/subscriptions/${fetched.guid}/podcast`,
      `/v1/subscriptions/${pending.guid}/podcast`,
    ]);
    const missing = await rejection(client.getPodcast(crypto.randomUUID()));
    expect(missing.status).toBe(404);
  });
});
