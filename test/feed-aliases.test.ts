import { describe, expect, it } from "vitest";
import { database } from "../src/db/database";
import { MOVED_SUBSCRIPTIONS_PER_STATEMENT } from "../src/db/feed-aliases";
import { urlKey } from "../src/db/url-key";
import { runFeedRound } from "../src/feeds/round";
import { at, FETCHING, subscribe, uniqueNumber } from "./feed-round-calls";
import { as, type Caller, databaseFor, listAll, runCron, shardDatabases, syncFrom } from "./helpers";
import { type Changes, gpodder, json, mint, nextcloud } from "./nextcloud-client";

/**
 * Aliases in every API (docs/API.md §18, "One podcast across its URLs"; issue 37 point 2): the feed round applies a
 * learned move A -> B to the subscriptions of A (src/db/feed-aliases.ts, `applyMovesStatements`), and every API reads
 * a URL through the same rule. The moves are learned from the local feed server's permanent redirects.
 */

/** A feed URL that answers a `301` to a feed: the round learns that it moved; [A, B]. */
function movingFeed(): [string, string] {
  const from = at("/redirect/301/1/feeds/tech.rss");
  return [from, from.replace("/redirect/301/1/feeds/", "/feeds/")];
}

/** Waits until the database's clock is past the second it reads now (gpodder's `since` is in seconds). */
async function nextSecond(db: D1Database): Promise<void> {
  const clock = async () => (await db.prepare("SELECT unixepoch() AS now").first<{ now: number }>())?.now ?? 0;
  const start = await clock();
  while ((await clock()) <= start) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** The sync token of the user's change feed now. */
async function tokenNow(user: Caller): Promise<string> {
  return (await syncFrom(user, "0")).token;
}

describe("a learned move applied to the subscriptions", () => {
  it("changes A to B as a PATCH would: one change, guid and userSubscribedAt kept; gpodder and Nextcloud incremental reads show neither remove nor add", async () => {
    const user = await as(`aliases-move-${uniqueNumber()}`);
    const [from, to] = movingFeed();
    const guid = await subscribe(user, from);
    const before = (await (await user.get(`/v1/subscriptions/${guid}`)).json()) as {
      data: { attributes: { userSubscribedAt: string } };
    };
    const app = await mint(user);
    const gp = gpodder(app);
    const nc = nextcloud(app);
    const db = await databaseFor(user.userId);
    await nextSecond(db);
    const path = `/api/2/subscriptions/${app.loginName}/phone.json`;
    const known = await json<Changes>(gp.get(`${path}?since=0`));
    expect(known.add).toEqual([from]);
    const token = await tokenNow(user);

    await runCron(Date.now(), FETCHING);

    // JSON:API: one change, the same guid, now under B, subscribed when it was.
    const { items } = await syncFrom(user, token);
    expect(items.map((item) => [item.id, item.attributes.feedUrl, item.attributes.userUnsubscribedAt])).toEqual([
      [guid, to, null],
    ]);
    expect(items[0].attributes.userSubscribedAt).toBe(before.data.attributes.userSubscribedAt);
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));
    // gpodder.net and Nextcloud, since a read that had A: neither `remove A` nor `add B`.
    expect(await json<Changes>(gp.get(`${path}?since=${known.timestamp}`))).toMatchObject({ add: [], remove: [] });
    expect(await json<Changes>(nc.get(`subscriptions?since=${known.timestamp}`))).toMatchObject({
      add: [],
      remove: [],
    });
    // A full list has B: since=0, and the simple API.
    expect(await json<Changes>(gp.get(`${path}?since=0`))).toMatchObject({ add: [to], remove: [] });
    expect(await json<Changes>(nc.get("subscriptions?since=0"))).toMatchObject({ add: [to], remove: [] });
    expect(await json<string[]>(gp.get(`/subscriptions/${app.loginName}.json`))).toEqual([to]);
  });

  it("lists B as an add to a client whose last read was over 10 minutes before the subscription, not to the one that sent A", async () => {
    const user = await as(`aliases-new-${uniqueNumber()}`);
    const app = await mint(user);
    const gp = gpodder(app);
    const path = `/api/2/subscriptions/${app.loginName}/phone.json`;
    const [from, to] = movingFeed();
    // The app subscribes: its next `since` is the upload's timestamp (10 minutes back).
    const upload = await json<{ timestamp: number }>(gp.post(path, { add: [from], remove: [] }));
    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(new Map([[expect.any(String), to]]));
    expect(await json<Changes>(gp.get(`${path}?since=${upload.timestamp}`))).toMatchObject({ add: [], remove: [] });
    // Another device that last read an hour before: it never had A.
    const older = upload.timestamp + 600 - 3600;
    expect(await json<Changes>(gp.get(`${path}?since=${older}`))).toMatchObject({ add: [to], remove: [] });
  });

  it("leaves A as it is for a user already subscribed to B (their merge is a later point)", async () => {
    const user = await as(`aliases-both-${uniqueNumber()}`);
    const [from, to] = movingFeed();
    const old = await subscribe(user, from);
    const kept = await subscribe(user, to);
    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(
      new Map([
        [old, from],
        [kept, to],
      ]),
    );
    // Nothing is left moving: the next runs read it no more.
    const db = await databaseFor(user.userId);
    const row = await db.prepare("SELECT moving FROM feed_aliases WHERE url = ?").bind(from).first();
    expect(row).toEqual({ moving: 0 });
  });

  it("moves a feed with 10 000 subscribers over several runs, each moving a bounded number per database", async () => {
    const [from, to] = movingFeed();
    // The subscribers, seeded straight into each database (a JSON:API subscribe each would take minutes).
    const SUBSCRIBERS = 10_000;
    const one = await as(`aliases-many-${uniqueNumber()}`);
    await subscribe(one, from);
    const perDatabase = new Map<D1Database, number>();
    const databases = shardDatabases().map(({ database: d1 }) => d1);
    for (let n = 1, slice = 0; n < SUBSCRIBERS; n += 500, slice++) {
      const d1 = databases[slice % databases.length];
      const count = Math.min(500, SUBSCRIBERS - n);
      perDatabase.set(d1, (perDatabase.get(d1) ?? 0) + count);
      await d1
        .prepare(
          `WITH RECURSIVE c(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM c WHERE value < ?5)
           INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, change_seq, subscribed_seq, received_at, url_key)
           SELECT 'many-' || ?1 || '-' || value, lower(hex(randomblob(16))), ?2, ?3, 1, 1, unixepoch(), ?4 FROM c`,
        )
        .bind(n, from, Date.now(), urlKey(from), count)
        .run();
    }
    const oneDb = await databaseFor(one.userId);
    perDatabase.set(oneDb, (perDatabase.get(oneDb) ?? 0) + 1);
    const onA = async () => {
      let left = 0;
      for (const d1 of databases) {
        const row = await d1
          .prepare("SELECT count(*) AS n FROM subscriptions WHERE feed_url = ? AND unsubscribed_at IS NULL")
          .bind(from)
          .first<{ n: number }>();
        left += row?.n ?? 0;
      }
      return left;
    };
    expect(await onA()).toBe(SUBSCRIBERS);
    const rounds = new Map([...databases].map((d1) => [d1, database(d1)] as const));
    const settings = { enabled: true, allowPrivate: true, userAgent: "test" };
    // The learned move in the database of each holder of A: the first run learns it and moves the first slice.
    let runs = 0;
    let time = Date.now();
    const perRun: number[] = [];
    while ((await onA()) > 0) {
      const summary = await runFeedRound(new Map([...rounds].map(([, db], i) => [`db${i}`, db])), settings, time);
      perRun.push(summary.subscriptionsMoved);
      time += 10 * 60 * 1000;
      if (++runs > 100) throw new Error("the move never ends");
    }
    // Each run moves at most two statements' worth per database (the due batch's and the learned moves' batch).
    const bound = 2 * MOVED_SUBSCRIPTIONS_PER_STATEMENT * databases.length;
    expect(Math.max(...perRun)).toBeLessThanOrEqual(bound);
    expect(perRun.reduce((sum, count) => sum + count, 0)).toBe(SUBSCRIBERS);
    expect(runs).toBeGreaterThanOrEqual(Math.ceil(SUBSCRIBERS / bound));
    expect(await listAll(one)).toEqual(new Map([[expect.any(String), to]]));
    console.log(JSON.stringify({ event: "move_runs", subscribers: SUBSCRIBERS, runs, perRun }));
  }, 300_000);
});
