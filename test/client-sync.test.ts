import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  applyChanges,
  type BulkResult,
  createSubscriptionsClient,
  IncompleteError,
  type Subscription,
  type SubscriptionsApiError,
  type SyncResult,
} from "../client/src/index";
import { newFeed, ORIGIN, rejectionOf, tokenFor } from "./helpers";
import { recordExchange } from "./recorded-responses";

/**
 * The typed client under concurrency and failure (docs/README-client.md): a full listing that neither
 * skips nor repeats while another device writes, each subscription once per sync, partial progress kept
 * when a later page or chunk fails, and conditional reads.
 */

type Hook = (request: Request) => Promise<Response | undefined> | Response | undefined;

/** A device of `userId`: a client whose requests go to the worker, after `hook` (which may answer instead). */
async function device(userId: string, hook: Hook = () => undefined) {
  const token = await tokenFor(userId);
  const requests: Request[] = [];
  const client = createSubscriptionsClient({
    baseUrl: ORIGIN,
    token,
    fetch: async (request) => {
      requests.push(request.clone());
      const fake = await hook(request);
      if (fake) return fake;
      // Only the worker's answers are checked against the OpenAPI document, not the test's fakes.
      const answer = await SELF.fetch(request);
      recordExchange(request, answer);
      return answer;
    },
  });
  return { client, requests };
}

const ids = (subscriptions: readonly { id: string }[]) => subscriptions.map((subscription) => subscription.id);

describe("a full listing while another device writes", () => {
  it("allSubscriptions returns every live subscription once, where walking pages by number skips one", async () => {
    const userId = `client-walk-${crypto.randomUUID()}`;
    const other = await device(userId);
    const feeds = Array.from({ length: 6 }, () => newFeed());
    await other.client.bulkSubscribe(feeds);
    const added = newFeed();
    // After this device's first page, the other one unsubscribes the first subscription this one read (so
    // the list shifts by one) and subscribes a new feed.
    let pages = 0;
    let firstRead: string | undefined;
    const interfere: Hook = async (request) => {
      if (request.method === "GET" && ++pages === 2 && firstRead !== undefined) {
        await other.client.unsubscribe(firstRead);
        await other.client.subscribe(added);
      }
      return undefined;
    };

    // The defect: walking by page number skips the subscription that moved from page 2 to page 1
    // meanwhile, and returns the unsubscribed one.
    const before = ids((await other.client.listSubscriptions()).data);
    const byNumber = (await device(userId, interfere)).client;
    const walked: Subscription[] = [];
    for (let number = 1; ; number++) {
      const page = await byNumber.listSubscriptions({ page: { number, size: 2 } });
      walked.push(...page.data);
      firstRead ??= page.data[0].id;
      if (page.links.next === null) break;
    }
    expect(firstRead).toBe(before[0]);
    expect(ids(walked)).not.toContain(before[2]);
    expect(ids(walked)).toContain(before[0]);

    // Undo, and list again with allSubscriptions under the same interference.
    await other.client.subscribe(feeds.find((feed) => feed.guid === before[0]) as { guid: string; feedUrl: string });
    await other.client.unsubscribe(added.guid);
    pages = 0;
    firstRead = ids((await other.client.listSubscriptions()).data)[0];
    const { client } = await device(userId, interfere);
    const all = await client.allSubscriptions({ pageSize: 2 });
    const live = ids((await other.client.listSubscriptions({ page: { size: 100 } })).data);
    expect(live).toHaveLength(6);
    expect(live).not.toContain(firstRead);
    // Exactly what the list says now, once each, by userSubscribedAt (ties: by change, not the list's tie order).
    expect(all.subscriptions).toHaveLength(live.length);
    expect(new Set(ids(all.subscriptions))).toEqual(new Set(live));
    const times = all.subscriptions.map((subscription) => subscription.attributes.userSubscribedAt);
    expect(times).toEqual([...times].sort());
    // And the token continues from there: nothing changed since.
    expect((await client.sync(all.syncToken)).changes).toEqual([]);
  });

  it("sync returns a subscription that changed during the walk once, with its latest state", async () => {
    const userId = `client-once-${crypto.randomUUID()}`;
    const other = await device(userId);
    const feeds = Array.from({ length: 4 }, () => newFeed());
    await other.client.bulkSubscribe(feeds);
    let pages = 0;
    const { client } = await device(userId, async (request) => {
      if (request.method === "GET" && ++pages === 2)
        await other.client.moveFeed(feeds[0].guid, "https://moved.example/0");
      return undefined;
    });
    const { changes, syncToken } = await client.sync("0", { pageSize: 2 });
    expect(ids(changes)).toEqual([feeds[1].guid, feeds[2].guid, feeds[3].guid, feeds[0].guid]);
    expect(changes[3].attributes.feedUrl).toBe("https://moved.example/0");
    expect(syncToken).toBe("5");
  });
});

describe("partial progress when a later request fails", () => {
  it("sync: the pages read before the failure, and a token to resume from", async () => {
    const userId = `client-partial-sync-${crypto.randomUUID()}`;
    const feeds = Array.from({ length: 5 }, () => newFeed());
    await (await device(userId)).client.bulkSubscribe(feeds);
    let pages = 0;
    const { client } = await device(userId, (request) => {
      if (request.method === "GET" && ++pages === 2) throw new TypeError("network connection lost");
      return undefined;
    });
    const error = await rejectionOf<IncompleteError<SyncResult>>(client.sync("0", { pageSize: 2 }));
    expect(error).toBeInstanceOf(IncompleteError);
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(ids(error.partial.changes)).toEqual([feeds[0].guid, feeds[1].guid]);
    expect(error.partial.syncToken).toBe("2");
    const rest = await client.sync(error.partial.syncToken, { pageSize: 2 });
    expect(ids(rest.changes)).toEqual(feeds.slice(2).map((feed) => feed.guid));
    const local = applyChanges(applyChanges(new Map(), error.partial.changes), rest.changes);
    expect([...local.keys()]).toEqual(feeds.map((feed) => feed.guid));
  });

  it("allSubscriptions: what was read, and the token to resume with sync", async () => {
    const userId = `client-partial-all-${crypto.randomUUID()}`;
    const feeds = Array.from({ length: 3 }, () => newFeed());
    await (await device(userId)).client.bulkSubscribe(feeds);
    let pages = 0;
    const { client } = await device(userId, (request) =>
      request.method === "GET" && ++pages === 2 ? new Response(null, { status: 503 }) : undefined,
    );
    const error = await rejectionOf<IncompleteError<{ subscriptions: Subscription[]; syncToken: string }>>(
      client.allSubscriptions({ pageSize: 2 }),
    );
    expect((error.cause as SubscriptionsApiError).status).toBe(503);
    expect(ids(error.partial.subscriptions)).toEqual([feeds[0].guid, feeds[1].guid]);
    const rest = await client.sync(error.partial.syncToken);
    const local = applyChanges(new Map(error.partial.subscriptions.map((s) => [s.id, s])), rest.changes);
    expect([...local.keys()]).toEqual(feeds.map((feed) => feed.guid));
  });

  it("bulk: the results of the chunks written before the failure; resuming writes the rest", async () => {
    const userId = `client-partial-bulk-${crypto.randomUUID()}`;
    const feeds = Array.from({ length: 250 }, () => newFeed());
    let chunks = 0;
    const { client } = await device(userId, (request) =>
      request.method === "POST" && ++chunks === 2
        ? new Response(JSON.stringify({ errors: [{ status: "503", title: "Service unavailable", detail: "x" }] }), {
            status: 503,
            headers: { "Content-Type": "application/vnd.api+json", "Retry-After": "1" },
          })
        : undefined,
    );
    const error = await rejectionOf<IncompleteError<BulkResult>>(client.bulkSubscribe(feeds));
    expect(error.partial.results).toHaveLength(100);
    expect(error.partial.succeeded).toBe(100);
    expect((error.cause as SubscriptionsApiError).retryAfter).toBe(1);
    const rest = await client.bulkSubscribe(feeds.slice(error.partial.results.length));
    expect(rest.succeeded).toBe(150);
    expect((await client.listSubscriptions()).meta.total).toBe(250);
  });
});

describe("conditional reads", () => {
  it("sends If-None-Match on a repeated read and uses the kept answer on 304", async () => {
    const userId = `client-etag-${crypto.randomUUID()}`;
    const statuses: number[] = [];
    const { client, requests } = await device(userId, async (request) => {
      const response = await SELF.fetch(request);
      statuses.push(response.status);
      return response;
    });
    const feed = newFeed();
    await client.subscribe(feed);
    const first = await client.getSubscription(feed.guid);
    const again = await client.getSubscription(feed.guid);
    expect(again).toEqual(first);
    expect(requests.at(-1)?.headers.get("If-None-Match")).toMatch(/^"/);
    expect(statuses.at(-1)).toBe(304);

    const list = await client.listSubscriptions();
    expect(await client.listSubscriptions()).toEqual(list);
    expect(statuses.at(-1)).toBe(304);
    const synced = await client.sync("0");
    expect(await client.sync("0")).toEqual(synced);
    expect(statuses.at(-1)).toBe(304);

    // A change makes the server answer in full again.
    await client.moveFeed(feed.guid, "https://moved.example/etag");
    expect((await client.getSubscription(feed.guid)).attributes.feedUrl).toBe("https://moved.example/etag");
    expect(statuses.at(-1)).toBe(200);
  });

  it("conditionalReads: 0 sends no If-None-Match", async () => {
    const token = await tokenFor(`client-no-etag-${crypto.randomUUID()}`);
    const sent: (string | null)[] = [];
    const client = createSubscriptionsClient({
      baseUrl: ORIGIN,
      token,
      conditionalReads: 0,
      fetch: (request) => {
        sent.push(request.headers.get("If-None-Match"));
        return SELF.fetch(request);
      },
    });
    await client.listSubscriptions();
    await client.listSubscriptions();
    expect(sent).toEqual([null, null]);
  });
});
