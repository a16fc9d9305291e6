import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { as, listAll, newFeed, subscriptionDocument, syncFrom } from "./helpers";

/** The migration that introduced the change feed; everything before it is the previous schema. */
const CHANGE_FEED = "0003_change_feed.sql";

async function run(queries: string[]) {
  await env.DB.batch(queries.map((query) => env.DB.prepare(query)));
}

/**
 * This file's database (storage is per test file) is rebuilt at the previous schema, filled the way the
 * previous release wrote (its triggers keep user_stats), then migrated.
 */
beforeAll(async () => {
  const index = env.TEST_MIGRATIONS.findIndex((migration) => migration.name === CHANGE_FEED);
  expect(index).toBeGreaterThan(0);
  await run([
    "DROP TABLE IF EXISTS subscriptions",
    "DROP TABLE IF EXISTS user_stats",
    "DROP TABLE IF EXISTS d1_migrations",
  ]);
  for (const migration of env.TEST_MIGRATIONS.slice(0, index)) await run(migration.queries);

  const insert = (user: string, guid: string, at: number, unsubscribedAt: number | null) =>
    env.DB.prepare(
      "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at) VALUES (?, ?, ?, ?, ?)",
    ).bind(user, guid, `https://old.example/${guid}`, at, unsubscribedAt);
  await env.DB.batch([
    insert("old-alice", "c0000000-0000-4000-8000-000000000000", 3000, null),
    insert("old-alice", "a0000000-0000-4000-8000-000000000000", 1000, null),
    insert("old-alice", "d0000000-0000-4000-8000-000000000000", 2000, 2500),
    insert("old-alice", "b0000000-0000-4000-8000-000000000000", 2000, null),
    insert("old-bob", "e0000000-0000-4000-8000-000000000000", 5000, null),
  ]);
  // The previous release's unsubscribe (an UPDATE) bumped the old version counter too.
  await env.DB.prepare("UPDATE subscriptions SET unsubscribed_at = 6000 WHERE user_id = 'old-bob'").run();

  await run(env.TEST_MIGRATIONS[index].queries);
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
    const { results } = await env.DB.prepare(
      "SELECT guid, change_seq FROM subscriptions WHERE user_id = 'old-alice' ORDER BY change_seq",
    ).all<{
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
    const { results } = await env.DB.prepare("SELECT * FROM user_stats ORDER BY user_id").all();
    expect(results).toEqual([
      { user_id: "old-alice", active_count: 3, stored_count: 4, version: 4 },
      { user_id: "old-bob", active_count: 0, stored_count: 1, version: 1 },
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
