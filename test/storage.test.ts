import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { accountStatements, accountUsage } from "../src/db/account";
import { RENUMBERED_PER_RUN, TOMBSTONE_RETENTION_MS } from "../src/db/retention";
import { MAX_URL_BYTES } from "../src/db/storage";
import {
  addOperation,
  applyChanges,
  as,
  type Caller,
  countingD1,
  databaseFor,
  listAll,
  newFeed,
  ORIGIN,
  runCron,
  seedSubscriptions,
  send,
  subscriptionDocument,
  syncFrom,
  withinOneRateWindow,
} from "./helpers";

/** docs/API.md §15: the storage budget, tombstones recycled at a quota or the budget and after 180 days, erasure. */

type ErrorDocument = { errors: { status: string; title: string; detail: string; source?: unknown; meta?: unknown }[] };
type Results = { "atomic:results": { data?: unknown; errors?: ErrorDocument["errors"] }[] };

const MAX_SUBSCRIPTIONS = 10_000;
const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";

async function stats(userId: string) {
  return (await databaseFor(userId))
    .prepare("SELECT * FROM user_stats WHERE user_id = ?")
    .bind(userId)
    .first<Record<string, number>>();
}

async function rowCount(userId: string, table: string, where = "1") {
  const row = await (await databaseFor(userId))
    .prepare(`SELECT count(*) AS n FROM ${table} WHERE user_id = ? AND ${where}`)
    .bind(userId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** A URL of exactly `bytes` UTF-8 bytes. */
function urlOf(bytes: number, tag = crypto.randomUUID()): string {
  const head = `https://feeds.example.com/${tag}/`;
  return head + "a".repeat(bytes - head.length);
}

async function expectExpired(user: Caller, path: string, token: string) {
  const response = await user.get(`${path}?filter[since]=${token}`);
  expect(response.status, `token ${token}`).toBe(410);
  const [error] = ((await response.json()) as ErrorDocument).errors;
  expect(error).toMatchObject({ status: "410", title: "Sync token expired", source: { parameter: "filter[since]" } });
  expect(error.detail).toContain("filter[since]=0");
}

describe("the storage budget: 8 MiB of URL text per user (docs/API.md §15)", () => {
  it("refuses a subscription that would pass it when live rows fill it: 403 on POST, inline in bulk, skipped in OPML", async () => {
    const userId = "budget-full";
    // 4 095 live subscriptions of 2 048 bytes: 8 386 560 bytes, 2 048 short of the budget.
    await seedSubscriptions(userId, 4095, { feedUrl: (guid) => urlOf(2048, guid) });
    expect((await stats(userId))?.url_bytes).toBe(4095 * 2048);
    const user = await as(userId);
    const fits = newFeed();
    const fitting = await user.post("/v1/subscriptions", subscriptionDocument(fits.guid, urlOf(2048)));
    expect(fitting.status).toBe(201);
    expect((await stats(userId))?.url_bytes).toBe(MAX_URL_BYTES);

    const refused = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), urlOf(100)));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as ErrorDocument).errors[0]).toEqual({
      status: "403",
      title: "Storage limit reached",
      detail: expect.stringContaining(String(MAX_URL_BYTES)),
      meta: { maxBytes: MAX_URL_BYTES },
    });
    const bulk = (await (
      await user.operations({ "atomic:operations": [addOperation(crypto.randomUUID(), urlOf(100))] })
    ).json()) as Results;
    expect(bulk["atomic:results"][0].errors?.[0]).toMatchObject({
      title: "Storage limit reached",
      source: { pointer: "/atomic:operations/0" },
      meta: { maxBytes: MAX_URL_BYTES },
    });
    const opmlUrl = urlOf(100);
    const opml = await send(
      new Request(`${ORIGIN}/v1/subscriptions.opml`, {
        method: "POST",
        headers: { Authorization: `Bearer ${user.token}`, "Content-Type": "text/x-opml" },
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head><title>t</title></head><body><outline type="rss" text="x" xmlUrl="${opmlUrl}"/></body></opml>`,
      }),
    );
    expect(opml.status).toBe(200);
    expect(((await opml.json()) as { meta: unknown }).meta).toEqual({
      imported: 0,
      alreadySubscribed: 0,
      skipped: [{ xmlUrl: opmlUrl, reason: expect.stringContaining(`at most ${MAX_URL_BYTES} bytes`) }],
    });
    // A move that shrinks the URL works; one that grows it past the budget is refused, nothing written.
    const move = (feedUrl: string) =>
      user.patch(`/v1/subscriptions/${fits.guid}`, {
        data: { type: "subscription", id: fits.guid, attributes: { feedUrl } },
      });
    expect((await move(urlOf(100))).status).toBe(200);
    const filler = newFeed();
    expect((await user.post("/v1/subscriptions", subscriptionDocument(filler.guid, urlOf(1948)))).status).toBe(201);
    const grown = await move(urlOf(101));
    expect(grown.status).toBe(403);
    expect(((await grown.json()) as ErrorDocument).errors[0]).toMatchObject({
      title: "Storage limit reached",
      meta: { maxBytes: MAX_URL_BYTES },
    });
    expect((await move(urlOf(100))).status).toBe(200);
    await user.delete(`/v1/subscriptions/${filler.guid}`);
    // Episode states count too: a mediaUrl over the budget is refused.
    const episode = await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: crypto.randomUUID(),
        attributes: { mediaUrl: urlOf(100) },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    // The tombstone of filler (1 948 bytes) was purged to make room for the state.
    expect(episode.status).toBe(201);
    expect(await rowCount(userId, "subscriptions", `guid = '${filler.guid}'`)).toBe(0);
    const noRoom = await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: crypto.randomUUID(),
        attributes: { mediaUrl: urlOf(2048) },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    expect(noRoom.status).toBe(403);
    expect(((await noRoom.json()) as ErrorDocument).errors[0]).toMatchObject({ title: "Storage limit reached" });
    expect((await stats(userId))?.url_bytes).toBeLessThanOrEqual(MAX_URL_BYTES);
  });

  it("the count quota's error wins when both would be passed", async () => {
    const userId = "budget-and-count";
    await seedSubscriptions(userId, MAX_SUBSCRIPTIONS);
    await (await databaseFor(userId))
      .prepare("UPDATE user_stats SET url_bytes = ? WHERE user_id = ?")
      .bind(MAX_URL_BYTES, userId)
      .run();
    const user = await as(userId);
    const response = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), urlOf(100)));
    expect(response.status).toBe(403);
    expect(((await response.json()) as ErrorDocument).errors[0].title).toBe("Subscription limit reached");
  });

  it("purges the oldest subscription tombstones to make room, renumbering live rows below them", async () => {
    const userId = "budget-recycle";
    const user = await as(userId);
    const old = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(old.guid, urlOf(2048)));
    const dead = Array.from({ length: 3 }, () => newFeed());
    for (const feed of dead) {
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, urlOf(2048)));
      await user.delete(`/v1/subscriptions/${feed.guid}`);
    }
    const before = await syncFrom(user, "0");
    const early = "2"; // after `old` and the first tombstone's subscription
    // Fill the budget with live rows above everything (4 092 x 2 048 bytes).
    await seedSubscriptions(userId, 4092, { feedUrl: (guid) => urlOf(2048, guid) });
    expect((await stats(userId))?.url_bytes).toBe(MAX_URL_BYTES);
    const fresh = newFeed();
    const ok = await user.post("/v1/subscriptions", subscriptionDocument(fresh.guid, urlOf(2048)));
    expect(ok.status).toBe(201);
    const after = await stats(userId);
    expect(after?.url_bytes).toBeLessThanOrEqual(MAX_URL_BYTES);
    // The oldest tombstone (change 3) went; `old` (change 1, below it) took a fresh number.
    expect(after?.subscription_horizon).toBe(3);
    expect(await rowCount(userId, "subscriptions", "unsubscribed_at IS NOT NULL")).toBe(2);
    expect(await rowCount(userId, "subscriptions", "change_seq < 3")).toBe(0);
    await expectExpired(user, "/v1/subscriptions", early);
    await expectExpired(user, "/v1/subscriptions", "1");
    // A device that had everything up to its token still converges.
    const device = applyChanges(new Map(), before.items);
    applyChanges(device, (await syncFrom(user, before.token, 100)).items);
    expect(device).toEqual(await listAll(user));
    // A walk from 0 completes, page size 1 included, and ends in the server's state.
    const walk = applyChanges(new Map(), (await syncFrom(user, "0", 100)).items);
    expect(walk).toEqual(await listAll(user));
  }, 60_000);
});

describe("near the budget, listening still saves: a write that does not grow the URL text is never refused (docs/API.md §13, §15)", () => {
  it("position-only and played-only PATCH, bulk update, a POST merge and an itemGuid set to null, with 100 bytes left", async () => {
    const userId = "budget-listening";
    const user = await as(userId);
    const id = crypto.randomUUID();
    const episode = (attributes: Record<string, unknown>) => ({
      data: {
        type: "episode",
        id,
        attributes,
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    // A state whose URL text (2 000 + 500 bytes) is far more than the room left.
    const mediaUrl = urlOf(2000);
    const created = await user.post("/v1/episodes", episode({ mediaUrl, itemGuid: "g".repeat(500) }));
    expect(created.status).toBe(201);
    // A subscription tombstone the budget could purge: a write that needs no room must leave it.
    const gone = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(gone.guid, gone.feedUrl));
    await user.delete(`/v1/subscriptions/${gone.guid}`);
    const db = await databaseFor(userId);
    await db
      .prepare("UPDATE user_stats SET url_bytes = ? WHERE user_id = ?")
      .bind(MAX_URL_BYTES - 100, userId)
      .run();
    let second = 0;
    const changedAt = () => new Date(Date.UTC(2030, 0, 1, 0, 0, ++second)).toISOString();
    const patch = (attributes: Record<string, unknown>) =>
      user.patch(`/v1/episodes/${id}`, { data: { type: "episode", id, attributes } });

    expect((await patch({ position: 60, changedAt: changedAt() })).status).toBe(200);
    expect((await patch({ played: true, changedAt: changedAt() })).status).toBe(200);
    const bulk = (await (
      await user.operations({
        "atomic:operations": [
          { op: "update", data: { type: "episode", id, attributes: { position: 90, changedAt: changedAt() } } },
        ],
      })
    ).json()) as Results;
    expect(bulk["atomic:results"][0].errors).toBeUndefined();
    expect((await user.post("/v1/episodes", episode({ mediaUrl, position: 120, changedAt: changedAt() }))).status).toBe(
      200,
    );
    // Setting itemGuid to null frees 500 bytes.
    const freed = await patch({ itemGuid: null });
    expect(freed.status).toBe(200);
    expect(((await freed.json()) as { data: { attributes: unknown } }).data.attributes).toMatchObject({
      itemGuid: null,
      position: 120,
      played: true,
    });
    expect((await stats(userId))?.url_bytes).toBe(MAX_URL_BYTES - 100 - 500);
    expect(await rowCount(userId, "subscriptions", "unsubscribed_at IS NOT NULL")).toBe(1);
    // A write that grows the text past the room is still refused.
    expect((await patch({ itemGuid: "h".repeat(1024) })).status).toBe(403);
  });
});

describe("tombstones are recycled at the count quotas, never a lockout (docs/API.md §15)", () => {
  it("subscriptions: the oldest tombstones make room; 410 only for tokens below the purged ones", async () => {
    const userId = "recycle-subscriptions";
    const user = await as(userId);
    const first = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(first.guid, first.feedUrl));
    await seedSubscriptions(userId, MAX_SUBSCRIPTIONS - 2, { unsubscribed: true });
    const last = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(last.guid, last.feedUrl));
    const version = (await stats(userId))?.version as number;
    expect(version).toBe(MAX_SUBSCRIPTIONS);
    const adds = Array.from({ length: 3 }, () => newFeed());
    const response = await user.operations({
      "atomic:operations": adds.map((feed) => addOperation(feed.guid, feed.feedUrl)),
    });
    const results = ((await response.json()) as Results)["atomic:results"];
    expect(results.every((result) => result.data)).toBe(true);
    const after = await stats(userId);
    expect(after?.stored_count).toBe(MAX_SUBSCRIPTIONS);
    expect(after?.subscription_horizon).toBe(4); // tombstones 2, 3 and 4 purged
    expect(await rowCount(userId, "subscriptions", `change_seq <= 4`)).toBe(0);
    await expectExpired(user, "/v1/subscriptions", "1");
    await expectExpired(user, "/v1/subscriptions", "3");
    // At or above the horizon: served, with the renumbered `first` again and the three adds.
    const since = (await (await user.get(`/v1/subscriptions?filter[since]=${version}`)).json()) as {
      data: { id: string }[];
    };
    expect(since.data.map((item) => item.id).sort()).toEqual([first.guid, ...adds.map((feed) => feed.guid)].sort());
    expect((await user.get("/v1/subscriptions?filter[since]=4")).status).toBe(200);
  });

  it("episodes: episode tombstones make room for a new state; only live states alone refuse it", async () => {
    const userId = "recycle-episodes";
    const db = await databaseFor(userId);
    // One live state numbered first (and first by id), then 49 999 tombstones, in one statement.
    await db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
         INSERT INTO episodes (user_id, id, feed_guid, media_url, change_seq, received_at, deleted_at)
         SELECT ?1, printf('00000000-0000-4000-8000-%012d', i), ?2,
           CASE WHEN i = 1 THEN 'https://cdn.example.com/live.mp3' END, i, 0, CASE WHEN i > 1 THEN ?3 END FROM n`,
      )
      .bind(userId, FEED, Date.now())
      .run();
    const user = await as(userId);
    const document = (id: string) => ({
      data: {
        type: "episode",
        id,
        attributes: { mediaUrl: "https://cdn.example.com/new.mp3" },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    const created = await user.post("/v1/episodes", document(crypto.randomUUID()));
    expect(created.status).toBe(201);
    const after = await stats(userId);
    expect(after?.episode_count).toBe(50_000);
    // Exactly the oldest tombstone (change 2) went; the live state below it took a fresh number.
    expect(after?.episode_horizon).toBe(2);
    expect(await rowCount(userId, "episodes", "deleted_at IS NOT NULL")).toBe(49_998);
    expect(await rowCount(userId, "episodes", "change_seq < 3")).toBe(0);
    await expectExpired(user, "/v1/episodes", "1");
    // Live states alone at the quota: refused, nothing purged.
    await db.prepare("DELETE FROM episodes WHERE user_id = ? AND deleted_at IS NOT NULL").bind(userId).run();
    await db.prepare("UPDATE user_stats SET episode_count = 50000 WHERE user_id = ?").bind(userId).run();
    const refused = await user.post("/v1/episodes", document(crypto.randomUUID()));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as ErrorDocument).errors[0]).toMatchObject({
      title: "Episode limit reached",
      meta: { maxEpisodes: 50_000 },
    });
    expect((await user.get("/v1/episodes?filter[since]=2")).status).toBe(200);
  });
});

describe("a purge's renumbering is charged to the user's rate limit (docs/API.md §15, docs/storage.md)", () => {
  it("one request per 100 renumbered rows, after the write that purged", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s
    const seed = async (userId: string) => {
      // 600 live subscriptions below the only tombstone, at the quota.
      await seedSubscriptions(userId, 600);
      await seedSubscriptions(userId, 1, { unsubscribed: true });
      await (await databaseFor(userId))
        .prepare("UPDATE user_stats SET stored_count = ? WHERE user_id = ?")
        .bind(MAX_SUBSCRIPTIONS, userId)
        .run();
      return as(userId, tight);
    };
    const purging = await seed("charged-purge");
    const feed = newFeed();
    expect((await purging.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
    expect((await stats("charged-purge"))?.subscription_horizon).toBe(601);
    // 1 for the request and 6 for the 600 renumbered rows: the limit of 5 is spent.
    expect((await purging.get("/v1/subscriptions")).status).toBe(429);

    const plain = await as("charged-nothing", tight);
    const other = newFeed();
    expect((await plain.post("/v1/subscriptions", subscriptionDocument(other.guid, other.feedUrl))).status).toBe(201);
    expect((await plain.get("/v1/subscriptions")).status).toBe(200);
  });
});

describe("an account's erasure is charged to the user's rate limit (docs/storage.md)", () => {
  it("one request per 100 rows deleted, after the erasure", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s
    await seedSubscriptions("charged-erasure", 450);
    const large = await as("charged-erasure", tight);
    expect((await large.delete("/v1/account")).status).toBe(204);
    // 1 for the request and 4 more for 450 rows (5 bulks of 100): the limit of 5 is spent.
    expect((await large.get("/v1/subscriptions")).status).toBe(429);

    await seedSubscriptions("charged-small-erasure", 100);
    const small = await as("charged-small-erasure", tight);
    expect((await small.delete("/v1/account")).status).toBe(204);
    expect((await small.get("/v1/subscriptions")).status).toBe(200);
  });
});

describe("retention: the Cron Trigger purges tombstones older than 180 days (docs/API.md §15)", () => {
  it("purges expired tombstones, raising the horizon only once no live row lies below, in bounded slices", async () => {
    const userId = "retention";
    const user = await as(userId);
    const live = RENUMBERED_PER_RUN + 20;
    await seedSubscriptions(userId, live);
    const gone = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(gone.guid, gone.feedUrl));
    await user.delete(`/v1/subscriptions/${gone.guid}`);
    const recent = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(recent.guid, recent.feedUrl));
    await user.delete(`/v1/subscriptions/${recent.guid}`);
    const tokenBefore = String(live + 1); // after `gone` was subscribed, before it was unsubscribed
    const db = await databaseFor(userId);
    await db
      .prepare("UPDATE subscriptions SET unsubscribed_at = ? WHERE user_id = ? AND guid = ?")
      .bind(Date.now() - TOMBSTONE_RETENTION_MS - 60_000, userId, gone.guid)
      .run();

    // First run: renumbers a slice of the live rows below the expired tombstone; nothing purged yet.
    await runCron();
    expect(await rowCount(userId, "subscriptions", `guid = '${gone.guid}'`)).toBe(1);
    expect((await stats(userId))?.subscription_horizon).toBe(0);
    expect((await user.get(`/v1/subscriptions?filter[since]=${tokenBefore}`)).status).toBe(200);
    // Second run: the rest, then the purge. The recent tombstone stays.
    await runCron();
    expect(await rowCount(userId, "subscriptions", `guid = '${gone.guid}'`)).toBe(0);
    expect(await rowCount(userId, "subscriptions", `guid = '${recent.guid}'`)).toBe(1);
    const horizon = (await stats(userId))?.subscription_horizon as number;
    expect(horizon).toBe(live + 2);
    expect(await rowCount(userId, "subscriptions", `change_seq < ${horizon}`)).toBe(0);
    await expectExpired(user, "/v1/subscriptions", tokenBefore);
    const walk = applyChanges(new Map(), (await syncFrom(user, "0", 100)).items);
    expect(walk).toEqual(await listAll(user));
    // A run with nothing due changes nothing.
    const version = (await stats(userId))?.version;
    await runCron();
    expect((await stats(userId))?.version).toBe(version);
  });

  it("purges expired episode tombstones too", async () => {
    const userId = "retention-episodes";
    const user = await as(userId);
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    for (const id of ids) {
      await user.post("/v1/episodes", {
        data: {
          type: "episode",
          id,
          attributes: { mediaUrl: "https://cdn.example.com/a.mp3" },
          relationships: { subscription: { data: { type: "subscription", id: FEED } } },
        },
      });
    }
    await user.delete(`/v1/episodes/${ids[0]}`);
    await (await databaseFor(userId))
      .prepare("UPDATE episodes SET deleted_at = 1 WHERE user_id = ? AND id = ?")
      .bind(userId, ids[0])
      .run();
    await runCron();
    expect(await rowCount(userId, "episodes")).toBe(1);
    expect((await stats(userId))?.episode_horizon).toBe(3);
    await expectExpired(user, "/v1/episodes", "2");
    const page = (await (await user.get("/v1/episodes?filter[since]=0&page[size]=1")).json()) as {
      data: { id: string }[];
      links: { next: string | null };
    };
    expect(page.data.map((item) => item.id)).toEqual([ids[1]]);
    expect(page.links.next).toBeNull();
  });
});

describe("DELETE /v1/account (docs/API.md §15)", () => {
  it("erases everything stored for the user in one round trip; old tokens answer 410, since=0 is empty", async () => {
    const userId = "erase-me";
    const user = await as(userId);
    const feeds = Array.from({ length: 3 }, () => newFeed());
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feeds[0].guid}`);
    const episode = crypto.randomUUID();
    await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: episode,
        attributes: { mediaUrl: "https://cdn.example.com/a.mp3" },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    const db = await databaseFor(userId);
    await db.batch([
      db
        .prepare(
          "INSERT INTO app_passwords (user_id, id, username, label, password_hash, created_at) VALUES (?, 'p1', 'erase-me', 'phone', 'hash', 0)",
        )
        .bind(userId),
      db
        .prepare(
          "INSERT INTO gpodder_sessions (session_hash, user_id, app_password_id, created_at) VALUES ('s-erase-me', ?, 'p1', 0)",
        )
        .bind(userId),
      db.prepare("INSERT INTO devices (user_id, device_id, created_at) VALUES (?, 'phone', 0)").bind(userId),
      db
        .prepare(
          "INSERT INTO account_sessions (session_hash, user_id, name, created_at, expires_at) VALUES ('a-erase-me', ?, 'Erase Me', 0, 9e15)",
        )
        .bind(userId),
      // The state re-homed as a merge re-homes one: queued for the feed round (src/db/episode-rehomes.ts).
      db
        .prepare("UPDATE episodes SET feed_guid = ? WHERE user_id = ? AND id = ?")
        .bind(crypto.randomUUID(), userId, episode),
    ]);
    expect(await rowCount(userId, "episode_rehomes")).toBe(1);
    const listed = await user.get("/v1/subscriptions");
    const etag = listed.headers.get("ETag") as string;
    const token = (
      (await (await user.get("/v1/subscriptions?filter[since]=0")).json()) as { meta: { syncToken: string } }
    ).meta.syncToken;
    const episodeToken = (
      (await (await user.get("/v1/episodes?filter[since]=0")).json()) as { meta: { syncToken: string } }
    ).meta.syncToken;
    const neighbour = await as("erase-neighbour");
    const kept = newFeed();
    await neighbour.post("/v1/subscriptions", subscriptionDocument(kept.guid, kept.feedUrl));

    const erased = await user.delete("/v1/account");
    expect(erased.status).toBe(204);
    expect(await erased.text()).toBe("");
    for (const table of [
      "subscriptions",
      "episodes",
      "episode_rehomes",
      "app_passwords",
      "gpodder_sessions",
      "account_sessions",
      "devices",
    ]) {
      expect(await rowCount(userId, table), table).toBe(0);
    }
    expect(await stats(userId)).toMatchObject({ active_count: 0, stored_count: 0, episode_count: 0, url_bytes: 0 });
    await expectExpired(user, "/v1/subscriptions", token);
    await expectExpired(user, "/v1/episodes", episodeToken);
    const list = await user.get("/v1/subscriptions", { "If-None-Match": etag });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { data: unknown[]; meta: { total: number } }).meta.total).toBe(0);
    for (const path of ["/v1/subscriptions", "/v1/episodes"]) {
      const feed = await user.get(`${path}?filter[since]=0`);
      expect(feed.status).toBe(200);
      const body = (await feed.json()) as { data: unknown[]; meta: { syncToken: string }; links: { next: null } };
      expect(body.data).toEqual([]);
      expect(body.links.next).toBeNull();
      expect((await user.get(`${path}?filter[since]=${body.meta.syncToken}`)).status).toBe(200);
    }
    expect((await user.get(`/v1/episodes/${episode}`)).status).toBe(404);
    // The neighbour keeps everything; the account can be used again.
    expect([...(await listAll(neighbour)).keys()]).toEqual([kept.guid]);
    expect((await user.post("/v1/subscriptions", subscriptionDocument(kept.guid, kept.feedUrl))).status).toBe(201);
    // Erasing twice is fine, and so is erasing an account that never stored anything.
    expect((await user.delete("/v1/account")).status).toBe(204);
    expect((await (await as("erase-nobody")).delete("/v1/account")).status).toBe(204);
  });

  it("takes no query parameters JSON:API reserves and answers 405 to other methods", async () => {
    const user = await as("erase-query");
    expect((await user.delete("/v1/account?include=everything")).status).toBe(400);
    expect((await user.get("/v1/account")).status).toBe(405);
  });
});

describe("accountUsage: what an account page shows against the quotas (docs/API.md §12, §13, §15)", () => {
  it("counts live rows, tombstones, URL bytes, devices and app passwords in one statement, and says when it is full", async () => {
    const userId = "usage-page";
    const user = await as(userId);
    const [kept, gone] = [newFeed(), newFeed()];
    await user.post("/v1/subscriptions", subscriptionDocument(kept.guid, urlOf(100)));
    await user.post("/v1/subscriptions", subscriptionDocument(gone.guid, urlOf(120)));
    await user.delete(`/v1/subscriptions/${gone.guid}`);
    const episode = (id: string) => ({
      data: {
        type: "episode",
        id,
        attributes: { mediaUrl: urlOf(200), itemGuid: "g".repeat(20) },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    });
    const forgotten = crypto.randomUUID();
    await user.post("/v1/episodes", episode(crypto.randomUUID()));
    await user.post("/v1/episodes", episode(forgotten));
    await user.delete(`/v1/episodes/${forgotten}`);
    await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "phone" } } });
    const { binding, calls } = countingD1(await databaseFor(userId));
    const usage = await accountUsage(binding, userId);
    expect(calls()).toBe(1);
    expect(usage).toEqual({
      subscriptions: { active: 1, stored: 2, max: 10_000 },
      episodes: { live: 1, stored: 2, max: 50_000 },
      urlBytes: { stored: 100 + 120 + 200 + 20, max: MAX_URL_BYTES },
      devices: { stored: 0, max: 100 },
      appPasswords: { stored: 1, max: 50 },
      full: { subscriptions: false, episodes: false, storage: false },
    });
    // Live states filling the quota make it full; tombstones alone never do (they are recycled).
    await (await databaseFor(userId))
      .prepare("UPDATE user_stats SET episode_count = 50000 WHERE user_id = ?")
      .bind(userId)
      .run();
    expect((await accountUsage(binding, userId)).full).toEqual({
      subscriptions: false,
      episodes: false,
      storage: false,
    });
    await (await databaseFor(userId))
      .prepare("UPDATE user_stats SET episode_count = 50001 WHERE user_id = ?")
      .bind(userId)
      .run();
    expect((await accountUsage(binding, userId)).full.episodes).toBe(true);
    // A user who never stored anything.
    expect((await accountUsage(binding, "usage-nobody")).subscriptions).toEqual({ active: 0, stored: 0, max: 10_000 });
    const plan = await (await databaseFor(userId))
      .prepare(`EXPLAIN QUERY PLAN ${accountStatements.usage.sql}`)
      .bind(userId)
      .all<{ detail: string }>();
    expect(plan.results.map((row) => row.detail).join("\n")).not.toMatch(/^SCAN (episodes|devices|app_passwords)\b/m);
  });
});
