import { describe, expect, it, vi } from "vitest";
import {
  addOperation,
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  failingD1,
  JSONAPI,
  newFeed,
  subscriptionDocument,
  wrapDatabaseOf,
} from "./helpers";

async function state(userId: string) {
  const db = await databaseFor(userId);
  const [rows, stats] = await db.batch([
    db
      .prepare(
        "SELECT guid, feed_url, subscribed_at, unsubscribed_at FROM subscriptions WHERE user_id = ? ORDER BY guid",
      )
      .bind(userId),
    db.prepare("SELECT active_count, version FROM user_stats WHERE user_id = ?").bind(userId),
  ]);
  return JSON.stringify([rows.results, stats.results]);
}

type Step = { name: string; run: (user: Caller, guid: string) => Promise<Response> };

/** Every endpoint that reaches D1, each prepared so that it would succeed (a write that changes state). */
const steps: Step[] = [
  { name: "list", run: (u) => u.get("/v1/subscriptions") },
  { name: "get one", run: (u, guid) => u.get(`/v1/subscriptions/${guid}`) },
  {
    name: "subscribe",
    run: (u) => u.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://n.example/f")),
  },
  {
    name: "subscribe existing",
    run: (u, guid) => u.post("/v1/subscriptions", subscriptionDocument(guid, "https://n.example/f")),
  },
  {
    name: "bulk add",
    run: (u, guid) =>
      u.operations({
        "atomic:operations": [
          addOperation(crypto.randomUUID(), "https://n.example/a"),
          addOperation(guid, "https://n.example/f"),
          addOperation(crypto.randomUUID(), "https://n.example/b"),
        ],
      }),
  },
  { name: "unsubscribe", run: (u, guid) => u.delete(`/v1/subscriptions/${guid}`) },
];

describe("fault injection: D1 failing on its Nth call", () => {
  for (const step of steps) {
    it(`${step.name}: every N it reaches answers 503, writes nothing, and the next request succeeds`, async () => {
      const userId = `fault-${step.name}`;
      const setup = await as(userId);
      const feed = newFeed();
      await setup.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));

      // Count the calls the step makes on a twin user, so this user's state is untouched.
      const counter = await countedDatabaseOf(`${userId}-twin`);
      const twin = await as(`${userId}-twin`, counter.bindings);
      await (await as(`${userId}-twin`)).post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
      counter.reset();
      await step.run(twin, feed.guid);
      const calls = counter.calls();
      expect(calls).toBeGreaterThan(0);

      vi.spyOn(console, "error").mockImplementation(() => {});
      for (let n = 1; n <= calls; n++) {
        const before = await state(userId);
        const broken = await as(userId, await wrapDatabaseOf(userId, (real) => failingD1(real, n)));
        const response = await step.run(broken, feed.guid);
        expect(response.status).toBe(503);
        expect(response.headers.get("Content-Type")).toContain(JSONAPI);
        expect(await state(userId)).toBe(before);
      }
      vi.restoreAllMocks();
      const next = await step.run(setup, feed.guid);
      expect(next.status).toBeLessThan(300);
    });
  }
});

describe("concurrency", () => {
  it("50 overlapping bulk adds, single adds and deletes end where a serial model says", async () => {
    const userId = "concurrent";
    const user = await as(userId);
    const pool = Array.from({ length: 8 }, () => crypto.randomUUID());
    const pick = (i: number) => pool[(i * 7 + 3) % pool.length];
    type Outcome = { guid: string; created: boolean } | { guid: string; deleted: boolean };
    const requests: Promise<Outcome[]>[] = [];
    for (let i = 0; i < 50; i++) {
      const guid = pick(i);
      if (i % 3 === 0) {
        const guids = [guid, pick(i + 1), pick(i + 2), guid];
        requests.push(
          user
            .operations({ "atomic:operations": guids.map((g) => addOperation(g, `https://c.example/${g}`)) })
            .then(async (response) => {
              const body = (await response.json()) as { "atomic:results": { data?: unknown }[] };
              return body["atomic:results"].map((result, index) => ({
                guid: guids[index],
                created: result.data !== undefined,
              }));
            }),
        );
      } else if (i % 3 === 1) {
        requests.push(
          user
            .post("/v1/subscriptions", subscriptionDocument(guid, `https://c.example/${guid}`))
            .then((response) => [{ guid, created: response.status === 201 }]),
        );
      } else {
        requests.push(
          user.delete(`/v1/subscriptions/${guid}`).then((response) => [{ guid, deleted: response.status === 204 }]),
        );
      }
    }
    const outcomes = (await Promise.all(requests)).flat();

    const db = await databaseFor(userId);
    const { results } = await db
      .prepare("SELECT guid, unsubscribed_at FROM subscriptions WHERE user_id = ?")
      .bind(userId)
      .all<{ guid: string; unsubscribed_at: number | null }>();
    const active = new Set(results.filter((row) => row.unsubscribed_at === null).map((row) => row.guid));
    // Serially, each guid alternates: a success creates only from inactive and deletes only from active,
    // so per guid, creations minus deletions is its final state (1 active, 0 not).
    for (const guid of pool) {
      const created = outcomes.filter((o) => o.guid === guid && "created" in o && o.created).length;
      const deleted = outcomes.filter((o) => o.guid === guid && "deleted" in o && o.deleted).length;
      expect(created - deleted, guid).toBe(active.has(guid) ? 1 : 0);
    }
    expect(results.length).toBe(new Set(results.map((row) => row.guid)).size);
    const stats = await db.prepare("SELECT active_count FROM user_stats WHERE user_id = ?").bind(userId).first<{
      active_count: number;
    }>();
    expect(stats?.active_count).toBe(active.size);
    const list = (await (await user.get("/v1/subscriptions?page[size]=100")).json()) as {
      meta: { total: number };
      data: unknown[];
    };
    expect(list.meta.total).toBe(active.size);
    expect(list.data).toHaveLength(active.size);
  });
});
