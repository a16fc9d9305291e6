import { describe, expect, it } from "vitest";
import { bucketOf } from "../src/shards";
import { as, type Bindings, JSONAPI, newFeed, shardDatabases, shardFor, subscriptionDocument } from "./helpers";

const BOOKMARK = "X-D1-Bookmark";

/** Every database of the configuration, recording the constraint each D1 session is opened with. */
function recordSessions() {
  const opened: { database: string; constraint: string | undefined }[] = [];
  const bindings = Object.fromEntries(
    shardDatabases().map(({ name, database }) => [
      name,
      new Proxy(database, {
        get(target, property) {
          if (property === "withSession") {
            return (constraint?: string) => {
              opened.push({ database: name, constraint });
              return target.withSession(constraint);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    ]),
  ) as Partial<Bindings>;
  return { bindings, opened };
}

describe("X-D1-Bookmark", () => {
  it("is checked after routing: a bad bookmark leaves an unknown path 404 and a wrong method 405", async () => {
    const user = await as(`bookmark-routing-${crypto.randomUUID()}`);
    const unknown = await user.get("/v1/nothing-here", { [BOOKMARK]: "garbage" });
    expect(unknown.status).toBe(404);
    const wrongMethod = await user.patch("/v1/subscriptions", {}, { [BOOKMARK]: "garbage" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("Allow")).toBe("GET, HEAD, POST");
    const routed = await user.get(`/v1/subscriptions/${crypto.randomUUID()}`, { [BOOKMARK]: "garbage" });
    expect(routed.status).toBe(400);
  });

  for (const bad of [
    "garbage",
    "00000085-0000024c-00004c6d-8E61117BF38D7ADB71B934EBBF891683",
    "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf89168",
    "first-primary",
  ]) {
    it(`refuses ${JSON.stringify(bad)} with 400 naming the header, and never echoes it`, async () => {
      const userId = `bookmark-shape-${bad}`;
      const user = await as(userId);
      const sessions = recordSessions();
      const recorded = await as(userId, sessions.bindings);
      for (const response of [
        await user.get("/v1/subscriptions", { [BOOKMARK]: bad }),
        await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://b.example/f"), {
          [BOOKMARK]: bad,
        }),
        await recorded.get("/v1/subscriptions", { [BOOKMARK]: bad }),
      ]) {
        expect(response.status).toBe(400);
        expect(response.headers.get("Content-Type")).toBe(JSONAPI);
        const body = (await response.json()) as { errors: { title: string; source: unknown }[] };
        expect(body.errors).toEqual([
          expect.objectContaining({ title: "Invalid bookmark", source: { header: BOOKMARK } }),
        ]);
        expect(response.headers.get(BOOKMARK)).toBeNull();
        expect(JSON.stringify(body)).not.toContain(bad);
      }
      expect(sessions.opened).toEqual([]);
      expect((await (await user.get("/v1/subscriptions")).json()) as { meta: unknown }).toMatchObject({
        meta: { total: 0 },
      });
    });
  }

  it("passes a well-formed bookmark to the user's own database only, and answers with its newer one", async () => {
    const user = await as("bookmark-own");
    const feed = newFeed();
    const written = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const bookmark = written.headers.get(BOOKMARK) as string;
    expect(bookmark).toMatch(/^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/);
    const sessions = recordSessions();
    const read = await (await as("bookmark-own", sessions.bindings)).get(`/v1/subscriptions/${feed.guid}`, {
      [BOOKMARK]: bookmark,
    });
    expect(read.status).toBe(200);
    expect(sessions.opened).toEqual([{ database: (await shardFor("bookmark-own")).name, constraint: bookmark }]);
    expect((read.headers.get(BOOKMARK) as string) >= bookmark).toBe(true);
  });

  it("opens writes at the primary whatever bookmark comes with them", async () => {
    const sessions = recordSessions();
    const user = await as("bookmark-write", sessions.bindings);
    const first = await user.post(
      "/v1/subscriptions",
      subscriptionDocument(crypto.randomUUID(), "https://w.example/1"),
    );
    await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://w.example/2"), {
      [BOOKMARK]: first.headers.get(BOOKMARK) as string,
    });
    const { name } = await shardFor("bookmark-write");
    expect(sessions.opened).toEqual([
      { database: name, constraint: "first-primary" },
      { database: name, constraint: "first-primary" },
    ]);
  });
});

describe("frozen buckets (SHARD_FROZEN, during a bucket move)", () => {
  it("refuse the writes of their users with 503 and Retry-After, keep their reads, and leave other users alone", async () => {
    const userId = "frozen-user";
    const user = await as(userId);
    const feed = newFeed();
    expect((await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
    const bucket = await bucketOf(userId);
    let neighbour = "frozen-neighbour-0";
    for (let i = 1; (await bucketOf(neighbour)) === bucket; i++) neighbour = `frozen-neighbour-${i}`;
    const frozen = { SHARD_FROZEN: `${bucket}` };
    const frozenUser = await as(userId, frozen);

    const writes = [
      () => frozenUser.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://f.example/a")),
      () => frozenUser.delete(`/v1/subscriptions/${feed.guid}`),
      () =>
        frozenUser.operations({
          "atomic:operations": [{ op: "add", ...subscriptionDocument(crypto.randomUUID(), "https://f.example/b") }],
        }),
    ];
    for (const write of writes) {
      const response = await write();
      expect(response.status).toBe(503);
      expect(response.headers.get("Retry-After")).toMatch(/^[1-9]\d*$/);
      const body = (await response.json()) as { errors: { status: string; title: string }[] };
      expect(body.errors).toEqual([expect.objectContaining({ status: "503", title: "Temporarily read-only" })]);
    }
    const list = await frozenUser.get("/v1/subscriptions");
    expect(list.status).toBe(200);
    expect(((await list.json()) as { meta: { total: number } }).meta.total).toBe(1);
    expect((await frozenUser.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(200);

    const other = await as(neighbour, frozen);
    const otherFeed = newFeed();
    expect(
      (await other.post("/v1/subscriptions", subscriptionDocument(otherFeed.guid, otherFeed.feedUrl))).status,
    ).toBe(201);
    expect((await user.delete(`/v1/subscriptions/${feed.guid}`)).status).toBe(204);
  });

  it("read the primary, ignoring any bookmark: one from the database the bucket is leaving must not be used", async () => {
    const userId = "frozen-reader";
    const bookmark = (await (await as(userId)).get("/v1/subscriptions")).headers.get(BOOKMARK) as string;
    const sessions = recordSessions();
    const reader = await as(userId, { ...sessions.bindings, SHARD_FROZEN: `${await bucketOf(userId)}` });
    const response = await reader.get("/v1/subscriptions", { [BOOKMARK]: bookmark });
    expect(response.status).toBe(200);
    expect(sessions.opened).toEqual([{ database: (await shardFor(userId)).name, constraint: "first-primary" }]);
    expect(response.headers.get(BOOKMARK)).toMatch(/^[0-9a-f]{8}-/);
  });
});
