import { beforeAll, describe, expect, it } from "vitest";
import { verifiedCredentials } from "../src/auth/verified-credentials";
import { MAX_STORED_SUBSCRIPTIONS } from "../src/db/subscriptions";
import { urlKey } from "../src/db/url-key";
import { Browser, signInBindings } from "./account-browser";
import {
  addOperation,
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  meteredDatabaseOf,
  newFeed,
  ORIGIN,
  send,
  subscriptionDocument,
} from "./helpers";
import { basic as basic64, mint, SYNC } from "./nextcloud-client";

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

/** A realistic feed URL of 105 bytes (a path, a query with `&`, which the OPML export escapes). */
const realisticFeedUrl = (guid: string) =>
  `https://feeds.podcast-network.example/shows/${guid}/feed.xml?format=mp3&q=hi`;

/**
 * Stores `count` subscriptions for `userId` straight into D1 as a subscribe writes them (with their url_key, in list
 * order), each feed with the podcast a feed round would store: a title and a site, so the OPML exports name every
 * outline (docs/API.md §18). Answers the feed URLs in list order.
 */
async function seedNamedFeeds(userId: string, count: number, feedUrlOf: (guid: string) => string): Promise<string[]> {
  const db = await databaseFor(userId);
  const base = Date.now() - count;
  const rows = Array.from({ length: count }, (_, i) => {
    const guid = crypto.randomUUID();
    const feedUrl = feedUrlOf(guid);
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
  return rows.map((row) => row.feedUrl);
}

/** The outlines' feed URLs of an OPML document, in document order. */
const opmlFeedUrls = (text: string) =>
  [
    ...text.matchAll(/<outline type="rss" text="The podcast of [^"]+" title="[^"]+" xmlUrl="([^"]+)" htmlUrl="[^"]+"/g),
  ].map((match) => match[1].replaceAll("&amp;", "&"));

describe("at most 3 sequential D1 round trips for a list of 10 000 feeds of ~100-byte URLs", () => {
  const count = MAX_STORED_SUBSCRIPTIONS;
  const userId = `trips-10k-${crypto.randomUUID().slice(0, 8)}`;
  let feedUrls: string[] = [];
  let meter: Awaited<ReturnType<typeof meteredDatabaseOf>>;
  let basic: Record<string, string> = {};
  let bearer: Record<string, string> = {};
  let username = "";
  let browser: Browser;

  beforeAll(async () => {
    feedUrls = await seedNamedFeeds(userId, count, realisticFeedUrl);
    meter = await meteredDatabaseOf(userId);
    const user = await as(userId);
    const created = await mint(user, "trips");
    username = created.loginName;
    basic = { Authorization: basic64(created.loginName, created.appPassword) };
    bearer = { Authorization: `Bearer ${user.token}` };
    browser = new Browser({ ...signInBindings(), ...meter.bindings });
    expect((await browser.signIn(userId)).status).toBe(303);
  }, 120_000);

  /**
   * The request's D1 calls and the largest D1 answer (JSON bytes), once its answer is read to its end, and that
   * answer's feed URLs (`urls`). Cold as far as the isolate can be: the app password is verified again (one call).
   */
  const measure = async (request: () => Promise<Response>, urls: (response: Response) => Promise<string[]>) => {
    verifiedCredentials.forget(() => true);
    meter.reset();
    const response = await request();
    expect(response.status).toBe(200);
    expect(await urls(response)).toEqual(feedUrls);
    const { calls, answerBytes } = meter.totals;
    return { calls, largestAnswer: Math.max(...answerBytes) };
  };
  const get = (path: string, headers: () => Record<string, string>) => () =>
    send(new Request(`${ORIGIN}${path}`, { headers: headers() }), meter.bindings);
  const jsonList = async (response: Response) => (await response.json()) as string[];
  const lines = async (response: Response) => (await response.text()).split("\n").filter((line) => line !== "");
  const opml = async (response: Response) => opmlFeedUrls(await response.text());
  const added = async (response: Response) => ((await response.json()) as { add: string[] }).add;

  /**
   * Each reader: its request and the feed URLs its answer lists. Its calls count what it makes before its list too
   * (Basic: the app password verified again, as in a cold isolate; the account page: its session; a bearer token:
   * none): an account of 10 000 such feeds is two pages of the exports' 1.5 MiB (src/db/opml.ts), so three calls.
   */
  const readers: [string, () => () => Promise<Response>, (response: Response) => Promise<string[]>][] = [
    ["the simple API's .json", () => get(`/subscriptions/${username}.json`, () => basic), jsonList],
    ["the simple API's .txt", () => get(`/subscriptions/${username}.txt`, () => basic), lines],
    ["the simple API's .opml", () => get(`/subscriptions/${username}.opml`, () => basic), opml],
    ["a device's .json (new device)", () => get(`/subscriptions/${username}/new-phone.json`, () => basic), jsonList],
    ["a device's .txt (new device)", () => get(`/subscriptions/${username}/new-laptop.txt`, () => basic), lines],
    ["a device's .opml (new device)", () => get(`/subscriptions/${username}/new-tablet.opml`, () => basic), opml],
    [
      "gpodder's subscriptions/{u}/{d}.json?since=0",
      () => get(`/api/2/subscriptions/${username}/new-desktop.json?since=0`, () => basic),
      added,
    ],
    ["the Nextcloud subscriptions read", () => get(`${SYNC}/subscriptions`, () => basic), added],
    ["the JSON:API's OPML export", () => get("/v1/subscriptions.opml", () => bearer), opml],
    ["the account page's OPML export", () => () => browser.request("/account/subscriptions.opml"), opml],
  ];
  for (const [name, request, urls] of readers) {
    it(`${name}: every URL once, in order, within 3 calls of at most 16 MiB`, { timeout: 60_000 }, async () => {
      const { calls, largestAnswer } = await measure(request(), urls);
      expect(calls).toBeLessThanOrEqual(3);
      expect(largestAnswer).toBeLessThanOrEqual(16 * 1024 * 1024);
    });
  }
});
