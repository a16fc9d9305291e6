import { describe, expect, it } from "vitest";
import { backfillUrlKeys, findUnkeyedRows, URL_KEYS_PER_RUN, writeUrlKeys } from "../src/db/retention";
import { urlKey } from "../src/db/url-key";
import {
  as,
  type Caller,
  databaseFor,
  meteredD1,
  ORIGIN,
  runCron,
  seedSubscriptions,
  send,
  shardDatabases,
  subscriptionDocument,
  syncFrom,
} from "./helpers";

/** docs/API.md §15: the retention cron gives rows from before migration 0004 their url_key, a slice per run. */

/** A URL of multi-byte characters long enough to be stored as a head and two pieces (drizzle/0007). */
const longUrl = (guid: string) => `https://feeds.example.com/${guid}/${"€".repeat(600)}`;

/**
 * Seeds `count` rows as written before migration 0004 (no url_key), every tenth with a long URL, and
 * returns each row's whole URL by guid.
 */
async function seedUnkeyed(userId: string, count: number, unsubscribed = false): Promise<Map<string, string>> {
  const urls = new Map<string, string>();
  await seedSubscriptions(userId, count, {
    unsubscribed,
    feedUrl: (guid, index) => {
      const url = index % 10 === 0 ? longUrl(guid) : `https://feeds.example.com/${guid}.xml`;
      urls.set(guid, url);
      return url;
    },
  });
  return urls;
}

async function keysOf(userId: string): Promise<Map<string, number | null>> {
  const { results } = await (await databaseFor(userId))
    .prepare("SELECT guid, url_key FROM subscriptions WHERE user_id = ?")
    .bind(userId)
    .all<{ guid: string; url_key: number | null }>();
  return new Map(results.map((row) => [row.guid, row.url_key]));
}

async function unkeyedPerDatabase(): Promise<number[]> {
  const counts = [];
  for (const { database } of shardDatabases()) {
    const row = await database
      .prepare("SELECT count(*) AS n FROM subscriptions WHERE url_key IS NULL")
      .first<{ n: number }>();
    counts.push(row?.n ?? 0);
  }
  return counts;
}

/** Everything a client can see change: the rows but their key, the pieces, the stats, both feeds, the ETag. */
async function visibleState(user: Caller) {
  const db = await databaseFor(user.userId);
  const rows = await db
    .prepare(
      "SELECT guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, received_at FROM subscriptions WHERE user_id = ? ORDER BY guid",
    )
    .bind(user.userId)
    .all();
  const pieces = await db
    .prepare("SELECT * FROM url_pieces WHERE user_id = ? ORDER BY owner, n")
    .bind(user.userId)
    .all();
  const stats = await db.prepare("SELECT * FROM user_stats WHERE user_id = ?").bind(user.userId).first();
  const list = await user.get("/v1/subscriptions?page[size]=100");
  return {
    rows: rows.results,
    pieces: pieces.results,
    stats,
    etag: list.headers.get("ETag"),
    list: await list.json(),
    changes: await syncFrom(user, "0", 100),
  };
}

/** A gpodder client of `user`, through an app password minted by the JSON:API. */
async function gpodderOf(user: Caller) {
  const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "pod" } } });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  const authorization = `Basic ${btoa(`${username}:${password}`)}`;
  return (path: string, body: unknown) =>
    send(
      new Request(`${ORIGIN}/api/2/${path.replace("{user}", username)}`, {
        method: "POST",
        headers: { Authorization: authorization },
        body: JSON.stringify(body),
      }),
    );
}

describe("url_key backfill: the retention cron keys rows from before migration 0004 (docs/API.md §15)", () => {
  it("keys each row by its whole URL (long ones in pieces too), at most URL_KEYS_PER_RUN per database per run", async () => {
    const extra = 30;
    const first = await seedUnkeyed("backfill-a", URL_KEYS_PER_RUN + extra);
    const second = await seedUnkeyed("backfill-b", URL_KEYS_PER_RUN + extra, true);
    const before = await unkeyedPerDatabase();
    expect(before.reduce((sum, n) => sum + n, 0)).toBe(2 * (URL_KEYS_PER_RUN + extra));

    await runCron();
    // Wherever the two users live (one database or two), each database keyed one slice.
    expect(await unkeyedPerDatabase()).toEqual(before.map((n) => Math.max(0, n - URL_KEYS_PER_RUN)));
    while ((await unkeyedPerDatabase()).some((n) => n > 0)) await runCron();

    for (const [userId, urls] of [
      ["backfill-a", first],
      ["backfill-b", second],
    ] as const) {
      const keys = await keysOf(userId);
      expect(keys.size).toBe(urls.size);
      for (const [guid, url] of urls) expect(keys.get(guid), url).toBe(urlKey(url));
    }
    // Some of them were stored in pieces: their key is the whole URL's, not the head's.
    const [long] = [...first].find(([, url]) => url.includes("€")) ?? [];
    const pieces = await (await databaseFor("backfill-a"))
      .prepare("SELECT count(*) AS n FROM url_pieces WHERE user_id = 'backfill-a' AND owner = ?")
      .bind(long)
      .first<{ n: number }>();
    expect(pieces?.n).toBe(2);
  });

  it("never overwrites a key: rows written since 0004, and a row written between the find and the write", async () => {
    const userId = "backfill-keyed";
    const user = await as(userId);
    const urls = await seedUnkeyed(userId, 3);
    const [moved, ...others] = [...urls.keys()];
    const written = { guid: crypto.randomUUID(), feedUrl: "https://feeds.example.com/written-since.xml" };
    expect((await user.post("/v1/subscriptions", subscriptionDocument(written.guid, written.feedUrl))).status).toBe(
      201,
    );
    const rows = await findUnkeyedRows(await databaseFor(userId));
    expect(rows.map((row) => row.guid).sort()).toEqual([...urls.keys()].sort());
    // A device moves one of them to a new URL after the cron read it: the write sets the new URL's key.
    const newUrl = "https://feeds.example.com/moved-since.xml";
    const patch = await user.patch(`/v1/subscriptions/${moved}`, {
      data: { type: "subscription", id: moved, attributes: { feedUrl: newUrl } },
    });
    expect(patch.status).toBe(200);

    expect(await writeUrlKeys(await databaseFor(userId), rows)).toBe(others.length);
    const keys = await keysOf(userId);
    expect(keys.get(moved)).toBe(urlKey(newUrl));
    expect(keys.get(written.guid)).toBe(urlKey(written.feedUrl));
    for (const guid of others) expect(keys.get(guid)).toBe(urlKey(urls.get(guid) as string));
  });

  it("walks only the rows it keys: the find reads the index of rows without a key, the write looks each row up", async () => {
    const userId = "backfill-reads";
    await seedUnkeyed(userId, 1000);
    const db = await databaseFor(userId);
    // As if written since 0004: only the last 5 of the user's rows are left without a key.
    await db
      .prepare(
        "UPDATE subscriptions SET url_key = 1 WHERE user_id = ? AND guid NOT IN (SELECT guid FROM subscriptions WHERE user_id = ? ORDER BY change_seq DESC LIMIT 5)",
      )
      .bind(userId, userId)
      .run();
    const meter = meteredD1(db);
    const rows = await findUnkeyedRows(meter.binding);
    expect(rows).toHaveLength(5);
    expect(await writeUrlKeys(meter.binding, rows)).toBe(5);
    // SQLite's plan of each statement: no walk of the table, whatever the user stores.
    const plans = [];
    for (const { sql, params } of meter.totals.statements) {
      const { results } = await db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>();
      plans.push(results.map((row) => row.detail).filter((detail) => !detail.includes("url_pieces")));
    }
    // The left-out users (none here) are one list read once, not a walk per row.
    expect(plans[0]).toEqual([
      "SCAN s USING INDEX subscriptions_url_key_missing",
      "LIST SUBQUERY 4",
      "SCAN json_each VIRTUAL TABLE INDEX 1:",
      "CREATE BLOOM FILTER",
      ...Array.from({ length: 3 }, (_, n) => `CORRELATED SCALAR SUBQUERY ${n + 1}`),
    ]);
    expect(plans[1]).toHaveLength(2);
    expect(plans[1][0]).toMatch(/^SCAN k VIRTUAL TABLE/);
    expect(plans[1][1]).toMatch(/^SEARCH subscriptions USING .*\(user_id=\? AND .*guid=\?\)$/);
    // Nothing left: one find, no write.
    meter.reset();
    expect(await backfillUrlKeys(meter.binding, async () => true)).toBe(0);
    expect(meter.totals.statements).toHaveLength(1);
  });

  it("changes nothing a client sees: no change number, receive time, version, feed item or ETag", async () => {
    const user = await as("backfill-quiet");
    await seedUnkeyed(user.userId, 40);
    await seedUnkeyed(user.userId, 12, true);
    const before = await visibleState(user);
    expect((await keysOf(user.userId)).values().next().value).toBeNull();

    await runCron();
    expect([...(await keysOf(user.userId)).values()].every((key) => key !== null)).toBe(true);
    expect(await visibleState(user)).toEqual(before);
    const revalidated = await user.get("/v1/subscriptions?page[size]=100", { "If-None-Match": before.etag ?? "" });
    expect(revalidated.status).toBe(304);
  });

  it("lets gpodder lookups find the rows by key: an upload of the same URLs changes nothing", async () => {
    const user = await as("backfill-gpodder");
    const urls = [...(await seedUnkeyed(user.userId, 12)).values()];
    const gone = [...(await seedUnkeyed(user.userId, 2, true)).values()];
    while ((await unkeyedPerDatabase()).some((n) => n > 0)) await runCron();
    const before = await visibleState(user);

    const upload = await gpodderOf(user);
    const answer = await upload("subscriptions/{user}/phone.json", { add: urls.slice(0, 6) });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { update_urls: unknown }).update_urls).toEqual([]);
    // Known by key, every URL names its row: nothing is added, no change is numbered.
    expect(await visibleState(user)).toEqual(before);
    // A tombstone's URL revives the tombstone rather than adding a second row of the same URL.
    const revived = await upload("subscriptions/{user}/phone.json", { add: [gone[0]] });
    expect(revived.status).toBe(200);
    const after = await visibleState(user);
    expect(after.rows).toHaveLength(before.rows.length);
    expect(after.changes.items.filter((item) => item.attributes.feedUrl === gone[0])).toHaveLength(1);
    expect(after.changes.items.find((item) => item.attributes.feedUrl === gone[0])?.attributes.userUnsubscribedAt).toBe(
      null,
    );
  });
});
