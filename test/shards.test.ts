import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import {
  BUCKET_COUNT,
  bucketOf,
  formatBucketSet,
  formatShardMap,
  parseBucketSet,
  parseShardMap,
  ShardConfigError,
  shardRouting,
} from "../src/shards";
import {
  as,
  type Bindings,
  countingD1,
  JSONAPI,
  newFeed,
  ORIGIN,
  send,
  shardDatabases,
  shardFor,
  subscriptionDocument,
  tokenFor,
} from "./helpers";

/** Every database of the configuration behind a call counter, and the bindings that put the counters in place. */
function countEveryDatabase() {
  const counters = shardDatabases().map(({ name, database }) => ({ name, counter: countingD1(database) }));
  return {
    bindings: Object.fromEntries(counters.map(({ name, counter }) => [name, counter.binding])) as Partial<Bindings>,
    /** Calls per database name since the last reset. */
    calls: () => Object.fromEntries(counters.map(({ name, counter }) => [name, counter.calls()])),
    reset: () => {
      for (const { counter } of counters) counter.reset();
    },
  };
}

async function usersIn(database: D1Database): Promise<Set<string>> {
  const { results } = await database
    .prepare("SELECT user_id FROM subscriptions UNION SELECT user_id FROM user_stats")
    .all<{ user_id: string }>();
  return new Set(results.map((row) => row.user_id));
}

describe("buckets", () => {
  it("a user's bucket is the first 4 bytes of SHA-256(user id), big-endian, modulo 1024", async () => {
    // SHA-256("alice") starts 2bd806c9 = 735577801 = 718337 * 1024 + 713 (computed outside this code base).
    expect(await bucketOf("alice")).toBe(713);
    expect(await bucketOf("bob")).toBe(984); // 81b637d8
    expect(await bucketOf("dev-user")).toBe(972); // 2aed2fcc
    expect(BUCKET_COUNT).toBe(1024);
  });

  it("reads maps and bucket sets, and writes them back in the same form", () => {
    const map = parseShardMap(" DB:0-255 , DB_2:512-767, DB_1:256-511,DB_1:768-1023 ");
    expect(map.owners[255]).toBe("DB");
    expect(map.owners[256]).toBe("DB_1");
    expect(map.owners[600]).toBe("DB_2");
    expect(map.bindings).toEqual(["DB", "DB_2", "DB_1"]);
    expect(formatShardMap(map)).toBe("DB:0-255,DB_1:256-511,DB_2:512-767,DB_1:768-1023");
    expect(parseShardMap("").owners.every((owner) => owner === "DB")).toBe(true);
    expect(formatShardMap(parseShardMap(""))).toBe("DB:0-1023");
    expect(formatBucketSet(parseBucketSet("3,512-767,1,2", "SHARD_FROZEN"))).toBe("1-3,512-767");
    expect(parseBucketSet("", "SHARD_FROZEN").size).toBe(0);
  });

  it("refuses maps with an unmapped bucket, an overlap, a bad range or entry", () => {
    for (const [text, message] of [
      ["DB:0-511", /bucket 512 is not mapped/],
      ["DB:0-600,DB_1:500-1023", /bucket 500 is mapped twice \(DB and DB_1\)/],
      ["DB:0-1024", /reaches past bucket 1023/],
      ["DB:10-5,DB:0-1023", /reversed/],
      ["0-1023", /is not BINDING:FIRST-LAST/],
      ["DB-0-1023", /is not BINDING:FIRST-LAST/],
      ["DB:0-1023,DB:x", /is not a bucket range/],
    ] as const) {
      expect(() => parseShardMap(text), text).toThrow(ShardConfigError);
      expect(() => parseShardMap(text), text).toThrow(message);
    }
  });

  it("parses each distinct map once per isolate", () => {
    const settings = { ...env, SHARD_MAP: "DB:0-1023" };
    expect(shardRouting(settings).map).toBe(shardRouting({ ...settings }).map);
  });
});

describe("placement", () => {
  it("puts every user in exactly the database the map names, and with two shards uses both", async () => {
    const users = Array.from({ length: 24 }, (_, i) => `placement-${i}`);
    for (const userId of users) {
      const feed = newFeed();
      const created = await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
      expect(created.status).toBe(201);
    }
    const holders = await Promise.all(
      shardDatabases().map(async ({ name, database }) => ({ name, users: await usersIn(database) })),
    );
    for (const userId of users) {
      const holding = holders.filter((holder) => holder.users.has(userId)).map((holder) => holder.name);
      expect(holding, userId).toEqual([(await shardFor(userId)).name]);
    }
    for (const holder of holders) {
      expect(users.filter((userId) => holder.users.has(userId)).length, holder.name).toBeGreaterThan(0);
    }
  });

  it("every request touches exactly one database: the user's", async () => {
    const watch = countEveryDatabase();
    for (const userId of ["touch-a", "touch-b", "touch-c", "touch-d"]) {
      const user = await as(userId, watch.bindings);
      const { name } = await shardFor(userId);
      const feed = newFeed();
      const requests = [
        () => user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl)),
        () => user.get("/v1/subscriptions"),
        () => user.get(`/v1/subscriptions/${feed.guid}`),
        () =>
          user.operations({
            "atomic:operations": [{ op: "add", ...subscriptionDocument(feed.guid, "https://x.example/f") }],
          }),
        () => user.delete(`/v1/subscriptions/${feed.guid}`),
      ];
      for (const request of requests) {
        watch.reset();
        expect((await request()).status).toBeLessThan(300);
        const calls = watch.calls();
        expect(calls[name], userId).toBe(1);
        expect(
          Object.values(calls).reduce((sum, n) => sum + n, 0),
          userId,
        ).toBe(1);
      }
    }
  });
});

describe("a wrong shard configuration", () => {
  const badSettings: [string, Partial<Bindings>][] = [
    ["an unmapped bucket", { SHARD_MAP: "DB:0-1022" }],
    ["an overlap", { SHARD_MAP: "DB:0-1023,DB:1023" }],
    ["a binding that does not exist", { SHARD_MAP: "DB:0-511,DB_9:512-1023" }],
    ["a binding that is not a D1 database", { SHARD_MAP: "DB:0-511,USER_RATE_LIMITER:512-1023" }],
    ["an unreadable map", { SHARD_MAP: "everything in DB" }],
    ["unreadable frozen buckets", { SHARD_FROZEN: "512-" }],
  ];
  for (const [what, settings] of badSettings) {
    it(`with ${what}: every /v1 request answers 500 with a configuration error, never data`, async () => {
      const owner = await as("config-owner");
      const feed = newFeed();
      expect((await owner.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
      const watch = countEveryDatabase();
      const error = vi.spyOn(console, "error").mockImplementation(() => {});
      const bindings = { ...watch.bindings, ...settings };
      const token = await tokenFor("config-owner");
      const requests = [
        new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Authorization: `Bearer ${token}` } }),
        new Request(`${ORIGIN}/v1/subscriptions/${feed.guid}`, { headers: { Authorization: `Bearer ${token}` } }),
        new Request(`${ORIGIN}/v1/subscriptions`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": JSONAPI },
          body: JSON.stringify(subscriptionDocument(crypto.randomUUID(), "https://x.example/f")),
        }),
        new Request(`${ORIGIN}/v1/subscriptions`), // no token: the configuration is checked first
      ];
      for (const request of requests) {
        const response = await send(request, bindings);
        expect(response.status).toBe(500);
        expect(response.headers.get("Content-Type")).toBe(JSONAPI);
        const body = (await response.json()) as { data?: unknown; errors: { status: string; title: string }[] };
        expect(body.data).toBeUndefined();
        expect(body.errors).toEqual([expect.objectContaining({ status: "500", title: "Configuration error" })]);
        expect(response.headers.get("X-D1-Bookmark")).toBeNull();
      }
      expect(Object.values(watch.calls())).toEqual(Object.values(watch.calls()).map(() => 0));
      expect(error).toHaveBeenCalledWith(expect.stringContaining('"event":"configuration_error"'));
      error.mockRestore();
    });
  }

  it("does not stop /ext, which reads no user data", async () => {
    const response = await send(new Request(`${ORIGIN}/ext/link-method`), { SHARD_MAP: "DB:0" });
    expect(response.status).toBe(200);
  });
});
