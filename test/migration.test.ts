import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { urlKey } from "../src/db/url-key";
import { as, databaseFor, listAll, newFeed, runCron, shardDatabases, subscriptionDocument, syncFrom } from "./helpers";

/** The migration that introduced the change feed; everything before it is the previous schema. */
const CHANGE_FEED = "0003_change_feed.sql";
/** The migration that cut device captions to 100 characters. */
const CAPTIONS_CUT = "0009_accounts_login_flows_sessions.sql";
/** A caption as one free account stored them before 0009: 1 MB of text (here multi-byte characters too). */
const LONG_CAPTION = `${"é".repeat(99)}${"x".repeat(1_000_000)}`;

const CAROL_GUID = "f0000000-0000-4000-8000-000000000000";
/** 2 048 UTF-8 bytes: 22 ASCII bytes, 675 three-byte characters, 1 byte. */
const CAROL_URL = `https://old.example/x/${"€".repeat(675)}z`;

/** Runs the queries on every database of the configuration (each shard is migrated the same way). */
async function run(queries: string[]) {
  for (const { database } of shardDatabases()) await database.batch(queries.map((query) => database.prepare(query)));
}

/**
 * This file's database (storage is per test file) is rebuilt at the previous schema, filled the way the
 * previous release wrote (its triggers keep user_stats), then migrated.
 */
beforeAll(async () => {
  const index = env.TEST_MIGRATIONS.findIndex((migration) => migration.name === CHANGE_FEED);
  expect(index).toBeGreaterThan(0);
  await run(
    [
      "subscriptions",
      "user_stats",
      "episodes",
      "app_passwords",
      "gpodder_sessions",
      "account_sessions",
      "login_flows",
      "devices",
      "url_pieces",
      "feeds",
      "feed_aliases",
      "subscription_renames",
      "episode_rehomes",
      "d1_migrations",
    ].map((table) => `DROP TABLE IF EXISTS ${table}`),
  );
  for (const migration of env.TEST_MIGRATIONS.slice(0, index)) await run(migration.queries);

  // Each user's rows go to the user's database (the two-shard configuration may hold them apart).
  const insert = async (user: string, guid: string, at: number, unsubscribedAt: number | null) =>
    (await databaseFor(user))
      .prepare(
        "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at) VALUES (?, ?, ?, ?, ?)",
      )
      .bind(user, guid, `https://old.example/${guid}`, at, unsubscribedAt)
      .run();
  await insert("old-alice", "c0000000-0000-4000-8000-000000000000", 3000, null);
  await insert("old-alice", "a0000000-0000-4000-8000-000000000000", 1000, null);
  await insert("old-alice", "d0000000-0000-4000-8000-000000000000", 2000, 2500);
  await insert("old-alice", "b0000000-0000-4000-8000-000000000000", 2000, null);
  await insert("old-bob", "e0000000-0000-4000-8000-000000000000", 5000, null);
  // A 2 048-byte URL of multi-byte characters, stored whole in its row before migration 0007 cut it.
  await (await databaseFor("old-carol"))
    .prepare(
      "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at) VALUES (?, ?, ?, ?, NULL)",
    )
    .bind("old-carol", CAROL_GUID, CAROL_URL, 4000)
    .run();
  // The previous release's unsubscribe (an UPDATE) bumped the old version counter too.
  await (await databaseFor("old-bob"))
    .prepare("UPDATE subscriptions SET unsubscribed_at = 6000 WHERE user_id = 'old-bob'")
    .run();

  // The change-feed migration and every one after it, as `wrangler d1 migrations apply` would run them; just
  // before the captions were cut, a device with a 1 MB caption as the previous release stored it.
  for (const migration of env.TEST_MIGRATIONS.slice(index)) {
    if (migration.name === CAPTIONS_CUT) {
      await (await databaseFor("old-dave"))
        .prepare("INSERT INTO devices (user_id, device_id, caption, type, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind("old-dave", "phone", LONG_CAPTION, "mobile", 1000)
        .run();
    }
    await run(migration.queries);
  }
});

describe(`migration ${CHANGE_FEED} on data of the previous schema`, () => {
  it("numbers existing rows in list order, tombstones included, so a first sync from 0 returns everything", async () => {
    const alice = await as("old-alice");
    const { items, token } = await syncFrom(alice, "0", 2);
    expect(items.map((item) => [item.id[0], item.attributes.userUnsubscribedAt === null])).toEqual([
      ["a", true],
      ["b", true],
      ["d", false],
      ["c", true],
    ]);
    expect(token).toBe("4");
    expect(items[2].attributes.userUnsubscribedAt).toBe(new Date(2500).toISOString());
    const { results } = await (await databaseFor("old-alice"))
      .prepare("SELECT guid, change_seq FROM subscriptions WHERE user_id = 'old-alice' ORDER BY change_seq")
      .all<{
        guid: string;
        change_seq: number;
      }>();
    expect(results.map((row) => [row.guid[0], row.change_seq])).toEqual([
      ["a", 1],
      ["b", 2],
      ["d", 3],
      ["c", 4],
    ]);
  });

  it("rebuilds the stats: active and stored counts, and the version as the latest change number", async () => {
    const results = [];
    for (const { database } of shardDatabases()) {
      results.push(...(await database.prepare("SELECT * FROM user_stats").all()).results);
    }
    results.sort((a, b) => String(a.user_id).localeCompare(String(b.user_id)));
    // Migration 0004 adds the episode counters and the stored URL bytes (every old URL here is 56 bytes).
    // Migration 0005's horizons start at 0: nothing was purged before it, so every token stays valid.
    const zeroEpisodes = {
      episode_count: 0,
      episode_version: 0,
      subscription_horizon: 0,
      episode_horizon: 0,
      episode_list_bytes: 0,
    };
    expect(results).toEqual([
      {
        user_id: "old-alice",
        active_count: 3,
        stored_count: 4,
        version: 4,
        ...zeroEpisodes,
        url_bytes: 4 * 56,
        feed_list_bytes: 4 * 59,
        feed_url_max_bytes: 58,
      },
      {
        user_id: "old-bob",
        active_count: 0,
        stored_count: 1,
        version: 1,
        ...zeroEpisodes,
        url_bytes: 56,
        feed_list_bytes: 59,
        feed_url_max_bytes: 58,
      },
      {
        user_id: "old-carol",
        active_count: 1,
        stored_count: 1,
        version: 1,
        ...zeroEpisodes,
        url_bytes: 2048,
        feed_list_bytes: 4099,
        feed_url_max_bytes: 4098,
      },
    ]);
    const bob = await as("old-bob");
    expect((await syncFrom(bob, "0")).items.map((item) => item.attributes.userUnsubscribedAt)).toEqual([
      new Date(6000).toISOString(),
    ]);
    // The token a device had under the old counter (bob's was 2) is past the new history: start again from 0.
    expect((await bob.get("/v1/subscriptions?filter[since]=2")).status).toBe(400);
  });

  it("keeps the list and serves new writes with the next numbers", async () => {
    const alice = await as("old-alice");
    expect([...(await listAll(alice)).keys()].map((guid) => guid[0])).toEqual(["a", "b", "c"]);
    const feed = newFeed();
    expect((await alice.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
    expect((await alice.delete("/v1/subscriptions/a0000000-0000-4000-8000-000000000000")).status).toBe(204);
    const after = await syncFrom(alice, "4");
    expect(after.items.map((item) => item.id)).toEqual([feed.guid, "a0000000-0000-4000-8000-000000000000"]);
    expect(after.token).toBe("6");
  });

  it("leaves the table WITHOUT ROWID with both indexes and the new triggers", async () => {
    const { results } = await env.DB.prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN ('subscriptions', 'user_stats') ORDER BY type, name",
    ).all<{ type: string; name: string; sql: string | null }>();
    const names = results.map((row) => `${row.type} ${row.name}`);
    expect(names).toEqual(
      expect.arrayContaining([
        "index subscriptions_active_page",
        "index subscriptions_changes",
        "table subscriptions",
        "table user_stats",
        "trigger subscriptions_after_delete",
        "trigger subscriptions_after_insert",
        "trigger subscriptions_after_update",
      ]),
    );
    expect(results.find((row) => row.name === "subscriptions")?.sql).toMatch(/WITHOUT ROWID/);
    expect(results.find((row) => row.name === "user_stats")?.sql).toMatch(/WITHOUT ROWID/);
    expect(names.filter((name) => name.includes("_change_feed"))).toEqual([]);
  });
});

describe("migration 0004 on subscriptions of the previous schema", () => {
  it("keeps the list order of old rows (their change numbers break ties) and narrows every index to no URL text", async () => {
    const { results } = await env.DB.prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'subscriptions' AND sql IS NOT NULL",
    ).all<{ name: string; sql: string }>();
    expect(results.map((row) => row.name).sort()).toEqual([
      "subscriptions_active_page",
      "subscriptions_changes",
      "subscriptions_feed_active",
      "subscriptions_learned_moves",
      "subscriptions_tombstone_age",
      "subscriptions_tombstones",
      "subscriptions_url",
      "subscriptions_url_key_missing",
    ]);
    // Migration 0005's tombstone indexes and 0008's index of the rows without url_key hold no URL text either.
    for (const row of results) expect(row.sql).not.toMatch(/feed_url/);
    const rows = await (await databaseFor("old-alice"))
      // a was unsubscribed by a test above (a write of today's schema), which also added a random guid;
      // b, c and d are as migrated.
      .prepare(
        "SELECT guid, subscribed_seq, received_at, url_key FROM subscriptions WHERE user_id = 'old-alice' AND guid IN (?, ?, ?)",
      )
      .bind(...["b", "c", "d"].map((first) => `${first}0000000-0000-4000-8000-000000000000`))
      .all<{ guid: string; subscribed_seq: number; received_at: number; url_key: number | null }>();
    // b (2000) and d (2000) share a time: the old order by guid is kept through their change numbers.
    expect(rows.results.map((row) => [row.guid[0], row.subscribed_seq, row.received_at, row.url_key]).sort()).toEqual([
      ["b", 2, 0, null],
      ["c", 4, 0, null],
      ["d", 3, 0, null],
    ]);
  });
});

describe("migration 0007 on long URLs stored whole before it", () => {
  it("cuts the row to its head and the rest into pieces, and every read gives the URL back whole", async () => {
    expect(new TextEncoder().encode(CAROL_URL).length).toBe(2048);
    const db = await databaseFor("old-carol");
    const row = await db
      .prepare("SELECT length(CAST(feed_url AS BLOB)) AS head, url_key FROM subscriptions WHERE user_id = 'old-carol'")
      .first<{ head: number; url_key: number | null }>();
    expect(row?.head).toBeLessThanOrEqual(800);
    expect(row?.url_key).toBeNull();
    const pieces = await db
      .prepare("SELECT n, length(CAST(piece AS BLOB)) AS bytes FROM url_pieces WHERE user_id = 'old-carol' ORDER BY n")
      .all<{ n: number; bytes: number }>();
    expect(pieces.results.map((piece) => piece.n)).toEqual([1, 2]);
    expect((row?.head ?? 0) + pieces.results.reduce((sum, piece) => sum + piece.bytes, 0)).toBe(2048);

    const carol = await as("old-carol");
    const one = (await (await carol.get(`/v1/subscriptions/${CAROL_GUID}`)).json()) as {
      data: { attributes: { feedUrl: string } };
    };
    expect(one.data.attributes.feedUrl).toBe(CAROL_URL);
    expect(await listAll(carol)).toEqual(new Map([[CAROL_GUID, CAROL_URL]]));
    // Posting the same URL again finds it (a row with no url_key is compared by its whole text): nothing changes.
    const again = await carol.post("/v1/subscriptions", subscriptionDocument(CAROL_GUID, CAROL_URL));
    expect(again.status).toBe(200);
    expect((await syncFrom(carol, "0")).token).toBe("1");
  });
});

describe("migration 0008: the rows from before 0004 are indexed until the retention cron keys them", () => {
  it("indexes exactly the rows without url_key, and a cron run keys them by their whole URL", async () => {
    const unkeyed = async () => {
      const guids = [];
      for (const { database } of shardDatabases()) {
        const { results } = await database
          .prepare("SELECT guid FROM subscriptions INDEXED BY subscriptions_url_key_missing WHERE url_key IS NULL")
          .all<{ guid: string }>();
        guids.push(...results.map((row) => row.guid[0]));
      }
      return guids.sort();
    };
    // b, c and d of alice, bob's e and carol's f are as migrated; a was unsubscribed since, which leaves its
    // URL and so its missing key alone; the row subscribed by today's code has its key.
    expect(await unkeyed()).toEqual(["a", "b", "c", "d", "e", "f"]);
    await runCron();
    expect(await unkeyed()).toEqual([]);
    const carol = await (await databaseFor("old-carol"))
      .prepare("SELECT url_key FROM subscriptions WHERE user_id = 'old-carol'")
      .first<{ url_key: number }>();
    expect(carol?.url_key).toBe(urlKey(CAROL_URL));
  });

  it("gives every active subscription's feed a pending row once it has its key (migration 0010), tombstones none", async () => {
    const feedRows = new Set<number>();
    for (const { database } of shardDatabases()) {
      const { results } = await database
        .prepare("SELECT url_key, status FROM feeds")
        .all<{ url_key: number; status: string }>();
      for (const row of results) {
        expect(row.status).toBe("pending");
        feedRows.add(row.url_key);
      }
    }
    // Keyed by the cron above: carol's 2 048-byte URL (cut into pieces) and alice's active rows have a feed row;
    // d, unsubscribed before the migration, has none.
    expect(feedRows.has(urlKey(CAROL_URL))).toBe(true);
    for (const guid of ["b0000000-0000-4000-8000-000000000000", "c0000000-0000-4000-8000-000000000000"]) {
      expect(feedRows.has(urlKey(`https://old.example/${guid}`))).toBe(true);
    }
    expect(feedRows.has(urlKey("https://old.example/d0000000-0000-4000-8000-000000000000"))).toBe(false);
  });
});

describe(`migration ${CAPTIONS_CUT}: device captions are at most 100 characters`, () => {
  it("cuts a 1 MB caption stored before it to its first 100 characters", async () => {
    const row = await (await databaseFor("old-dave"))
      .prepare("SELECT caption, type FROM devices WHERE user_id = 'old-dave' AND device_id = 'phone'")
      .first<{ caption: string; type: string }>();
    expect(row).toEqual({ caption: LONG_CAPTION.slice(0, 100), type: "mobile" });
    expect([...(row?.caption ?? "")].length).toBe(100);
  });
});
