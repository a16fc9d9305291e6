import { sql } from "drizzle-orm";
import { beforeEach, describe, expect, it } from "vitest";
import {
  ALIASES_PER_PODCAST,
  allStatements as aliasStatements,
  canonicalFeedOf,
  KEYS_PER_STATEMENT,
  learnMoveStatements,
  subscriptionsNamedBySql,
} from "../src/db/feed-aliases";
import { statement } from "../src/db/statements";
import { urlKey } from "../src/db/url-key";
import { MAX_HEAD_BYTES } from "../src/feeds/fetch";
import { NEW_FEED_URL_HOPS } from "../src/feeds/moves";
import { FEEDS_PER_ROUND, FETCHES_PER_ROUND, READ_BYTES_PER_ROUND } from "../src/feeds/round";
import { podcastGuidSync } from "../src/podcast-guid";
import type { NamedFeed } from "./feed-documents";
import { at, define, FETCHING, feed, named, requestsFor, subscribe, uniqueNumber } from "./feed-round-calls";
import {
  as,
  type Caller,
  databaseFor,
  listAll,
  queryPlan,
  runCron,
  shardDatabases,
  subscriptionDocument,
  walksOf,
} from "./helpers";

/**
 * Feed moves learned only from the feed itself (docs/API.md §18, "One podcast across its URLs"; src/feeds/moves.ts):
 * the feed round learns that A moved to B from A's own answer (permanent redirects, or an `itunes:new-feed-url` to a
 * live feed of the same podcast) and stores the alias in every database (src/db/feed-aliases.ts), where
 * `canonicalFeedOf` answers it. Every feed is served by the local feed server (test/feed-server.ts).
 */
const GUID = "5d2a1c3e-0000-5000-8000-00000000000a";
const OTHER_GUID = "5d2a1c3e-0000-5000-8000-00000000000b";
const hitsOf = async (url: string) => (await requestsFor(url)).length;

/** What every database answers for `urls` (none learns a move that was not learned). */
async function canonicalEverywhere(urls: string[]): Promise<string[][]> {
  return Promise.all(shardDatabases().map(({ database }) => canonicalFeedOf(database, urls)));
}
const everywhere = (urls: string[]) => shardDatabases().map(() => urls);

/** Pairs in one order, whatever order they were read or written in. */
const sorted = (pairs: [string, string][]) => pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));

/** The alias rows of `urls` in every database: [url, canonical url]. */
async function aliasRows(urls: string[]): Promise<[string, string][]> {
  const rows: [string, string][] = [];
  for (const { database } of shardDatabases()) {
    const { results } = await database
      .prepare(
        `SELECT url, canonical_url AS canonical FROM feed_aliases WHERE url_key IN (${urls.map(() => "?").join(",")})`,
      )
      .bind(...urls.map(urlKey))
      .all<{ url: string; canonical: string }>();
    rows.push(...results.map((row): [string, string] => [row.url, row.canonical]));
  }
  return sorted(rows);
}

/**
 * Subscribes `user` (a new one unless given) to the feeds and runs a round (it fetches only subscribed feeds);
 * the user's database, where the moves of those feeds are learned.
 */
async function roundOf(urls: string[], time = Date.now(), user?: Caller): Promise<D1Database> {
  const subscriber = user ?? (await as(`moves-${uniqueNumber()}`));
  for (const url of urls) {
    // A URL the user's subscription was moved to by an earlier round is subscribed already (409: an alias).
    const response = await subscriber.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), url));
    expect([201, 409]).toContain(response.status);
  }
  await runCron(time, FETCHING);
  return databaseFor(subscriber.userId);
}

beforeEach(async () => {
  for (const { database } of shardDatabases()) await database.prepare("DELETE FROM feeds").run();
});

describe("moves learned from permanent redirects", () => {
  it("moves a feed whose fetch ends through 301s and 308s only at a feed, to where it ends, for every user", async () => {
    const moved = [
      at("/redirect/301/1/feeds/tech.rss"),
      at("/redirect/308/1/feeds/tech.rss"),
      at("/redirect/301/3/feeds/atom.xml"),
      at("/redirect/308/1/redirect/301/2/feeds/tech.rss"),
    ];
    // Users in every database: the move is written to each, whoever subscribed.
    const users = await Promise.all(["moves-ann", "moves-bob", "moves-cy"].map((name) => as(name)));
    for (const user of users) for (const url of moved) await subscribe(user, url);
    await runCron(Date.now(), FETCHING);
    const ends = moved.map((url) => url.replace(/\/redirect\/.*\/feeds\//, "/feeds/"));
    expect(ends[0]).toMatch(/\/feeds\/tech\.rss\?t=/);
    for (const user of users) expect(await canonicalFeedOf(await databaseFor(user.userId), moved)).toEqual(ends);
    // The new URLs are stored under themselves: the table is resolved.
    expect(await canonicalEverywhere(ends)).toEqual(everywhere(ends));
    expect(await aliasRows(ends)).toEqual([]);
    // The podcast is still known under the URL the users store (the round keeps what it fetched).
    const row = await (await databaseFor(users[0].userId))
      .prepare("SELECT status, final_url FROM feeds WHERE url_key = ?")
      .bind(urlKey(moved[0]))
      .first();
    expect(row).toEqual({ status: "ok", final_url: ends[0] });
  });

  it("never moves a feed through a temporary redirect (302, 303, 307), nor a chain with one temporary hop", async () => {
    const kept = [
      at("/redirect/302/1/feeds/tech.rss"),
      at("/redirect/303/1/feeds/tech.rss"),
      at("/redirect/307/1/feeds/tech.rss"),
      at("/redirect/301/1/redirect/302/1/feeds/tech.rss"),
      at("/redirect/302/1/redirect/301/1/feeds/tech.rss"),
      at("/redirect/308/2/redirect/307/1/feeds/tech.rss"),
    ];
    await roundOf(kept);
    for (const url of kept) expect(await hitsOf(url)).toBe(1);
    expect(await canonicalEverywhere(kept)).toEqual(everywhere(kept));
    expect(await aliasRows(kept)).toEqual([]);
  });

  it("moves nothing when the redirects end at no feed: gone, an error, an HTML page, or a loop", async () => {
    const loopBack = named();
    const loopThere = await feed({ status: 301, location: loopBack });
    await define(loopBack, { status: 308, location: loopThere });
    const failing = [
      at("/redirect/301/1/status/410"),
      at("/redirect/301/1/status/404"),
      at("/redirect/308/1/feeds/html"),
      loopBack,
    ];
    await roundOf(failing);
    expect(await canonicalEverywhere(failing)).toEqual(everywhere(failing));
    expect(await aliasRows([...failing, loopThere])).toEqual([]);
    expect(await Promise.all(failing.map(feedOf))).toEqual([
      { status: "gone", error: "HTTP 410 Gone" },
      { status: "failing", error: "HTTP 404" },
      { status: "failing", error: "not a feed: an HTML page" },
      { status: "failing", error: "more than 5 redirects" },
    ]);
  });
});

/** A feed's status and last error, from whichever database holds it. */
async function feedOf(url: string): Promise<unknown> {
  for (const { database } of shardDatabases()) {
    const row = await database
      .prepare("SELECT status, last_error AS error FROM feeds WHERE url_key = ?")
      .bind(urlKey(url))
      .first();
    if (row) return row;
  }
  return null;
}

describe("moves learned from itunes:new-feed-url", () => {
  it("moves a feed to the URL it names when that answers a feed of the same podcast", async () => {
    const sameGuid = await feed({ title: "B", guid: GUID });
    const noGuidThere = await feed({ title: "B2" });
    const guidOnlyThere = await feed({ title: "B3", guid: GUID });
    const redirectsOn = await feed({ title: "B4", guid: GUID });
    const sources = [
      await feed({ guid: GUID, newFeedUrl: sameGuid }),
      await feed({ guid: GUID, newFeedUrl: noGuidThere }),
      await feed({ newFeedUrl: guidOnlyThere }),
      // The named URL itself redirects permanently: the move goes to where that ends.
      await feed({ guid: GUID, newFeedUrl: await feed({ status: 301, location: redirectsOn }) }),
    ];
    const db = await roundOf(sources);
    expect(await canonicalFeedOf(db, sources)).toEqual([sameGuid, noGuidThere, guidOnlyThere, redirectsOn]);
  });

  it("fetches a named URL once a round, and not again when it is one of the round's own feeds", async () => {
    const target = await feed({ title: "B", guid: GUID });
    const sources = [await feed({ guid: GUID, newFeedUrl: target }), await feed({ newFeedUrl: target })];
    const db = await roundOf([...sources, target]);
    expect(await hitsOf(target)).toBe(1);
    expect(await canonicalFeedOf(db, sources)).toEqual([target, target]);
  });

  it("takes a named URL that redirects temporarily as named, and a feed naming itself as no move", async () => {
    const behind = await feed({ title: "behind a 302", guid: GUID });
    const temporary = await feed({ status: 302, location: behind });
    const source = await feed({ guid: GUID, newFeedUrl: temporary });
    const self = named();
    await define(self, { guid: GUID, newFeedUrl: self });
    const db = await roundOf([source, self]);
    expect(await canonicalFeedOf(db, [source, self])).toEqual([temporary, self]);
  });

  it("moves nothing to another podcast, to a gone feed, to an error or to what is not a feed", async () => {
    const other = await feed({ title: "Another show", guid: OTHER_GUID });
    const sources = [
      await feed({ guid: GUID, newFeedUrl: other }),
      await feed({ guid: GUID, newFeedUrl: await feed({ status: 410 }) }),
      await feed({ guid: GUID, newFeedUrl: at("/status/404") }),
      await feed({ guid: GUID, newFeedUrl: at("/feeds/html") }),
      await feed({ guid: GUID, newFeedUrl: at("/feeds/doctype.rss") }),
      await feed({ guid: GUID, newFeedUrl: at("/redirect/301/1/status/410") }),
    ];
    await roundOf(sources);
    expect(await canonicalEverywhere(sources)).toEqual(everywhere(sources));
    expect(await aliasRows(sources)).toEqual([]);
    // The named URL was fetched (once) and found wanting; the feed itself is known as it answered.
    expect(await hitsOf(other)).toBe(1);
    // The heads the parse share took (the others wait for the next round) named their new URLs, which stay unread.
    const parsed = (await Promise.all(sources.map(feedOf))).filter(
      (row) => (row as { status: string }).status === "ok",
    );
    expect(parsed.length).toBeGreaterThanOrEqual(1);
  });

  it("follows a chain of named URLs to its end, every podcast:guid on the way the same", async () => {
    const end = await feed({ title: "C", guid: GUID });
    const middle = await feed({ title: "B", newFeedUrl: end });
    const chain = await feed({ guid: GUID, newFeedUrl: middle });
    // A chain whose last hop is another podcast ends at the hop before.
    const strangerEnd = await feed({ guid: OTHER_GUID });
    const strangerMiddle = await feed({ newFeedUrl: strangerEnd });
    const toStranger = await feed({ guid: GUID, newFeedUrl: strangerMiddle });
    // Longer than a round follows: it ends at the last URL it fetched.
    const hops = [named()];
    for (let n = 0; n < NEW_FEED_URL_HOPS + 1; n++) hops.push(named());
    for (const [n, url] of hops.entries()) await define(url, { guid: GUID, newFeedUrl: hops[n + 1] });
    const db = await roundOf([chain, toStranger, hops[0]]);
    expect(await canonicalFeedOf(db, [chain, toStranger, hops[0]])).toEqual([
      end,
      strangerMiddle,
      hops[NEW_FEED_URL_HOPS],
    ]);
  });

  it("moves nothing by named URLs that lead back: two feeds naming each other, or a named URL redirecting back", async () => {
    const a = named();
    const b = await feed({ guid: GUID, newFeedUrl: a });
    await define(a, { guid: GUID, newFeedUrl: b });
    const c = named();
    const d = await feed({ guid: GUID, newFeedUrl: await feed({ status: 301, location: c }) });
    await define(c, { guid: GUID, newFeedUrl: d });
    // Three in a ring.
    const [x, y, z] = [named(), named(), named()];
    await define(x, { newFeedUrl: y });
    await define(y, { newFeedUrl: z });
    await define(z, { newFeedUrl: x });
    await roundOf([a, b, c, x]);
    expect(await canonicalEverywhere([a, b, c, x])).toEqual(everywhere([a, b, c, x]));
    expect(await aliasRows([a, b, c, d, x, y, z])).toEqual([]);
  });

  it("keeps a permanent redirect's move when the feed it ends at names the old URL back", async () => {
    const source = named();
    const target = await feed({ guid: GUID, newFeedUrl: source });
    await define(source, { status: 301, location: target });
    const db = await roundOf([source]);
    expect(await canonicalFeedOf(db, [source])).toEqual([target]);
  });
});

describe("the round's budget", () => {
  it("fetches the named URLs out of the round's own requests, and moves no feed to a URL it did not fetch", async () => {
    // Every feed of a full round names a chain of NEW_FEED_URL_HOPS more: more requests than a round makes.
    const chains = Array.from({ length: FEEDS_PER_ROUND }, () =>
      Array.from({ length: NEW_FEED_URL_HOPS + 1 }, () => named()),
    );
    for (const chain of chains) {
      for (const [n, url] of chain.entries()) await define(url, { guid: GUID, newFeedUrl: chain[n + 1] });
    }
    expect(FEEDS_PER_ROUND * (NEW_FEED_URL_HOPS + 1)).toBeGreaterThan(FETCHES_PER_ROUND);
    const db = await roundOf(chains.map((chain) => chain[0]));
    const hits = await Promise.all(chains.map((chain) => Promise.all(chain.map(hitsOf))));
    expect(hits.flat().reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(FETCHES_PER_ROUND);
    // Every feed of the round was fetched; a move, when the budget allowed one, goes to a URL that answered.
    expect(hits.map((each) => each[0])).toEqual(chains.map(() => 1));
    const canonical = await canonicalFeedOf(
      db,
      chains.map((chain) => chain[0]),
    );
    for (const [n, chain] of chains.entries()) {
      const end = chain.indexOf(canonical[n]);
      expect(end).toBeGreaterThanOrEqual(0);
      for (const hop of chain.slice(0, end + 1)) expect(await hitsOf(hop)).toBe(1);
    }
    // Hop by hop across the round's feeds: what is left after the round's own fetches takes each of them as far as
    // it goes (here two hops each), instead of one feed's whole chain; the rest is learned at their next fetch.
    const hops = Math.floor((FETCHES_PER_ROUND - FEEDS_PER_ROUND) / FEEDS_PER_ROUND);
    expect(canonical).toEqual(chains.map((chain) => chain[Math.min(hops, NEW_FEED_URL_HOPS)]));
  });

  it("reads the named URLs only out of the bytes the round's own fetches left", async () => {
    // A full round of heads as long as a fetch reads: the round's bytes are spent, so no named URL is read.
    expect(FEEDS_PER_ROUND * MAX_HEAD_BYTES).toBeGreaterThanOrEqual(READ_BYTES_PER_ROUND);
    const targets = await Promise.all(Array.from({ length: FEEDS_PER_ROUND }, () => feed({ guid: GUID })));
    const sources = await Promise.all(
      targets.map((target) => feed({ guid: GUID, newFeedUrl: target, padding: MAX_HEAD_BYTES })),
    );
    await roundOf(sources);
    // The heads the parse share took (the others wait for the next round) named their new URLs, which stay unread.
    const parsed = (await Promise.all(sources.map(feedOf))).filter(
      (row) => (row as { status: string }).status === "ok",
    );
    expect(parsed.length).toBeGreaterThanOrEqual(1);
    expect(await Promise.all(targets.map(hitsOf))).toEqual(targets.map(() => 0));
    expect(await canonicalEverywhere(sources)).toEqual(everywhere(sources));
  });
});

describe("a popular feed's subscribers", () => {
  it("are moved by nothing but their feed's own answer: not by a feed claiming its podcast:guid, nor by one naming it", async () => {
    const popular = await feed({ title: "Popular", guid: GUID });
    const fans = await Promise.all(["fan-1", "fan-2", "fan-3", "fan-4"].map((name) => as(`moves-${name}`)));
    for (const fan of fans) await subscribe(fan, popular);
    const before = await Promise.all(fans.map(async (fan) => (await fan.get("/v1/subscriptions")).text()));
    // The impostor claims the popular feed's podcast:guid and names itself; a second one names the popular feed as
    // its own new URL, and a third redirects to it permanently (each moves only its own subscribers).
    const impostor = named();
    await define(impostor, { title: "Popular (real one, promise)", guid: GUID, newFeedUrl: impostor });
    const namer = await feed({ title: "Namer", guid: GUID, newFeedUrl: popular });
    const redirector = await feed({ status: 301, location: popular });
    const attacker = await as("moves-attacker");
    for (const url of [impostor, namer, redirector]) await subscribe(attacker, url);
    await runCron(Date.now(), FETCHING);

    expect(await canonicalEverywhere([popular, impostor])).toEqual(everywhere([popular, impostor]));
    expect(await canonicalFeedOf(await databaseFor(attacker.userId), [namer, redirector])).toEqual([popular, popular]);
    expect(await aliasRows([popular])).toEqual([]);
    const after = await Promise.all(fans.map(async (fan) => (await fan.get("/v1/subscriptions")).text()));
    expect(after).toEqual(before);
  });

  it("stay when their feed names another podcast, a gone feed, or a feed that points back", async () => {
    const popular = named();
    const pointsBack = await feed({ guid: GUID, newFeedUrl: popular });
    const attempts: NamedFeed[] = [
      { guid: GUID, newFeedUrl: await feed({ guid: OTHER_GUID, title: "Spam" }) },
      { guid: GUID, newFeedUrl: await feed({ status: 410 }) },
      { guid: GUID, newFeedUrl: pointsBack },
    ];
    const fan = await as("moves-fan-stays");
    await subscribe(fan, popular);
    let time = Date.now();
    for (const attempt of attempts) {
      await define(popular, { title: "Popular", ...attempt });
      await runCron(time, FETCHING);
      expect(await canonicalEverywhere([popular])).toEqual(everywhere([popular]));
      // Due again: the next attempt is fetched at the next run.
      await (await databaseFor(fan.userId))
        .prepare("UPDATE feeds SET next_fetch_at = 0 WHERE url_key = ?")
        .bind(urlKey(popular))
        .run();
      time += 10 * 60 * 1000;
    }
    expect(await aliasRows([popular])).toEqual([]);
  });
});

describe("the aliases stay resolved", () => {
  it("moves a feed's aliases on when it moves on, and drops the alias of a URL that answers as itself again", async () => {
    const a = named();
    const b = named();
    const c = named();
    await define(a, { guid: GUID, newFeedUrl: b });
    await define(b, { guid: GUID });
    const user = await as("moves-resolved");
    const time = Date.now();
    const db = await roundOf([a], time, user);
    expect(await aliasRows([a, b, c])).toEqual([[a, b]]);

    // B moves on to C: A's alias follows, so every lookup stays one row.
    await define(b, { guid: GUID, newFeedUrl: c });
    await define(c, { guid: GUID });
    await roundOf([b], time + 10 * 60 * 1000, user);
    expect(await aliasRows([a, b, c])).toEqual(
      sorted([
        [a, c],
        [b, c],
      ]),
    );
    expect(await canonicalFeedOf(db, [a, b, c])).toEqual([c, c, c]);

    // The publisher moves back to A, which answers as itself: A is canonical again, and so is every URL's lookup.
    await define(c, { guid: GUID, newFeedUrl: a });
    await define(a, { guid: GUID });
    await roundOf([c], time + 20 * 60 * 1000, user);
    expect(await aliasRows([a, b, c])).toEqual(
      sorted([
        [b, a],
        [c, a],
      ]),
    );
    expect(await canonicalFeedOf(db, [a, b, c])).toEqual([a, a, a]);
  });
});

describe("aliases are kept", () => {
  it("by a feed that answers as itself later: a move to it goes on to where its alias leads", async () => {
    const b = named();
    const c = await feed({ guid: GUID });
    await define(b, { guid: GUID, newFeedUrl: c });
    const user = await as("moves-kept");
    const time = Date.now();
    const db = await roundOf([b], time, user);
    expect(await canonicalFeedOf(db, [b])).toEqual([c]);
    // B's old host serves a stale copy that names no move any more; a third feed names B as its new URL.
    await define(b, { guid: GUID });
    const x = await feed({ guid: GUID, newFeedUrl: b });
    await roundOf([x], time + 10 * 60 * 1000, user);
    expect(await canonicalFeedOf(db, [b, x])).toEqual([c, c]);
    expect(await aliasRows([b, c, x])).toEqual(
      sorted([
        [b, c],
        [x, c],
      ]),
    );
  });

  it("only in the databases whose users name the feed, and forgotten once no active subscription names either URL", async () => {
    const b = await feed({ guid: GUID });
    const a = await feed({ guid: GUID, newFeedUrl: b });
    const user = await as("moves-forgotten");
    const subscribedToA = await subscribe(user, a);
    const time = Date.now();
    const db = await roundOf([], time, user);
    expect(await canonicalFeedOf(db, [a])).toEqual([b]);
    for (const { database } of shardDatabases()) {
      if (database !== db) expect(await canonicalFeedOf(database, [a])).toEqual([a]);
    }
    const dueNow = (url: string) =>
      db.prepare("UPDATE feeds SET next_fetch_at = 0 WHERE url_key = ?").bind(urlKey(url)).run();

    // The round moved the user's subscription to B: when A comes due it is forgotten, and its alias kept (B is named).
    expect(await listAll(user)).toEqual(new Map([[subscribedToA, b]]));
    const subscribedToB = subscribedToA;
    await dueNow(a);
    await runCron(time + 10 * 60 * 1000, FETCHING);
    expect(await db.prepare("SELECT 1 FROM feeds WHERE url_key = ?").bind(urlKey(a)).first()).toBeNull();
    expect(await canonicalFeedOf(db, [a])).toEqual([b]);

    // Nothing names either any more: forgetting B takes the alias with it.
    expect((await user.delete(`/v1/subscriptions/${subscribedToB}`)).status).toBe(204);
    await dueNow(b);
    await runCron(time + 20 * 60 * 1000, FETCHING);
    expect(await aliasRows([a, b])).toEqual([]);
  });
});

describe("the podcast:guid of an alias's canonical URL (the guid its states were sent under before the move)", () => {
  it("is the final URL's, when the target had moved on and when the URLs that moved to `from` move on with it", async () => {
    const db = await databaseFor((await as(`alias-guid-${uniqueNumber()}`)).userId);
    const base = `https://alias-guid-${uniqueNumber()}.example`;
    const [a, b, c, d] = ["a", "b", "c", "d"].map((name) => `${base}/${name}`);
    const learn = (from: string, to: string) =>
      db.batch(learnMoveStatements(db, { from, to, final: true }, Date.now()));
    const guids = async () => {
      const { results } = await db
        .prepare(
          `SELECT url, canonical_url AS canonical, canonical_url_guid AS guid FROM feed_aliases
           WHERE url_key IN (?, ?, ?) ORDER BY url`,
        )
        .bind(urlKey(a), urlKey(b), urlKey(c))
        .all<{ url: string; canonical: string; guid: string }>();
      return results.map((row) => [row.url, row.canonical, row.guid]);
    };
    // B moved to C first; then A -> B is learned: A's target is C, and so is its guid.
    await learn(b, c);
    await learn(a, b);
    expect(await guids()).toEqual([
      [a, c, podcastGuidSync(c)],
      [b, c, podcastGuidSync(c)],
    ]);
    // C moves to D: A and B move on with it, guid and all.
    await learn(c, d);
    expect(await guids()).toEqual([
      [a, d, podcastGuidSync(d)],
      [b, d, podcastGuidSync(d)],
      [c, d, podcastGuidSync(d)],
    ]);
  });
});

describe("the aliases of one podcast are bounded", () => {
  let database: D1Database | undefined;
  const db = () => database as D1Database;
  const learn = (moves: [string, string][]) =>
    db().batch(moves.flatMap(([from, to]) => learnMoveStatements(db(), { from, to, final: true }, Date.now())));
  beforeEach(async () => {
    user = await as(`bounded-${uniqueNumber()}`);
    database = await databaseFor(user.userId);
  });
  let user: Caller;
  const lookup = statement(
    subscriptionsNamedBySql(sql.placeholder("userId"), sql.placeholder("url"), sql.placeholder("urlKey")),
  );

  it("learns no move past ALIASES_PER_PODCAST URLs, one by one or by a podcast's aliases moving on, and a lookup's rows stay bounded", async () => {
    const base = `https://bounded-${uniqueNumber()}.example`;
    const target = `${base}/b`;
    const sources = Array.from({ length: ALIASES_PER_PODCAST + 1 }, (_, n) => `${base}/a${n}`);
    // One batch of ALIASES_PER_PODCAST + 1 moves to the target: the last one is refused.
    await learn(sources.map((from): [string, string] => [from, target]));
    const answers = await canonicalFeedOf(db(), sources);
    expect(answers.slice(0, ALIASES_PER_PODCAST)).toEqual(sources.slice(0, ALIASES_PER_PODCAST).map(() => target));
    expect(answers[ALIASES_PER_PODCAST]).toBe(sources[ALIASES_PER_PODCAST]);
    // A podcast with an alias of its own cannot move there either: neither it nor its alias moves.
    const [other, otherAlias] = [`${base}/c`, `${base}/d`];
    await learn([[otherAlias, other]]);
    await learn([[other, target]]);
    expect(await canonicalFeedOf(db(), [other, otherAlias])).toEqual([other, other]);
    // Below the bound the same move is learned: the refusal is the bound's.
    const freeTarget = `${base}/e`;
    await learn([[other, freeTarget]]);
    expect(await canonicalFeedOf(db(), [other, otherAlias])).toEqual([freeTarget, freeTarget]);

    // Which subscription the target names reads its aliases and the user's rows under each: bounded by the aliases.
    const { meta } = await lookup.bind(db(), { userId: user.userId, url: target, urlKey: urlKey(target) }).all();
    expect(meta.rows_read).toBeLessThanOrEqual(2 * ALIASES_PER_PODCAST);
  });
});

describe("canonicalFeedOf", () => {
  it("answers each URL in order, itself when it never moved, duplicates too, and nothing for none", async () => {
    const target = await feed({ guid: GUID });
    const moved = await feed({ guid: GUID, newFeedUrl: target });
    const db = await roundOf([moved]);
    const plain = at("/feeds/never-moved");
    expect(await canonicalFeedOf(db, [plain, moved, plain, moved])).toEqual([plain, target, plain, target]);
    expect(await canonicalFeedOf(db, [])).toEqual([]);
  });

  it("answers a row whose key another URL shares as no alias of this one", async () => {
    const db = shardDatabases()[0].database;
    const url = at("/feeds/collides");
    await db
      .prepare(
        "INSERT INTO feed_aliases (url_key, url, canonical_url, canonical_key, learned_at) VALUES (?, ?, ?, ?, 0)",
      )
      .bind(urlKey(url), `${url}-another`, "https://elsewhere.example/feed", urlKey("https://elsewhere.example/feed"))
      .run();
    expect(await canonicalFeedOf(db, [url])).toEqual([url]);
  });

  it("takes more URLs than one statement holds (one batch), and reads at most two rows per URL", async () => {
    const target = await feed({ guid: GUID });
    const moved = await feed({ guid: GUID, newFeedUrl: target });
    const db = await roundOf([moved]);
    const many = Array.from({ length: KEYS_PER_STATEMENT + 5 }, (_, n) => `https://many.example/${n}`);
    const answer = await canonicalFeedOf(db, [...many, moved]);
    expect(answer).toEqual([...many, target]);
    for (const keys of [
      [urlKey(moved)],
      many.slice(0, 100).map(urlKey),
      [...many.slice(0, 99).map(urlKey), urlKey(moved)],
    ]) {
      const { meta } = await aliasStatements.aliases.bind(db, { keys: JSON.stringify(keys) }).all();
      // D1 counts the sent key and its primary-key probe, found or not: two rows per URL, however many aliases.
      expect(meta.rows_read).toBeLessThanOrEqual(2 * keys.length);
    }
  });

  it("scans no table: every statement of the aliases finds its rows by a key", async () => {
    const db = shardDatabases()[0].database;
    for (const [name, statement] of Object.entries(aliasStatements)) {
      const parameters = Math.max(0, ...[...statement.sql.matchAll(/\?(\d+)/g)].map((match) => Number(match[1])));
      // The round's application of moves walks the partial index of the aliases still moving, and only that: it
      // holds the moves with subscriptions left to change, each cleared once none is left. The merge statements also
      // scan their own CTEs (pairs, away_states, best), which hold at most MERGED_SUBSCRIPTIONS_PER_STATEMENT users'
      // rows of the one feed: named, they are not the one-letter subqueries this check rejects.
      const plan = (await queryPlan(db, statement.sql, Array(parameters).fill(1))).filter(
        (line) => !/^SCAN m USING INDEX feed_aliases_moving$/.test(line),
      );
      expect(walksOf(plan, ["feed_aliases"]), `${name}\n${plan.join("\n")}`).toEqual([]);
    }
  });
});
