import { describe, expect, it } from "vitest";
import {
  addOperation,
  as,
  databaseFor,
  meteredDatabaseOf,
  newFeed,
  seedSubscriptions,
  subscriptionDocument,
} from "./helpers";

const MAX = 10_000;

type Result = { data?: unknown; errors?: { status: string; title: string; source?: unknown; meta?: unknown }[] };

async function storedCount(userId: string) {
  const row = await (await databaseFor(userId))
    .prepare(
      "SELECT (SELECT count(*) FROM subscriptions WHERE user_id = ?1) AS rows, (SELECT stored_count FROM user_stats WHERE user_id = ?1) AS stats",
    )
    .bind(userId)
    .first<{ rows: number; stats: number }>();
  return row;
}

const adds = (count: number) =>
  Array.from({ length: count }, () => {
    const feed = newFeed();
    return addOperation(feed.guid, feed.feedUrl);
  });

describe(`per-user quota: at most ${MAX} stored subscriptions, tombstones included (docs/API.md §12)`, () => {
  it("refuses the write that would store one more: 403 on POST, inline in bulk; revivals and moves still work", async () => {
    const userId = "quota";
    // Live rows fill the quota: tombstones would be purged to make room (test/storage.test.ts).
    await seedSubscriptions(userId, MAX - 2);
    const user = await as(userId);
    const { data } = (await (await user.get("/v1/subscriptions")).json()) as { data: { id: string }[] };
    const active = data[0].id;

    const response = await user.operations({ "atomic:operations": adds(4) });
    const results = ((await response.json()) as { "atomic:results": Result[] })["atomic:results"];
    expect(results.map((result) => (result.data ? "ok" : result.errors?.[0].status))).toEqual([
      "ok",
      "ok",
      "403",
      "403",
    ]);
    expect(results[2].errors?.[0]).toEqual({
      status: "403",
      title: "Subscription limit reached",
      detail: expect.stringContaining(String(MAX)),
      source: { pointer: "/atomic:operations/2" },
      meta: { maxSubscriptions: MAX },
    });
    expect(await storedCount(userId)).toEqual({ rows: MAX, stats: MAX });

    const feed = newFeed();
    const single = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    expect(single.status).toBe(403);
    expect(((await single.json()) as Result).errors?.[0]).toMatchObject({
      title: "Subscription limit reached",
      meta: { maxSubscriptions: MAX },
    });

    // At the limit: an existing subscription still answers 200 (bulk 409), a move and a removal work,
    // and reviving one's own tombstone is not creating.
    const again = await user.post("/v1/subscriptions", subscriptionDocument(active, "https://x.example/"));
    expect(again.status).toBe(200);
    const { "atomic:results": mixed } = (await (
      await user.operations({
        "atomic:operations": [
          addOperation(active, "https://x.example/"),
          {
            op: "update",
            data: { type: "subscription", id: active, attributes: { feedUrl: "https://moved.example/" } },
          },
          { op: "remove", ref: { type: "subscription", id: active } },
          addOperation(active, "https://revived.example/"),
        ],
      })
    ).json()) as { "atomic:results": Result[] };
    expect(mixed.map((result) => (result.errors ? result.errors[0].status : "ok"))).toEqual(["409", "ok", "ok", "ok"]);
    expect(await storedCount(userId)).toEqual({ rows: MAX, stats: MAX });
  });

  it("cannot be overshot by concurrent bulk writes that straddle the limit", async () => {
    const userId = "quota-race";
    await seedSubscriptions(userId, MAX - 15);
    const user = await as(userId);
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => user.operations({ "atomic:operations": adds(10) })),
    );
    const results = (
      await Promise.all(
        responses.map(
          async (response) => ((await response.json()) as { "atomic:results": Result[] })["atomic:results"],
        ),
      )
    ).flat();
    expect(results.filter((result) => result.data)).toHaveLength(15);
    expect(results.filter((result) => result.errors?.[0].status === "403")).toHaveLength(45);
    expect(await storedCount(userId)).toEqual({ rows: MAX, stats: MAX });
  });

  it("another user is not affected by a full one", async () => {
    const other = await as("quota-neighbour");
    const feed = newFeed();
    expect((await other.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
  });
});

describe("pages past the end (docs/API.md §12)", () => {
  it("read at most 2 rows whatever the user stores; pages inside the list read what they return", async () => {
    await seedSubscriptions("past-end", 10_000);
    for (const [query, rows, maxRead] of [
      ["?page[number]=401&page[size]=25", 0, 2],
      ["?page[number]=1000000&page[size]=100", 0, 2],
      ["?page[number]=400&page[size]=25", 25, 2 + 10_000],
    ] as const) {
      const meter = await meteredDatabaseOf("past-end");
      const user = await as("past-end", meter.bindings);
      const body = (await (await user.get(`/v1/subscriptions${query}`)).json()) as {
        data: unknown[];
        meta: { total: number };
      };
      expect(body.data, query).toHaveLength(rows);
      expect(body.meta.total).toBe(10_000);
      expect(meter.totals.rowsRead, query).toBeLessThanOrEqual(maxRead);
    }
    const empty = await meteredDatabaseOf("past-end-nobody");
    await (await as("past-end-nobody", empty.bindings)).get("/v1/subscriptions?page[number]=3");
    expect(empty.totals.rowsRead).toBeLessThanOrEqual(2);
  });
});
