import { describe, expect, it } from "vitest";
import { activeFeedPages, opmlStatements } from "../src/db/opml";
import { allStatements } from "../src/db/subscriptions";
import {
  addOperation,
  as,
  databaseFor,
  meteredDatabaseOf,
  newFeed,
  ORIGIN,
  seedSubscriptions,
  send,
  subscriptionDocument,
} from "./helpers";

const PAGE_SIZE = 25;

describe("reads cost what they return", () => {
  for (const count of [10, 300, 10_000]) {
    it(`list page 1 reads at most page size + 2 rows for a user with ${count} subscriptions`, async () => {
      const userId = `rows-${count}`;
      await seedSubscriptions(userId, count);
      const meter = await meteredDatabaseOf(userId);
      const user = await as(userId, meter.bindings);
      const response = await user.get("/v1/subscriptions");
      const body = (await response.json()) as { data: unknown[]; meta: { total: number } };
      expect(body.meta.total).toBe(count);
      expect(body.data).toHaveLength(Math.min(count, PAGE_SIZE));
      expect(meter.totals.rowsRead).toBeLessThanOrEqual(PAGE_SIZE + 2);
    });
  }

  it("never reads tombstones: 2 000 unsubscribed rows cost nothing to list", async () => {
    await seedSubscriptions("rows-tombstones", 2000, { unsubscribed: true });
    await seedSubscriptions("rows-tombstones", 5);
    const meter = await meteredDatabaseOf("rows-tombstones");
    const user = await as("rows-tombstones", meter.bindings);
    const body = (await (await user.get("/v1/subscriptions")).json()) as { meta: { total: number } };
    expect(body.meta.total).toBe(5);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(5 + 2);
  });

  it("the OPML export reads its own rows and no tombstone: 300 active among 2 000 unsubscribed", async () => {
    await seedSubscriptions("rows-opml", 2000, { unsubscribed: true });
    await seedSubscriptions("rows-opml", 300);
    const meter = await meteredDatabaseOf("rows-opml");
    const token = (await as("rows-opml")).token;
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions.opml`, { headers: { Authorization: `Bearer ${token}` } }),
      meter.bindings,
    );
    expect((await response.text()).match(/<outline /g)).toHaveLength(300);
    // One walk of the list's index (tombstones are not in it), cut by the size of its text: D1 counts three rows
    // read per row walked (the walk, and the running sum's sort and frame), and the statement's own row.
    expect(meter.totals.statements).toHaveLength(1);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(3 * 300 + 2);
  });

  it("a deep list page walks its OFFSET in the page index alone: no table lookup per skipped row", async () => {
    await seedSubscriptions("rows-deep", 300);
    const meter = await meteredDatabaseOf("rows-deep");
    const user = await as("rows-deep", meter.bindings);
    const body = (await (await user.get("/v1/subscriptions?page[number]=3&page[size]=100")).json()) as {
      data: unknown[];
    };
    expect(body.data).toHaveLength(100);
    // The skipped entries are read (D1 counts them) but never looked up in the table (it does not).
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(300 + 2);
    const { params } = meter.totals.statements.find((s) => s.sql === allStatements.list.sql) as { params: unknown[] };
    const plan = await (await databaseFor("rows-deep"))
      .prepare(`EXPLAIN QUERY PLAN ${allStatements.list.sql}`)
      .bind(...params)
      .all<{ detail: string }>();
    const details = plan.results.map((row) => row.detail);
    expect(details, details.join("\n")).toContain(
      "SEARCH b USING COVERING INDEX subscriptions_active_page (user_id=?)",
    );
  });

  it("get one reads at most two rows", async () => {
    await seedSubscriptions("rows-get", 500);
    const user = await as("rows-get");
    const { data } = (await (await user.get("/v1/subscriptions?page[size]=1")).json()) as { data: { id: string }[] };
    const meter = await meteredDatabaseOf("rows-get");
    const metered = await as("rows-get", meter.bindings);
    expect((await metered.get(`/v1/subscriptions/${data[0].id}`)).status).toBe(200);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(2);
  });
});

describe("conditional requests", () => {
  it("list: ETag, then 304 for If-None-Match after reading one row, then 200 after any write", async () => {
    const user = await as("etag-list");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const first = await user.get("/v1/subscriptions");
    const etag = first.headers.get("ETag") as string;
    expect(etag).toMatch(/^"[0-9a-f]{8}-\d+"$/);
    expect(first.headers.get("Cache-Control")).toBe("private, no-cache");

    const meter = await meteredDatabaseOf("etag-list");
    const metered = await as("etag-list", meter.bindings);
    const cached = await metered.get("/v1/subscriptions", { "If-None-Match": etag });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe("");
    expect(cached.headers.get("ETag")).toBe(etag);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(1);
    expect((await user.get("/v1/subscriptions", { "If-None-Match": `W/${etag}` })).status).toBe(304);
    expect((await user.get("/v1/subscriptions", { "If-None-Match": `"x", ${etag}` })).status).toBe(304);

    const writes = [
      () => user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), "https://b.example/f")),
      () => user.delete(`/v1/subscriptions/${feed.guid}`),
      () => user.operations({ "atomic:operations": [addOperation(feed.guid, feed.feedUrl)] }),
    ];
    let current = etag;
    for (const write of writes) {
      await write();
      const after = await user.get("/v1/subscriptions", { "If-None-Match": current });
      expect(after.status).toBe(200);
      expect(after.headers.get("ETag")).not.toBe(current);
      current = after.headers.get("ETag") as string;
    }
  });

  it("a no-op write (already subscribed) keeps the ETag", async () => {
    const user = await as("etag-noop");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const etag = (await user.get("/v1/subscriptions")).headers.get("ETag") as string;
    expect((await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(200);
    expect((await user.get("/v1/subscriptions", { "If-None-Match": etag })).status).toBe(304);
  });

  it("get one: 304 for its own tag after reading two rows; never for another URL's or user's tag", async () => {
    const user = await as("etag-get");
    const other = await as("etag-get-other");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await other.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const path = `/v1/subscriptions/${feed.guid}`;
    const etag = (await user.get(path)).headers.get("ETag") as string;

    const meter = await meteredDatabaseOf("etag-get");
    const metered = await as("etag-get", meter.bindings);
    expect((await metered.get(path, { "If-None-Match": etag })).status).toBe(304);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(2);

    const listTag = (await user.get("/v1/subscriptions")).headers.get("ETag") as string;
    expect((await user.get(path, { "If-None-Match": listTag })).status).toBe(200);
    expect((await other.get(path, { "If-None-Match": etag })).status).toBe(200);
    expect((await user.get(`/v1/subscriptions/${crypto.randomUUID()}`, { "If-None-Match": etag })).status).toBe(404);
    expect((await user.get("/v1/subscriptions?page[size]=10", { "If-None-Match": listTag })).status).toBe(200);
    expect((await user.get(path, { "If-None-Match": "*" })).status).toBe(304);
  });

  it("never turns a 404 into a 304: a current tag for an unsubscribed guid, or If-None-Match: *, still answers 404", async () => {
    const user = await as("etag-404");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feed.guid}`);
    const path = `/v1/subscriptions/${feed.guid}`;
    // The tag the server would give this URL now: forged from the current version, as any client could.
    const listTag = (await user.get("/v1/subscriptions")).headers.get("ETag") as string;
    const version = listTag.slice(listTag.lastIndexOf("-") + 1, -1);
    const { entityTag } = await import("../src/etag");
    const forged = entityTag(user.userId, path, Number(version));
    expect((await user.get(path, { "If-None-Match": forged })).status).toBe(404);
    expect((await user.get(path, { "If-None-Match": "*" })).status).toBe(404);
  });
});

describe("read replication (D1 Sessions API)", () => {
  it("returns a bookmark that advances with writes; sending it back reads your own writes", async () => {
    const user = await as("bookmark");
    const before = (await user.get("/v1/subscriptions")).headers.get("X-D1-Bookmark");
    expect(before).toBeTruthy();
    const feed = newFeed();
    const created = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const bookmark = created.headers.get("X-D1-Bookmark") as string;
    expect(bookmark).toBeTruthy();
    expect(bookmark > (before as string)).toBe(true);
    const read = await user.get(`/v1/subscriptions/${feed.guid}`, { "X-D1-Bookmark": bookmark });
    expect(read.status).toBe(200);
    expect((read.headers.get("X-D1-Bookmark") as string) >= bookmark).toBe(true);
  });
});

describe("query plans", () => {
  it("no statement the app issues scans a table", async () => {
    const meter = await meteredDatabaseOf("plans");
    const user = await as("plans", meter.bindings);
    const feed = newFeed();
    const path = `/v1/subscriptions/${feed.guid}`;
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const etag = (await user.get("/v1/subscriptions?page[number]=2&page[size]=3")).headers.get("ETag") as string;
    await user.get("/v1/subscriptions?page[number]=2&page[size]=3", { "If-None-Match": etag });
    await user.get(path);
    await user.operations({ "atomic:operations": [addOperation(crypto.randomUUID(), "https://c.example/f")] });
    await user.patch(path, subscriptionDocument(feed.guid, "https://moved.example/f"));
    await user.get("/v1/subscriptions?filter[since]=0&page[size]=2");
    // The reads with the podcasts (docs/API.md §18).
    await user.get("/v1/subscriptions?page[number]=2&page[size]=3&include=podcast");
    await user.get("/v1/subscriptions?filter[since]=0&page[size]=2&include=podcast");
    await user.get(`${path}?include=podcast`);
    await user.operations({
      "atomic:operations": [
        { op: "update", data: { type: "subscription", id: feed.guid, attributes: { feedUrl: "https://d.example/" } } },
        { op: "remove", ref: { type: "subscription", id: feed.guid } },
      ],
    });
    await user.delete(path);
    await user.get("/v1/subscriptions?page[number]=9");
    const opml = `<opml><body><outline xmlUrl="https://e.example/f"/><outline xmlUrl="${feed.feedUrl}" guid="${feed.guid}"/></body></opml>`;
    const opmlRequest = (init: RequestInit) =>
      send(
        new Request(`${ORIGIN}/v1/subscriptions.opml`, {
          ...init,
          headers: { ...init.headers, Authorization: `Bearer ${user.token}` },
        }),
        meter.bindings,
      );
    const imported = await opmlRequest({ method: "POST", body: opml, headers: { "Content-Type": "text/x-opml" } });
    expect(imported.status).toBe(200);
    expect((await opmlRequest({})).status).toBe(200);
    // The simple API's JSON and text lists read the feeds without their podcasts.
    await activeFeedPages(meter.binding, "plans").next();

    const distinct = new Map(meter.totals.statements.map((statement) => [statement.sql, statement]));
    // Every statement the db modules define was issued above, so each is checked below.
    for (const [name, statement] of Object.entries({ ...allStatements, ...opmlStatements })) {
      expect(distinct.has(statement.sql), `statement ${name} not exercised`).toBe(true);
    }
    for (const { sql, params } of distinct.values()) {
      const { results } = await (await databaseFor("plans"))
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>();
      const details = results.map((row) => row.detail);
      // A table scan, or a sort in a temporary b-tree (reads every row before returning the first).
      const scans = details.filter((detail) => /^SCAN (subscriptions|user_stats)\b|TEMP B-TREE/.test(detail));
      expect(scans, `${sql}\n${details.join("\n")}`).toEqual([]);
    }
  });
});

describe("writes cost what they change", () => {
  it("a new subscription writes at most 8 rows (row, four index entries, the user's stats, a new feed's row and its due entry); a re-add writes none", async () => {
    const meter = await meteredDatabaseOf("rows-written");
    const user = await as("rows-written", meter.bindings);
    const feeds = Array.from({ length: 100 }, () => newFeed());
    await user.operations({ "atomic:operations": feeds.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    expect(meter.totals.rowsWritten / feeds.length).toBeLessThanOrEqual(8);
    meter.reset();
    await user.operations({ "atomic:operations": feeds.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    expect(meter.totals.rowsWritten).toBe(0);
    meter.reset();
    await user.patch(`/v1/subscriptions/${feeds[0].guid}`, subscriptionDocument(feeds[0].guid, feeds[0].feedUrl));
    expect(meter.totals.rowsWritten).toBe(0);
  });
});
