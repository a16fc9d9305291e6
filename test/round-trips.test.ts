import { describe, expect, it } from "vitest";
import { MAX_STORED_SUBSCRIPTIONS } from "../src/db/subscriptions";
import { urlKey } from "../src/db/url-key";
import { Browser, signInBindings } from "./account-browser";
import {
  addOperation,
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  newFeed,
  ORIGIN,
  send,
  subscriptionDocument,
} from "./helpers";

/** A user whose requests go through a D1 binding that counts calls. */
async function countedUser(userId: string) {
  const counter = await countedDatabaseOf(userId);
  const user = await as(userId, counter.bindings);
  /** Runs one request and returns its status and how many D1 calls it made. */
  const measure = async (request: (user: Caller) => Promise<Response>) => {
    counter.reset();
    const response = await request(user);
    return { status: response.status, calls: counter.calls() };
  };
  return { user, measure };
}

describe("one D1 round trip per request", () => {
  it("holds for every single-resource endpoint and outcome", async () => {
    const { measure } = await countedUser("trips");
    const feed = newFeed();
    const document = subscriptionDocument(feed.guid, feed.feedUrl);
    const path = `/v1/subscriptions/${feed.guid}`;

    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 201, calls: 1 });
    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions?page[number]=7"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get(path))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.delete(path))).toEqual({ status: 204, calls: 1 });
    expect(await measure((u) => u.get(path))).toEqual({ status: 404, calls: 1 });
    expect(await measure((u) => u.delete(path))).toEqual({ status: 404, calls: 1 });
    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 201, calls: 1 });
  });

  it("makes no call for requests refused before the database", async () => {
    const { measure } = await countedUser("trips-refused");
    expect(await measure((u) => u.get("/v1/subscriptions/nope"))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.get("/v1/subscriptions?page[size]=500"))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.post("/v1/subscriptions", { data: {} }))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.post("/v1/subscriptions", "{"))).toEqual({ status: 400, calls: 0 });
  });

  for (const count of [1, 10, 100]) {
    it(`sends ${count} bulk add(s) as one call`, async () => {
      const { measure } = await countedUser(`trips-bulk-${count}`);
      const operations = Array.from({ length: count }, () => {
        const feed = newFeed();
        return addOperation(feed.guid, feed.feedUrl);
      });
      expect(await measure((u) => u.operations({ "atomic:operations": operations }))).toEqual({
        status: 200,
        calls: 1,
      });
    });
  }

  it("sends a mix of 100 adds, updates and removes (and one with every kind of outcome) as one call", async () => {
    const { user, measure } = await countedUser("trips-bulk-mix");
    const existing = Array.from({ length: 40 }, () => newFeed());
    await user.operations({ "atomic:operations": existing.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    const operations = Array.from({ length: 100 }, (_, i) => {
      const feed = existing[i % existing.length];
      switch (i % 5) {
        case 0:
          return addOperation(crypto.randomUUID(), `https://mix.example/${i}`);
        case 1:
          return addOperation(feed.guid, feed.feedUrl); // already subscribed, or revived after a remove
        case 2:
          return {
            op: "update",
            data: { type: "subscription", id: feed.guid, attributes: { feedUrl: `https://moved.example/${i}` } },
          };
        case 3:
          return { op: "remove", ref: { type: "subscription", id: feed.guid } };
        default:
          return { op: "remove", ref: { type: "subscription", id: crypto.randomUUID() } }; // not found
      }
    });
    const result = await measure((u) => u.operations({ "atomic:operations": operations }));
    expect(result).toEqual({ status: 200, calls: 1 });
  });

  it("makes one call for a PATCH and for a page of the change feed", async () => {
    const { user, measure } = await countedUser("trips-sync");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const path = `/v1/subscriptions/${feed.guid}`;
    expect(await measure((u) => u.patch(path, subscriptionDocument(feed.guid, "https://m.example/")))).toEqual({
      status: 200,
      calls: 1,
    });
    expect(
      await measure((u) =>
        u.patch(`/v1/subscriptions/${crypto.randomUUID()}`, { data: { type: "subscription", id: "x" } }),
      ),
    ).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.get("/v1/subscriptions?filter[since]=0"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions?filter[since]=x"))).toEqual({ status: 400, calls: 0 });
  });

  it("makes no call when every bulk operation is invalid", async () => {
    const { measure } = await countedUser("trips-bulk-invalid");
    const operations = [{ op: "remove" }, { op: "add", data: { type: "podcast" } }, 7, { op: "update", data: {} }];
    expect(await measure((u) => u.operations({ "atomic:operations": operations }))).toEqual({ status: 200, calls: 0 });
  });
});

/**
 * Stores `count` subscriptions for `userId` straight into D1 as a subscribe writes them (with their url_key), each
 * feed with the podcast a feed round would store: a title and a site, so the OPML exports name every outline
 * (docs/API.md §18).
 */
async function seedNamedFeeds(userId: string, count: number) {
  const db = await databaseFor(userId);
  const base = Date.now() - count;
  const rows = Array.from({ length: count }, (_, i) => {
    const guid = crypto.randomUUID();
    const feedUrl = `https://feeds.example.com/${guid}.xml`;
    return { guid, feedUrl, key: urlKey(feedUrl), at: base + i, seq: i + 1 };
  });
  const statements: D1PreparedStatement[] = [];
  for (let start = 0; start < count; start += 1000) {
    const text = JSON.stringify(rows.slice(start, start + 1000));
    statements.push(
      db
        .prepare(
          `INSERT INTO subscriptions (user_id, guid, feed_url, url_key, subscribed_at, change_seq, subscribed_seq)
           SELECT ?, value ->> 'guid', value ->> 'feedUrl', value ->> 'key', value ->> 'at', value ->> 'seq', value ->> 'seq'
           FROM json_each(?)`,
        )
        .bind(userId, text),
      db
        .prepare(
          `INSERT OR REPLACE INTO feeds (url_key, url, status, title, site_url, fetched_at)
           SELECT value ->> 'key', value ->> 'feedUrl', 'ok', 'The podcast of ' || (value ->> 'guid'),
             'https://site.example/' || (value ->> 'guid'), 0
           FROM json_each(?)`,
        )
        .bind(text),
    );
  }
  await db.batch(statements);
}

describe("at most 3 sequential D1 round trips for a list of 10 000 feeds", () => {
  const count = MAX_STORED_SUBSCRIPTIONS;

  it("the simple API's lists, in each format and with a new device, and every OPML export", {
    timeout: 120_000,
  }, async () => {
    const userId = `trips-10k-${crypto.randomUUID().slice(0, 8)}`;
    await seedNamedFeeds(userId, count);
    const counter = await countedDatabaseOf(userId);
    const user = await as(userId);
    const created = await user.post("/v1/app-passwords", {
      data: { type: "app-password", attributes: { label: "trips" } },
    });
    const { username, password } = ((await created.json()) as { data: { attributes: Record<string, string> } }).data
      .attributes;
    const basic = { Authorization: `Basic ${btoa(`${username}:${password}`)}` };
    const bearer = { Authorization: `Bearer ${user.token}` };
    const browser = new Browser({ ...signInBindings(), ...counter.bindings });
    expect((await browser.signIn(userId)).status).toBe(303);
    /** The request's D1 calls, once its answer (all `count` feeds) is read to its end. */
    const measure = async (request: () => Promise<Response>, outlines: RegExp) => {
      counter.reset();
      const response = await request();
      expect(response.status).toBe(200);
      expect((await response.text()).match(outlines)).toHaveLength(count);
      return counter.calls();
    };
    const get = (path: string, headers: Record<string, string>) => () =>
      send(new Request(`${ORIGIN}${path}`, { headers }), counter.bindings);
    const feedUrl = /https:\/\/feeds\.example\.com\/[0-9a-f-]{36}\.xml/g;
    const named = /<outline type="rss" text="The podcast of [^"]+" title="[^"]+" xmlUrl="[^"]+" htmlUrl="[^"]+"/g;
    // The first request with the app password verifies it (one call more); the next ones find it verified.
    const calls = {
      json: await measure(get(`/subscriptions/${username}.json`, basic), feedUrl),
      txt: await measure(get(`/subscriptions/${username}.txt`, basic), feedUrl),
      opml: await measure(get(`/subscriptions/${username}.opml`, basic), named),
      newDeviceJson: await measure(get(`/subscriptions/${username}/new-phone.json`, basic), feedUrl),
      newDeviceTxt: await measure(get(`/subscriptions/${username}/new-laptop.txt`, basic), feedUrl),
      newDeviceOpml: await measure(get(`/subscriptions/${username}/new-tablet.opml`, basic), named),
      jsonApiOpml: await measure(get("/v1/subscriptions.opml", bearer), named),
      accountPageOpml: await measure(() => browser.request("/account/subscriptions.opml"), named),
    };
    for (const [request, n] of Object.entries(calls)) expect(n, request).toBeLessThanOrEqual(3);
    // A short-URL account's list is one page (two with its podcasts' names): the device and the guard ride along.
    expect(calls.txt).toBe(1);
    expect(calls.newDeviceJson).toBe(1);
    expect(calls.newDeviceOpml).toBe(2);
  });
});
