import { beforeEach, describe, expect, it } from "vitest";
import { CLAIM_MS, dueFeeds, allStatements as feedStatements, findPodcast } from "../src/db/feeds";
import { urlKey } from "../src/db/url-key";
import { FETCH_TIMEOUT_MS } from "../src/feeds/fetch";
import { FEEDS_PER_ROUND, GONE_AFTER_MS, HEAD_CHARS_PER_ROUND, MAX_BACKOFF_MS, REFRESH_MS } from "../src/feeds/round";
import { TECH_FACTS } from "./feed-documents";
import { at, FETCHING, feedServer, requestsFor, subscribe } from "./feed-round-calls";
import { as, databaseFor, queryPlan, runCron, shardDatabases, subscriptionDocument, walksOf } from "./helpers";

/**
 * The feed round (docs/API.md §18, src/feeds/round.ts) that the scheduled handler runs: which feeds it fetches,
 * how often, what it keeps, and that it never touches what the sync APIs answer. Every feed is served by the local
 * feed server (test/feed-server.ts) on a loopback port.
 */
const HOUR = 60 * 60 * 1000;
const server = feedServer;
const hitsOf = requestsFor;

/** The feed's row in the user's database (what the round keeps). */
async function feedRow(userId: string, url: string) {
  return (await databaseFor(userId))
    .prepare("SELECT * FROM feeds WHERE url_key = ?")
    .bind(urlKey(url))
    .first<Record<string, unknown>>();
}

// Storage is per file: each test starts with no feed known, so no earlier test's feed takes its round's places.
beforeEach(async () => {
  for (const { database } of shardDatabases()) await database.prepare("DELETE FROM feeds").run();
});

describe("the feed round", () => {
  it("fetches a new feed in the next run, once however many users subscribe to it, and keeps its facts", async () => {
    const url = at("/feeds/tech.rss");
    const users = await Promise.all(["round-ann", "round-bob", "round-cy"].map((name) => as(name)));
    const guids = await Promise.all(users.map((user) => subscribe(user, url)));
    const pending = await findPodcast(await databaseFor(users[0].userId), users[0].userId, guids[0]);
    expect(pending).toMatchObject({ status: "pending", title: null });

    const time = Date.now();
    await runCron(time, FETCHING);
    expect(await hitsOf(url)).toHaveLength(1);
    for (const [n, user] of users.entries()) {
      expect(await findPodcast(await databaseFor(user.userId), user.userId, guids[n])).toEqual({
        ...TECH_FACTS,
        fetchedAt: new Date(time).toISOString(),
        status: "ok",
      });
    }
    const [request] = await hitsOf(url);
    expect(request.headers["user-agent"]).toMatch(/^podcast-subscriptions feed fetcher/);
    // Not due again within the day: the next runs fetch nothing.
    await runCron(time + 10 * 60 * 1000, FETCHING);
    expect(await hitsOf(url)).toHaveLength(1);
  });

  it("fetches every feed subscribed at once within two runs", async () => {
    const user = await as("round-many");
    const urls = Array.from({ length: FEEDS_PER_ROUND + 3 }, () => at("/feeds/atom.xml"));
    for (const url of urls) await subscribe(user, url);
    const time = Date.now();
    await runCron(time, FETCHING);
    const fetchedFirst = (await Promise.all(urls.map(hitsOf))).filter((hits) => hits.length === 1).length;
    expect(fetchedFirst).toBe(FEEDS_PER_ROUND);
    await runCron(time + 10 * 60 * 1000, FETCHING);
    expect((await Promise.all(urls.map(hitsOf))).map((hits) => hits.length)).toEqual(urls.map(() => 1));
    for (const url of urls)
      expect(await feedRow(user.userId, url)).toMatchObject({ status: "ok", title: "Atom Audio Notes" });
  });

  it("asks again daily with the last answer's validators: a 304 changes nothing but when it was fetched", async () => {
    const user = await as("round-conditional");
    const name = `daily-${Date.now()}`;
    const url = `${server}/conditional/${name}`;
    const guid = await subscribe(user, url);
    const time = Date.now();
    await runCron(time, FETCHING);
    const first = await feedRow(user.userId, url);
    expect(first).toMatchObject({ status: "ok", title: `Conditional ${name} v1`, etag: '"v1"' });

    await runCron(time + REFRESH_MS - 60_000, FETCHING);
    expect(await hitsOf(url)).toHaveLength(1);
    await runCron(time + REFRESH_MS, FETCHING);
    const [, conditional] = await hitsOf(url);
    expect(conditional.headers["if-none-match"]).toBe('"v1"');
    expect(await feedRow(user.userId, url)).toEqual({
      ...first,
      fetched_at: time + REFRESH_MS,
      next_fetch_at: time + 2 * REFRESH_MS,
    });
    expect(REFRESH_MS).toBeLessThanOrEqual(24 * HOUR);

    // The publisher changes the feed: the next daily fetch has the new title.
    await fetch(`${server}/_version/${name}`, { method: "POST" });
    await runCron(time + 2 * REFRESH_MS, FETCHING);
    const podcast = await findPodcast(await databaseFor(user.userId), user.userId, guid);
    expect(podcast?.title).toBe(`Conditional ${name} v2`);
  });

  it("keeps what it knew when a fetch fails, retries after 1 hour doubling up to 7 days, and calls 30 days of failures gone", async () => {
    const user = await as("round-failing");
    const url = at("/feeds/tech.rss");
    const guid = await subscribe(user, url);
    const time = Date.now();
    await runCron(time, FETCHING);
    const known = await feedRow(user.userId, url);

    // The host starts failing: the same URL now answers 503 (the subscription moves to a failing URL of the server).
    const failing = url.replace("/feeds/tech.rss", "/status/503");
    await (await databaseFor(user.userId))
      .prepare("UPDATE feeds SET url = ?, next_fetch_at = 0 WHERE url_key = ?")
      .bind(failing, urlKey(url))
      .run();
    // The round fetches the URL a subscription stores, not the row's: point the subscription there too, as a PATCH.
    const moved = await user.patch(`/v1/subscriptions/${guid}`, {
      data: { type: "subscription", id: guid, attributes: { feedUrl: failing } },
    });
    expect(moved.status).toBe(200);
    await (await databaseFor(user.userId))
      .prepare("UPDATE feeds SET title = ?, status = 'ok', url = ?, fetched_at = ? WHERE url_key = ?")
      .bind(known?.title, failing, time, urlKey(failing))
      .run();

    let when = time + 1000;
    const waits: number[] = [];
    for (let n = 0; n < 10; n++) {
      await runCron(when, FETCHING);
      const row = await feedRow(user.userId, failing);
      expect(row).toMatchObject({ status: "failing", last_error: "HTTP 503", title: "Tech Talk Weekly" });
      waits.push((row?.next_fetch_at as number) - when);
      when = row?.next_fetch_at as number;
    }
    expect(waits).toEqual(
      [1, 2, 4, 8, 16, 32, 64, 128, 168, 168].map((hours) => Math.min(hours * HOUR, MAX_BACKOFF_MS)),
    );
    // 30 days after the first failure, the next failure marks it gone; it stays subscribed, its facts kept.
    await runCron(time + 1000 + GONE_AFTER_MS, FETCHING);
    expect(await feedRow(user.userId, failing)).toMatchObject({ status: "gone", title: "Tech Talk Weekly" });
    expect((await user.get(`/v1/subscriptions/${guid}`)).status).toBe(200);
  });

  it("marks a feed gone at its first 410, and says why a body is not a feed", async () => {
    const user = await as("round-gone");
    const gone = at("/status/410");
    const html = at("/feeds/html");
    const doctype = at("/feeds/doctype.rss");
    const entities = at("/feeds/entities.rss");
    for (const url of [gone, html, doctype, entities]) await subscribe(user, url);
    await runCron(Date.now(), FETCHING);
    expect(await feedRow(user.userId, gone)).toMatchObject({ status: "gone", last_error: "HTTP 410 Gone" });
    expect(await feedRow(user.userId, html)).toMatchObject({
      status: "failing",
      last_error: "not a feed: an HTML page",
    });
    for (const url of [doctype, entities]) {
      expect(await feedRow(user.userId, url)).toMatchObject({
        status: "failing",
        title: null,
        last_error: "not a feed: XML with a DOCTYPE or an entity declaration",
      });
    }
  });

  it("keeps a hostile feed's text clean and bounded", async () => {
    const user = await as("round-hostile");
    const hostile = at("/feeds/hostile.rss");
    const huge = at("/feeds/huge-title.rss");
    const hostileGuid = await subscribe(user, hostile);
    const hugeGuid = await subscribe(user, huge);
    await runCron(Date.now(), FETCHING);
    const db = await databaseFor(user.userId);
    expect(await findPodcast(db, user.userId, hostileGuid)).toMatchObject({
      status: "ok",
      title: "Evil Title",
      author: "Mallory",
      description: "Plain words",
      imageUrl: null,
      siteUrl: null,
      podcastGuid: null,
    });
    const long = await findPodcast(db, user.userId, hugeGuid);
    expect(long?.status).toBe("ok");
    expect(Array.from(long?.title ?? "").length).toBeGreaterThan(490);
    expect(Array.from(long?.title ?? "").length).toBeLessThanOrEqual(500);
    expect(long?.title).toMatch(/^Long title Long title/);
  });

  it("parses the short heads of a round first and leaves long ones past its share for the next run", async () => {
    const user = await as("round-budget");
    const long = [at("/feeds/endless.rss"), at("/feeds/endless.rss"), at("/feeds/endless.rss")];
    const short = [at("/feeds/tech.rss"), at("/feeds/atom.xml")];
    for (const url of [...long, ...short]) await subscribe(user, url);
    const time = Date.now();
    await runCron(time, FETCHING);
    for (const url of short) expect(await feedRow(user.userId, url)).toMatchObject({ status: "ok", last_error: null });
    const statuses = async () => Promise.all(long.map(async (url) => (await feedRow(user.userId, url))?.status));
    // Each long head is 64 KiB: the round's share (HEAD_CHARS_PER_ROUND) holds one beside the short ones.
    const first = await statuses();
    expect(first.filter((status) => status === "ok").length).toBeGreaterThanOrEqual(1);
    expect(first.filter((status) => status === "pending").length).toBeGreaterThanOrEqual(1);
    expect(HEAD_CHARS_PER_ROUND).toBeLessThan(long.length * 64 * 1024);
    // Left due, not failed: the next runs take them first.
    for (let run = 1; run <= 2; run++) await runCron(time + run * 10 * 60 * 1000, FETCHING);
    expect(await statuses()).toEqual(long.map(() => "ok"));
    for (const url of long) expect(await feedRow(user.userId, url)).toMatchObject({ title: "Endless", failures: 0 });
  });

  it("claims a round's feeds for an hour: a run stopped before its writes does not hold back the next ones", async () => {
    const user = await as("round-claim");
    const url = at("/feeds/tech.rss");
    await subscribe(user, url);
    const db = await databaseFor(user.userId);
    const time = Date.now();
    // The round's read, as a run the Free plan stops right after it would leave it.
    expect((await dueFeeds(db, time, FEEDS_PER_ROUND)).feeds.map((feed) => feed.url)).toEqual([url]);
    expect((await dueFeeds(db, time + 10 * 60 * 1000, FEEDS_PER_ROUND)).feeds).toEqual([]);
    await runCron(time + 10 * 60 * 1000, FETCHING);
    expect(await hitsOf(url)).toEqual([]);
    await runCron(time + CLAIM_MS, FETCHING);
    expect(await feedRow(user.userId, url)).toMatchObject({ status: "ok", failures: 0 });
  });

  it("does not wait for a host that never answers to fetch the others", async () => {
    const user = await as("round-hang");
    const hang = at("/hang");
    const tech = at("/feeds/tech.rss");
    await subscribe(user, hang);
    await subscribe(user, tech);
    await runCron(Date.now(), FETCHING);
    expect(await feedRow(user.userId, tech)).toMatchObject({ status: "ok" });
    expect(await feedRow(user.userId, hang)).toMatchObject({
      status: "failing",
      last_error: `no complete answer within ${FETCH_TIMEOUT_MS / 1000} s`,
    });
  });

  it("forgets a feed no active subscription names any more", async () => {
    const user = await as("round-forget");
    const url = at("/feeds/tech.rss");
    const guid = await subscribe(user, url);
    expect((await user.delete(`/v1/subscriptions/${guid}`)).status).toBe(204);
    await runCron(Date.now(), FETCHING);
    expect(await hitsOf(url)).toEqual([]);
    expect(await feedRow(user.userId, url)).toBeNull();
    // Subscribing again makes it pending again, and the next run fetches it.
    await user.post("/v1/subscriptions", subscriptionDocument(guid, url));
    expect(await feedRow(user.userId, url)).toMatchObject({ status: "pending" });
    await runCron(Date.now(), FETCHING);
    expect(await feedRow(user.userId, url)).toMatchObject({ status: "ok" });
  });

  it("fetches nothing with FEED_FETCH=off, and nothing on loopback without FEED_FETCH_ALLOW_PRIVATE", async () => {
    const user = await as("round-off");
    const url = at("/feeds/tech.rss");
    await subscribe(user, url);
    await runCron(Date.now(), { ...FETCHING, FEED_FETCH: "off" });
    expect(await hitsOf(url)).toEqual([]);
    expect(await feedRow(user.userId, url)).toMatchObject({ status: "pending", url: null });

    await runCron(Date.now(), { FEED_FETCH: "", FEED_FETCH_ALLOW_PRIVATE: "" });
    expect(await hitsOf(url)).toEqual([]);
    expect(await feedRow(user.userId, url)).toMatchObject({
      status: "failing",
      last_error: "a private or loopback address is not fetched",
    });
  });

  it("leaves every sync answer as it was when every feed host is down", async () => {
    const user = await as("round-down");
    // A host that answers only errors, and one that never answers. (A port nothing listens on fails the same way,
    // but workerd prints a stack for every refused connection.)
    const closed = at("/status/503");
    const silent = at("/hang");
    const guids = [await subscribe(user, closed), await subscribe(user, silent)];
    const reads = async () =>
      Promise.all(
        [
          "/v1/subscriptions",
          `/v1/subscriptions/${guids[0]}`,
          "/v1/subscriptions?filter[since]=0",
          "/v1/episodes?filter[since]=0",
        ].map(async (path) => {
          const response = await user.get(path);
          return { path, status: response.status, etag: response.headers.get("ETag"), body: await response.text() };
        }),
      );
    const before = await reads();
    await runCron(Date.now(), FETCHING);
    expect(await feedRow(user.userId, closed)).toMatchObject({ status: "failing" });
    expect(await feedRow(user.userId, silent)).toMatchObject({ status: "failing" });
    expect(await reads()).toEqual(before);
  });
});

describe("the feed round's statements", () => {
  it("scan no table: the due feeds by their index, each subscription URL and each write by a key", async () => {
    const db = shardDatabases()[0].database;
    for (const [name, statement] of Object.entries(feedStatements)) {
      const parameters = Math.max(0, ...[...statement.sql.matchAll(/\?(\d+)/g)].map((match) => Number(match[1])));
      const plan = await queryPlan(db, statement.sql, Array(parameters).fill(1));
      expect(walksOf(plan, ["feeds", "subscriptions", "user_stats"]), `${name}\n${plan.join("\n")}`).toEqual([]);
    }
  });
});
