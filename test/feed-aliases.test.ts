import { describe, expect, it } from "vitest";
import { database } from "../src/db/database";
import { ANSWERED_ALIASES, MOVED_SUBSCRIPTIONS_PER_STATEMENT } from "../src/db/feed-aliases";
import { gpodderStatements, readEpisodeActions } from "../src/db/gpodder";
import { urlKey } from "../src/db/url-key";
import { runFeedRound } from "../src/feeds/round";
import { podcastGuidSync } from "../src/podcast-guid";
import { bucketOf } from "../src/shards";
import { at, FETCHING, feed, subscribe, uniqueNumber } from "./feed-round-calls";
import {
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  listAll,
  meteredDatabaseOf,
  ORIGIN,
  runCron,
  send,
  shardDatabases,
  subscriptionDocument,
  syncFrom,
  versionOf,
} from "./helpers";
import {
  basic,
  type Changes,
  GPODDER_USER_AGENT,
  gpodder,
  json,
  mint,
  nextcloud,
  playAction,
} from "./nextcloud-client";

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

/** A new user with an app password: its gpodder.net client and the subscriptions path of its device `phone`. */
async function gpodderApp(name: string) {
  const user = await as(`${name}-${uniqueNumber()}`);
  const app = await mint(user);
  return { user, app, gp: gpodder(app), path: `/api/2/subscriptions/${app.loginName}/phone.json` };
}

/** Writes an episode state of `user` (JSON:API, a new id) under subscription `feed`; its id. */
function episodeStateOf(user: Caller) {
  return async (feed: string, item: string | null, media: string, attributes: Record<string, unknown>) => {
    const response = await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: crypto.randomUUID(),
        attributes: { mediaUrl: media, itemGuid: item, ...attributes },
        relationships: { subscription: { data: { type: "subscription", id: feed } } },
      },
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { data: { id: string } }).data.id;
  };
}

/**
 * What a user's devices hold before a feed round: a gpodder.net app (device `phone`) with its full subscription list
 * read a second after the user's last write (`known`: its timestamp is an incremental read's `since`), and the sync
 * token of the change feed.
 */
async function readBeforeTheRound(user: Caller) {
  const app = await mint(user);
  const gp = gpodder(app);
  const path = `/api/2/subscriptions/${app.loginName}/phone.json`;
  const db = await databaseFor(user.userId);
  await nextSecond(db);
  const known = await json<Changes>(gp.get(`${path}?since=0`));
  return { app, gp, path, db, known, token: await tokenNow(user) };
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

  it("keeps the podcast's name through the move: B shows what A's fetch read until B's own first fetch", async () => {
    const user = await as(`aliases-name-${uniqueNumber()}`);
    const [from, to] = movingFeed();
    const guid = await subscribe(user, from);
    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));
    // Without the carry, B's row (made by the move) read `pending` until a later round fetched B itself.
    const podcast = (await (await user.get(`/v1/subscriptions/${guid}/podcast`)).json()) as {
      data: { attributes: { status: string; title: string | null; fetchedAt: string | null } };
    };
    expect(podcast.data.attributes).toMatchObject({ status: "ok", title: "Tech Talk Weekly" });
    expect(podcast.data.attributes.fetchedAt).not.toBeNull();
    // B is still due for its own fetch: the next round fetches it, once.
    const db = await databaseFor(user.userId);
    const row = await db.prepare("SELECT next_fetch_at AS due FROM feeds WHERE url_key = ?").bind(urlKey(to)).first();
    expect(row).toMatchObject({ due: 0 });
  });

  it("lists B as an add to a client whose last read was over 10 minutes before the subscription, not to the one that sent A", async () => {
    const { user, gp, path } = await gpodderApp("aliases-new");
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

  it("applies no move while a bucket is being moved (frozen), and the next runs apply it", async () => {
    const user = await as(`aliases-frozen-${uniqueNumber()}`);
    const [from, to] = movingFeed();
    const guid = await subscribe(user, from);
    await runCron(Date.now(), { ...FETCHING, SHARD_FROZEN: `${await bucketOf(user.userId)}` });
    expect(await listAll(user)).toEqual(new Map([[guid, from]]));
    await runCron(Date.now() + 10 * 60 * 1000, FETCHING);
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));
    // The run that applied the move (not the one that learned it) carried A's facts to B's new row as well.
    const podcast = (await (await user.get(`/v1/subscriptions/${guid}/podcast`)).json()) as {
      data: { attributes: { status: string; title: string | null } };
    };
    expect(podcast.data.attributes).toMatchObject({ status: "ok", title: "Tech Talk Weekly" });
  });

  it("merges a user's subscriptions of A and B: the older kept (moved to B), the other a tombstone, episode states merged per episode by section 13", async () => {
    for (const olderIsA of [true, false]) {
      const user = await as(`aliases-both-${uniqueNumber()}`);
      const [from, to] = movingFeed();
      const first = await subscribe(user, olderIsA ? from : to);
      const second = await subscribe(user, olderIsA ? to : from);
      const [onA, onB] = olderIsA ? [first, second] : [second, first];
      const state = episodeStateOf(user);
      // Episode 1 under both (same item guid): the later position is A's, the later played mark B's.
      await state(onA, "item-1", `${to}-1.mp3`, { position: 50, changedAt: "2026-01-02T03:00:00Z" });
      await state(onB, "item-1", `${to}-1.mp3`, { position: 10, changedAt: "2026-01-02T02:00:00Z" });
      await state(onB, "item-1-other", `${to}-other.mp3`, { played: true, changedAt: "2026-01-01T00:00:00Z" });
      // Episode 2 by media URL alone; episode 3 only under one of them.
      await state(onA, null, `${to}-2.mp3`, { played: true, changedAt: "2026-01-03T00:00:00Z" });
      await state(onB, null, `${to}-2.mp3`, { played: false, position: 7, changedAt: "2026-01-02T00:00:00Z" });
      await state(onA, "item-3", `${to}-3.mp3`, { position: 3, changedAt: "2026-01-02T00:00:00Z" });
      const { app, gp, path, db, known, token } = await readBeforeTheRound(user);
      await runCron(Date.now(), FETCHING);

      const [kept, away] = [first, second];
      expect(await listAll(user)).toEqual(new Map([[kept, to]]));
      const { items } = await syncFrom(user, token);
      const deleted = items.filter((item) => item.attributes.userUnsubscribedAt !== null).map((item) => item.id);
      expect(deleted).toEqual([away]);
      // Each episode once, under the kept podcast, merged field by field.
      const listed = (await (await user.get("/v1/episodes")).json()) as {
        data: {
          attributes: { mediaUrl: string; position: number; played: boolean; deletedAt: string | null };
          relationships: { subscription: { data: { id: string } } };
        }[];
      };
      const live = listed.data.filter((item) => item.attributes.deletedAt === null);
      const byMedia = new Map(live.map((item) => [item.attributes.mediaUrl, item]));
      expect(live).toHaveLength(4);
      expect(new Set(live.map((item) => item.relationships.subscription.data.id))).toEqual(new Set([kept]));
      expect(byMedia.get(`${to}-1.mp3`)?.attributes).toMatchObject({ position: 50 });
      expect(byMedia.get(`${to}-2.mp3`)?.attributes).toMatchObject({ played: true, position: 7 });
      expect(byMedia.get(`${to}-3.mp3`)?.attributes).toMatchObject({ position: 3 });
      // Change numbers stay distinct.
      const seqs = await db
        .prepare("SELECT count(DISTINCT change_seq) AS d, count(*) AS n FROM episodes WHERE user_id = ?")
        .bind(user.userId)
        .first<{ d: number; n: number }>();
      expect(seqs?.d).toBe(seqs?.n);
      // gpodder: each episode once, under B; the incremental subscription read has no remove.
      const actions = await json<{ actions: { podcast: string; episode: string }[] }>(
        gp.get(`/api/2/episodes/${app.loginName}.json?since=0`),
      );
      expect(actions.actions.map((action) => action.podcast)).toEqual(actions.actions.map(() => to));
      expect(new Set(actions.actions.map((action) => action.episode)).size).toBe(actions.actions.length);
      expect(await json<Changes>(gp.get(`${path}?since=${known.timestamp}`))).toMatchObject({ remove: [] });
      expect(await json<Changes>(nextcloud(app).get(`subscriptions?since=${known.timestamp}`))).toMatchObject({
        remove: [],
      });
      // Nothing is left moving: the next runs read it no more.
      const row = await db.prepare("SELECT moving FROM feed_aliases WHERE url = ?").bind(from).first();
      expect(row).toEqual({ moving: 0 });
    }
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

/** A user subscribed (JSON:API) to A, which the round has moved to B: the subscription, stored under B. */
async function movedSubscription(name: string) {
  const user = await as(`${name}-${uniqueNumber()}`);
  const [from, to] = movingFeed();
  const guid = await subscribe(user, from);
  await runCron(Date.now(), FETCHING);
  expect(await listAll(user)).toEqual(new Map([[guid, to]]));
  return { user, guid, from, to };
}

/** A user subscribed to A whose move to B the round learned but has not applied yet (no subscription moved a run). */
async function unmovedSubscription(name: string) {
  const user = await as(`${name}-${uniqueNumber()}`);
  const [from, to] = movingFeed();
  const guid = await subscribe(user, from);
  const databases = new Map(shardDatabases().map(({ name: shard, database: d1 }) => [shard, database(d1)] as const));
  const settings = { enabled: true, allowPrivate: true, userAgent: "test", movesPerStatement: 0 };
  expect((await runFeedRound(databases, settings, Date.now())).moved).toBeGreaterThan(0);
  expect(await listAll(user)).toEqual(new Map([[guid, from]]));
  return { user, guid, from, to };
}

/** The simple API's PUT of a device's whole list. */
function simplePut(app: { loginName: string; appPassword: string }, urls: string[]) {
  return send(
    new Request(`${ORIGIN}/subscriptions/${app.loginName}/phone.json`, {
      method: "PUT",
      headers: { Authorization: basic(app.loginName, app.appPassword) },
      body: JSON.stringify(urls),
    }),
  );
}

type ErrorDocument = { errors: { status: string; title: string; meta?: Record<string, unknown> }[] };

describe("an alias of an active subscription names it in every API", () => {
  it("JSON:API: an add of an alias under another id is 409 Already Subscribed with the stored one, writing nothing", async () => {
    const moved = await movedSubscription("aliases-409");
    const unmoved = await unmovedSubscription("aliases-409-unmoved");
    // The URL before the move, the stored one, and (not moved yet) the URL it moves to.
    for (const { user, guid, stored, sent } of [
      { ...moved, stored: moved.to, sent: moved.from },
      { ...moved, stored: moved.to, sent: moved.to },
      { ...unmoved, stored: unmoved.from, sent: unmoved.to },
    ]) {
      const version = await versionOf(user);
      const response = await user.post("/v1/subscriptions", {
        data: { type: "subscription", id: crypto.randomUUID(), attributes: { feedUrl: sent } },
      });
      expect(response.status).toBe(409);
      const body = (await response.json()) as ErrorDocument;
      expect(body.errors[0]).toMatchObject({
        status: "409",
        title: "Already Subscribed",
        meta: { feedUrl: stored, guid },
      });
      // Bulk: inline, as the specification's conflict element.
      const bulk = await user.operations({
        "atomic:operations": [
          { op: "add", data: { type: "subscription", id: crypto.randomUUID(), attributes: { feedUrl: sent } } },
        ],
      });
      const results = (await bulk.json()) as { "atomic:results"?: unknown[]; errors?: ErrorDocument["errors"] };
      expect(JSON.stringify(results)).toContain('"Already Subscribed"');
      expect(JSON.stringify(results)).toContain(JSON.stringify({ feedUrl: stored, guid }));
      expect(await versionOf(user)).toBe(version);
      expect(await listAll(user)).toEqual(new Map([[guid, stored]]));
    }
    // The stored id itself: as before (idempotent).
    const again = await moved.user.post("/v1/subscriptions", {
      data: { type: "subscription", id: moved.guid, attributes: { feedUrl: moved.from } },
    });
    expect(again.status).toBe(200);
  });

  it("OPML import counts an alias as already subscribed", async () => {
    const { user, guid, from, to } = await movedSubscription("aliases-opml");
    const opml = `<?xml version="1.0"?><opml version="2.0"><body><outline type="rss" text="x" xmlUrl="${from.replaceAll("&", "&amp;")}"/></body></opml>`;
    const response = await user.post("/v1/subscriptions.opml", opml, { "Content-Type": "text/x-opml" });
    const body = (await response.json()) as { meta: { imported: number; alreadySubscribed: number } };
    expect(body.meta).toMatchObject({ imported: 0, alreadySubscribed: 1 });
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));
  });

  it("gpodder.net and Nextcloud: an add of an alias writes nothing, gpodder answers update_urls [sent, stored]; the simple PUT keeps it", async () => {
    const { user, guid, from, to } = await movedSubscription("aliases-gpodder");
    const app = await mint(user);
    const gp = gpodder(app);
    const version = await versionOf(user);
    const answer = await json<{ update_urls: [string, string][] }>(
      gp.post(`/api/2/subscriptions/${app.loginName}/phone.json`, { add: [from], remove: [] }),
    );
    expect(answer.update_urls).toEqual([[from, to]]);
    expect(
      await json<{ timestamp: number }>(nextcloud(app).post("subscription_change/create", { add: [from], remove: [] })),
    ).toHaveProperty("timestamp");
    expect(await versionOf(user)).toBe(version);
    // The simple API's PUT naming the old URL keeps the subscription (its guid, under the stored URL).
    expect((await simplePut(app, [from])).status).toBe(200);
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));
    expect(await versionOf(user)).toBe(version);
  });

  it("gpodder.net and Nextcloud: a remove of any alias unsubscribes the podcast", async () => {
    for (const api of ["gpodder", "nextcloud"] as const) {
      const { user, from } = await movedSubscription(`aliases-remove-${api}`);
      const app = await mint(user);
      const removal = { add: [], remove: [from] };
      if (api === "gpodder") await json(gpodder(app).post(`/api/2/subscriptions/${app.loginName}/phone.json`, removal));
      else await json(nextcloud(app).post("subscription_change/create", removal));
      expect(await listAll(user)).toEqual(new Map());
    }
    // And the URL it was moved to, while the move is not applied yet.
    const { user, to } = await unmovedSubscription("aliases-remove-unmoved");
    const app = await mint(user);
    await json(gpodder(app).post(`/api/2/subscriptions/${app.loginName}/phone.json`, { add: [], remove: [to] }));
    expect(await listAll(user)).toEqual(new Map());
  });

  it("gpodder.net and Nextcloud: a URL's http/https and trailing-slash forms name its subscription", async () => {
    // Section 14's guid namespace makes them one podcast (an add of another form writes nothing); a remove of one
    // unsubscribes it, and a simple PUT listing one keeps it as stored.
    const stored = "https://forms.example/feed/";
    const forms = ["http://forms.example/feed", "https://forms.example/feed", "http://forms.example/feed/"];
    for (const api of ["gpodder", "nextcloud"] as const) {
      for (const form of forms) {
        const user = await as(`aliases-forms-${api}-${uniqueNumber()}`);
        const app = await mint(user);
        const gp = gpodder(app);
        await json(gp.post(`/api/2/subscriptions/${app.loginName}/phone.json`, { add: [stored], remove: [] }));
        const [guid] = (await listAll(user)).keys();
        expect(await listAll(user)).toEqual(new Map([[guid, stored]]));
        // The simple API's PUT of the other form: nothing removed, nothing renamed.
        expect((await gp.put(`/subscriptions/${app.loginName}/phone.json`, [form])).status).toBe(200);
        expect(await listAll(user)).toEqual(new Map([[guid, stored]]));
        const removal = { add: [], remove: [form] };
        if (api === "gpodder") await json(gp.post(`/api/2/subscriptions/${app.loginName}/phone.json`, removal));
        else await json(nextcloud(app).post("subscription_change/create", removal));
        expect({ api, form, list: await listAll(user) }).toEqual({ api, form, list: new Map() });
      }
    }
  });

  it("episode actions under A and under B reach one state, read back under the stored URL, no round trip more", async () => {
    const { user, guid, from, to } = await movedSubscription("aliases-plays");
    const app = await mint(user);
    const counter = await countedDatabaseOf(user.userId);
    const gp = gpodder(app, counter.bindings);
    const episode = `${to}-episode-1.mp3`;
    const play = (podcast: string, position: number, timestamp: string) =>
      playAction(podcast, episode, position, timestamp);
    const upload = async (actions: unknown[]) => {
      counter.reset();
      await json(gp.post(`/api/2/episodes/${app.loginName}.json`, actions));
      return counter.calls();
    };
    // The first upload naming each URL may cost one more round trip (the isolate learns the guid); the next ones
    // cost one, alias or stored URL alike.
    await upload([play(from, 10, "2026-01-02T03:00:00")]);
    await upload([play(to, 20, "2026-01-02T03:05:00")]);
    expect(await upload([play(from, 30, "2026-01-02T03:10:00")])).toBe(1);
    expect(await upload([play(to, 40, "2026-01-02T03:15:00")])).toBe(1);
    await json(nextcloud(app).post("episode_action/create", [play(from, 50, "2026-01-02T03:20:00")]));
    const states = await user.get("/v1/episodes");
    const { data } = (await states.json()) as {
      data: { attributes: { position: number }; relationships: { subscription: { data: { id: string } } } }[];
    };
    expect(data.map((state) => [state.relationships.subscription.data.id, state.attributes.position])).toEqual([
      [guid, 50],
    ]);
    const read = await json<{ actions: { podcast: string; position: number }[] }>(
      gpodder(app).get(`/api/2/episodes/${app.loginName}.json?since=0`),
    );
    // Under the stored URL (an app that matches by the podcast URL also gets it under A: the next describe).
    expect(read.actions.map((action) => [action.podcast, action.position])).toEqual([[to, 50]]);
    // `podcast=` naming either URL reads the podcast's states.
    for (const podcast of [from, to]) {
      const one = await json<{ actions: unknown[] }>(
        gpodder(app).get(`/api/2/episodes/${app.loginName}.json?since=0&podcast=${encodeURIComponent(podcast)}`),
      );
      expect(one.actions).toHaveLength(1);
    }
  });
});

describe("after a learned move neither URL is a remove", () => {
  it("not even A's tombstone of another guid, changed in the range of an incremental read", async () => {
    const { user, gp, path } = await gpodderApp("aliases-tombstone");
    const [from, to] = movingFeed();
    const { timestamp } = await json<Changes>(gp.get(`${path}?since=0`));
    // Unsubscribed and subscribed again under a new id: a tombstone of A beside the active A.
    const first = await subscribe(user, from);
    expect((await user.delete(`/v1/subscriptions/${first}`)).status).toBe(204);
    const second = await subscribe(user, from);
    expect(await json<Changes>(gp.get(`${path}?since=${timestamp}`))).toMatchObject({ add: [from], remove: [] });
    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(new Map([[second, to]]));
    expect(await json<Changes>(gp.get(`${path}?since=${timestamp}`))).toMatchObject({ add: [], remove: [] });
  });
});

type Actions = { actions: Record<string, unknown>[]; timestamp: number };

/** A play of `episode` as gpodder.net takes it, and as its reads answer it under `podcast`. */
function playOf(podcast: string, episode: string, position: number, timestamp = "2026-01-02T03:00:00") {
  return {
    podcast,
    episode,
    guid: `${episode}#guid`,
    timestamp,
    action: "play",
    started: 0,
    position,
    total: 100,
  };
}

/** What a read must leave as it was: the user's counters (storage budget, versions) and stored rows. */
async function storedState(userId: string) {
  const d1 = await databaseFor(userId);
  const rows = async (table: string) =>
    (await d1.prepare(`SELECT * FROM ${table} WHERE user_id = ? ORDER BY 1, 2`).bind(userId).all()).results;
  return {
    stats: await rows("user_stats"),
    subscriptions: await rows("subscriptions"),
    episodes: await rows("episodes"),
    pieces: await rows("url_pieces"),
  };
}

describe("episode reads under every alias (gpodder.net: gPodder matches a play by the podcast URL it holds)", () => {
  it("a state of a subscription moved from A is answered under B, then again under A, since=0 and incrementally; Nextcloud's read under B alone", async () => {
    const { user, from, to } = await movedSubscription("alias-reads");
    const app = await mint(user, "gPodder");
    const gp = gpodder(app, {}, { "User-Agent": GPODDER_USER_AGENT });
    const path = `/api/2/episodes/${app.loginName}.json`;
    const { timestamp } = await json<Actions>(gp.get(`${path}?since=0`));
    const episode = `${to}-episode-1.mp3`;
    // One device, already on B, plays.
    await json(gp.post(path, [playOf(to, episode, 30)]));
    const both = [playOf(to, episode, 30), playOf(from, episode, 30)];
    expect((await json<Actions>(gp.get(`${path}?since=0`))).actions).toEqual(both);
    expect((await json<Actions>(gp.get(`${path}?since=${timestamp}`))).actions).toEqual(both);
    for (const podcast of [from, to]) {
      const named = await json<Actions>(gp.get(`${path}?since=0&podcast=${encodeURIComponent(podcast)}`));
      expect(named.actions).toEqual(both);
    }
    // Only an app that matches by the podcast URL gets the copies: AntennaPod's gpodder.net sync (its newer-local
    // check keyed on the podcast URL would let the copy overwrite a play not yet uploaded), or an unnamed client,
    // gets the state under B alone, as §18 says.
    for (const agent of ["AntennaPod/3.6.0", ""]) {
      const other = gpodder(app, {}, { "User-Agent": agent });
      expect((await json<Actions>(other.get(`${path}?since=0`))).actions, agent).toEqual([playOf(to, episode, 30)]);
    }
    // The Nextcloud API's clients (AntennaPod, Kasts) match by guid and get no copy.
    const { actions } = await json<{ actions: Record<string, unknown>[] }>(
      nextcloud(app).get("episode_action?since=0"),
    );
    expect(actions.map((action) => action.podcast)).toEqual([to]);
    // A play uploaded under A itself is the same state, answered the same way.
    const later = "2026-01-02T04:00:00";
    await json(gp.post(path, [playOf(from, episode, 40, later)]));
    expect((await json<Actions>(gp.get(`${path}?since=${timestamp}`))).actions).toEqual([
      playOf(to, episode, 40, later),
      playOf(from, episode, 40, later),
    ]);
  });

  it("a user who never had A gets no A copy, though A -> B is learned", async () => {
    const { to } = await movedSubscription("alias-reads-mover");
    const user = await as(`alias-reads-b-${uniqueNumber()}`);
    await subscribe(user, to);
    await runCron(Date.now(), FETCHING);
    const app = await mint(user, "gPodder");
    const gp = gpodder(app, {}, { "User-Agent": GPODDER_USER_AGENT });
    const path = `/api/2/episodes/${app.loginName}.json`;
    const episode = `${to}-episode-2.mp3`;
    await json(gp.post(path, [playOf(to, episode, 30)]));
    expect((await json<Actions>(gp.get(`${path}?since=0`))).actions).toEqual([playOf(to, episode, 30)]);
  });

  it("the copies are only read: no storage budget, row or change counted; pages cut at any row give the same actions", async () => {
    const { user, from, to } = await movedSubscription("alias-reads-pages");
    const app = await mint(user, "gPodder");
    const gp = gpodder(app, {}, { "User-Agent": GPODDER_USER_AGENT });
    const path = `/api/2/episodes/${app.loginName}.json`;
    const plays = [1, 2, 3].map((n) => playOf(to, `${to}-episode-${n}.mp3`, 10 * n));
    await json(gp.post(path, plays));
    const before = await storedState(user.userId);
    // What the read costs: the copies' rows at most ANSWERED_ALIASES a state, in the walk and again for the text.
    // The page statement of the full list with the copies (the gpodder.net read) and without (the Nextcloud read's):
    // bound alone, since a Nextcloud read of a list that fits one page is answered by the whole list's statement.
    const meter = await meteredDatabaseOf(user.userId);
    const rowsRead = async (aliases: number) => {
      meter.reset();
      const values = { userId: user.userId, since: 0, after: null, limit: 12_500, bytes: 1 << 20, aliases, whole: 0 };
      await gpodderStatements.episodeChangesPage.bind(meter.binding, values).first();
      return meter.totals.rowsReadPerStatement[0];
    };
    const withCopies = await rowsRead(1);
    const without = await rowsRead(0);
    expect(withCopies).toBeGreaterThan(without);
    expect(withCopies - without).toBeLessThanOrEqual(plays.length * 2 * ANSWERED_ALIASES);
    const { actions } = await json<Actions>(gp.get(`${path}?since=0`));
    expect(actions).toEqual(plays.flatMap((play) => [play, { ...play, podcast: from }]));
    expect(await storedState(user.userId)).toEqual(before);
    // A page of one row holds both of its actions; the pages join into the same text.
    const db = database(await databaseFor(user.userId));
    const pages = [];
    const read = await readEpisodeActions(db, user.userId, 0, { size: { rows: 1, min: 1, bytes: 1 }, aliases: true });
    for await (const page of read.pages) pages.push(page.text);
    const filled = pages.filter((page) => page !== "");
    expect(filled.map((page) => JSON.parse(`[${page}]`))).toEqual(
      [0, 1, 2].map((i) => actions.slice(2 * i, 2 * i + 2)),
    );
  });
});

describe("states sent under B before the move is learned (gPodder follows the 301 itself)", () => {
  it("join the moved subscription when the round learns A -> B: re-homed, or merged by section 13 with its own state; every device reads them as changes", async () => {
    const { user, app, gp } = await gpodderApp("aliases-strays");
    const [from, to] = movingFeed();
    const guid = await subscribe(user, from);
    const path = `/api/2/episodes/${app.loginName}.json`;
    const media = (n: number) => `${to}-stray-${n}.mp3`;
    // Under A (the subscription's): episode 2 played earlier than under B, episode 3 later (and by media URL alone).
    await json(gp.post(path, [playOf(from, media(2), 10, "2026-01-02T02:00:00")]));
    await json(gp.post(path, [{ ...playOf(from, media(3), 70, "2026-01-02T05:00:00"), guid: undefined }]));
    // Device 1 moved to B itself: B names no subscription yet, so these are stored under B's own podcast:guid.
    await json(
      gp.post(path, [
        playOf(to, media(1), 30, "2026-01-02T03:00:00"),
        playOf(to, media(2), 40, "2026-01-02T03:00:00"),
        { ...playOf(to, media(3), 20, "2026-01-02T03:00:00"), guid: undefined },
      ]),
    );
    type Listed = {
      data: {
        id: string;
        attributes: { mediaUrl: string; position: number; deletedAt: string | null };
        relationships: { subscription: { data: { id: string } } };
      }[];
    };
    const live = async () => {
      const { data } = (await (await user.get("/v1/episodes")).json()) as Listed;
      return data.filter((state) => state.attributes.deletedAt === null);
    };
    const strayId = (await live()).find((state) => state.attributes.mediaUrl === media(1))?.id;
    expect((await live()).filter((state) => state.relationships.subscription.data.id !== guid)).toHaveLength(3);
    // A device that read everything before the move: the plays under B were never its subscription's.
    const db = await databaseFor(user.userId);
    await nextSecond(db);
    const known = await json<Actions>(gp.get(`${path}?since=0`));
    expect(known.actions.map((action) => action.episode).sort()).toEqual([media(2), media(3)]);
    const episodeChanges = async (since: string) => {
      const response = await user.get(`/v1/episodes?filter[since]=${since}&page[size]=100`);
      expect(response.status).toBe(200);
      return (await response.json()) as Listed & { meta: { syncToken: string } };
    };
    const { syncToken } = (await episodeChanges("0")).meta;

    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(new Map([[guid, to]]));

    // One state per episode, all of the subscription: episode 1 re-homed (its id kept until the next round gives it
    // the subscription's: test/episode-rehomes.test.ts), 2 and 3 merged per field.
    const states = await live();
    expect(states.map((state) => [state.attributes.mediaUrl, state.relationships.subscription.data.id]).sort()).toEqual(
      [
        [media(1), guid],
        [media(2), guid],
        [media(3), guid],
      ],
    );
    const byMedia = new Map(states.map((state) => [state.attributes.mediaUrl, state]));
    expect(byMedia.get(media(1))?.id).toBe(strayId);
    expect(byMedia.get(media(1))?.attributes.position).toBe(30);
    expect(byMedia.get(media(2))?.attributes.position).toBe(40);
    expect(byMedia.get(media(3))?.attributes.position).toBe(70);
    // The device's next incremental read brings what changed, under the stored URL B.
    const { actions } = await json<Actions>(gp.get(`${path}?since=${known.timestamp}`));
    expect(actions.map((action) => [action.podcast, action.episode, action.position]).sort()).toEqual([
      [to, media(1), 30],
      [to, media(2), 40],
    ]);
    // JSON:API: the episode change feed since before the move has each change once: the re-homed and the merged
    // states under the subscription, the merged-away ones of B's guid as tombstones.
    const changed = (await episodeChanges(syncToken)).data;
    const liveIds = new Set(states.map((state) => state.id));
    expect(
      changed
        .filter((state) => state.attributes.deletedAt === null)
        .map((state) => state.id)
        .sort(),
    ).toEqual([byMedia.get(media(1))?.id, byMedia.get(media(2))?.id].sort());
    expect(changed.filter((state) => state.attributes.deletedAt !== null && !liveIds.has(state.id))).toHaveLength(2);
    // Change numbers stay distinct; nothing is left moving.
    const seqs = await db
      .prepare("SELECT count(DISTINCT change_seq) AS d, count(*) AS n FROM episodes WHERE user_id = ?")
      .bind(user.userId)
      .first<{ d: number; n: number }>();
    expect(seqs?.d).toBe(seqs?.n);
    expect(await db.prepare("SELECT moving FROM feed_aliases WHERE url = ?").bind(from).first()).toEqual({ moving: 0 });
  });

  it("stay with an active subscription of the user whose guid is B's podcast:guid: that podcast's own", async () => {
    const { user, app, gp } = await gpodderApp("aliases-strays-owned");
    const [from, to] = movingFeed();
    const guid = await subscribe(user, from);
    // Another subscription (another URL) under the guid an upload under B would compute.
    const owner = podcastGuidSync(to);
    const other = at("/feeds/other.rss");
    expect((await user.post("/v1/subscriptions", subscriptionDocument(owner, other))).status).toBe(201);
    await json(gp.post(`/api/2/episodes/${app.loginName}.json`, [playOf(to, `${to}-owned.mp3`, 30)]));
    await runCron(Date.now(), FETCHING);
    expect(await listAll(user)).toEqual(
      new Map([
        [guid, to],
        [owner, other],
      ]),
    );
    const { data } = (await (await user.get("/v1/episodes")).json()) as {
      data: { relationships: { subscription: { data: { id: string } } } }[];
    };
    expect(data.map((state) => state.relationships.subscription.data.id)).toEqual([owner]);
  });
});

describe("two feeds declaring one podcast:guid are one podcast for a user subscribed to both", () => {
  it("merges the user's two subscriptions (the older kept, episode states merged by section 13), answers the merged-away URL as a remove, and moves no one else", async () => {
    const podcastGuid = crypto.randomUUID();
    const [older, newer] = [
      await feed({ title: "Shared", guid: podcastGuid }),
      await feed({ title: "Shared, other host", guid: podcastGuid }),
    ];
    const user = await as(`guid-merge-${uniqueNumber()}`);
    const kept = await subscribe(user, older);
    const away = await subscribe(user, newer);
    // Another user subscribed to one of the two only: one podcast of their own, untouched.
    const other = await as(`guid-merge-other-${uniqueNumber()}`);
    const others = await subscribe(other, newer);
    const state = episodeStateOf(user);
    // Episode 1 under both (the same item guid, each host its own media URL): the newer feed's state is the later.
    await state(kept, "item-1", `${older}-1.mp3`, {
      position: 10,
      played: true,
      duration: 600,
      changedAt: "2026-01-02T02:00:00Z",
    });
    await state(away, "item-1", `${newer}-1.mp3`, { position: 40, played: false, changedAt: "2026-01-02T03:00:00Z" });
    // Episode 2 only under the older feed, episode 3 only under the newer.
    await state(kept, "item-2", `${older}-2.mp3`, { position: 2, duration: 600, changedAt: "2026-01-02T00:00:00Z" });
    await state(away, "item-3", `${newer}-3.mp3`, { position: 3, duration: 600, changedAt: "2026-01-02T00:00:00Z" });
    const { app, gp, path, known, token } = await readBeforeTheRound(user);
    const otherToken = await tokenNow(other);
    await runCron(Date.now(), FETCHING);

    // One active subscription, the older; the other a tombstone in the change feed.
    expect(await listAll(user)).toEqual(new Map([[kept, older]]));
    const { items } = await syncFrom(user, token);
    expect(items.filter((item) => item.attributes.userUnsubscribedAt !== null).map((item) => item.id)).toEqual([away]);
    // Each episode once, under the kept podcast, merged field by field.
    const listed = (await (await user.get("/v1/episodes")).json()) as {
      data: {
        attributes: { mediaUrl: string; itemGuid: string; position: number; played: boolean; deletedAt: string | null };
        relationships: { subscription: { data: { id: string } } };
      }[];
    };
    const live = listed.data.filter((item) => item.attributes.deletedAt === null);
    expect(live.map((item) => item.attributes.itemGuid).sort()).toEqual(["item-1", "item-2", "item-3"]);
    expect(new Set(live.map((item) => item.relationships.subscription.data.id))).toEqual(new Set([kept]));
    const byItem = new Map(live.map((item) => [item.attributes.itemGuid, item.attributes]));
    expect(byItem.get("item-1")).toMatchObject({ mediaUrl: `${older}-1.mp3`, position: 40, played: false });
    expect(byItem.get("item-3")).toMatchObject({ mediaUrl: `${newer}-3.mp3`, position: 3 });
    // gpodder: each episode once, under the kept URL.
    const actions = await json<{ actions: { podcast: string; episode: string }[] }>(
      gp.get(`/api/2/episodes/${app.loginName}.json?since=0`),
    );
    expect(actions.actions.map((action) => action.podcast)).toEqual(actions.actions.map(() => older));
    expect(new Set(actions.actions.map((action) => action.episode)).size).toBe(actions.actions.length);
    expect(actions.actions).toHaveLength(3);
    // The merged-away URL is a remove for gpodder.net and Nextcloud, the kept one neither a remove nor an add
    // (Nextcloud reads 10 minutes before `since`, which holds both subscribes: its add lists the kept one anyway).
    expect(await json<Changes>(gp.get(`${path}?since=${known.timestamp}`))).toMatchObject({
      add: [],
      remove: [newer],
    });
    expect(await json<Changes>(nextcloud(app).get(`subscriptions?since=${known.timestamp}`))).toMatchObject({
      remove: [newer],
    });
    // The other user's subscription stays as it was: no change at all.
    expect(await listAll(other)).toEqual(new Map([[others, newer]]));
    expect((await syncFrom(other, otherToken)).items).toEqual([]);

    // Reviving the merged-away guid: 409 with the kept subscription (single and bulk), nothing written.
    const version = await versionOf(user);
    const revival = { data: { type: "subscription", id: away, attributes: { feedUrl: newer } } };
    const response = await user.post("/v1/subscriptions", revival);
    expect(response.status).toBe(409);
    expect(((await response.json()) as ErrorDocument).errors[0]).toMatchObject({
      status: "409",
      title: "Already Subscribed",
      meta: { feedUrl: older, guid: kept },
    });
    const bulk = await user.operations({ "atomic:operations": [{ op: "add", ...revival }] });
    expect(await bulk.text()).toContain(JSON.stringify({ feedUrl: older, guid: kept }));
    expect(await versionOf(user)).toBe(version);

    // gPodder echoes the remove it received: it names the merged-away URL only, so the kept podcast stays.
    await json(gp.post(path, { add: [], remove: [newer] }));
    await json(nextcloud(app).post("subscription_change/create", { add: [], remove: [newer] }));
    expect(await listAll(user)).toEqual(new Map([[kept, older]]));
  });
});

/**
 * A user subscribed (JSON:API) to two feeds declaring one podcast:guid, which the round has merged: the older one's
 * subscription kept, the newer one's merged away (a tombstone).
 */
async function guidMerged(name: string) {
  const podcastGuid = crypto.randomUUID();
  const older = await feed({ title: "Merged", guid: podcastGuid });
  const newer = await feed({ title: "Merged, other host", guid: podcastGuid });
  const user = await as(`${name}-${uniqueNumber()}`);
  const kept = await subscribe(user, older);
  const away = await subscribe(user, newer);
  await runCron(Date.now(), FETCHING);
  expect(await listAll(user)).toEqual(new Map([[kept, older]]));
  return { user, kept, away, older, newer };
}

describe("after a guid merge, a device still on the merged-away URL", () => {
  it("plays reach the kept podcast (gpodder.net and Nextcloud): one state per episode, read under the kept URL, no round trip more", async () => {
    const { user, kept, older, newer } = await guidMerged("guid-merge-plays");
    const app = await mint(user);
    const counter = await countedDatabaseOf(user.userId);
    const gp = gpodder(app, counter.bindings);
    const path = `/api/2/episodes/${app.loginName}.json`;
    const { timestamp } = await json<Actions>(gp.get(`${path}?since=0`));
    const [one, two, three] = [1, 2, 3].map((n) => `${older}-episode-${n}.mp3`);
    const upload = async (actions: unknown[]) => {
      counter.reset();
      await json(gp.post(path, actions));
      return counter.calls();
    };
    // A device on the kept URL plays episode 1; one still on the merged-away URL plays it later, then episode 2.
    await upload([playOf(older, one, 10, "2026-01-02T03:00:00")]);
    await upload([playOf(newer, one, 20, "2026-01-02T03:05:00")]);
    expect(await upload([playOf(newer, two, 30)])).toBe(1);
    // A Nextcloud client still on it plays episode 3.
    await json(nextcloud(app).post("episode_action/create", [playOf(newer, three, 40)]));

    const listed = (await (await user.get("/v1/episodes")).json()) as {
      data: {
        attributes: { mediaUrl: string; position: number };
        relationships: { subscription: { data: { id: string } } };
      }[];
    };
    const states = listed.data.map((state) => [
      state.attributes.mediaUrl,
      state.relationships.subscription.data.id,
      state.attributes.position,
    ]);
    expect(states.sort()).toEqual([
      [one, kept, 20],
      [two, kept, 30],
      [three, kept, 40],
    ]);
    const answered = [playOf(older, one, 20, "2026-01-02T03:05:00"), playOf(older, two, 30), playOf(older, three, 40)];
    expect((await json<Actions>(gp.get(`${path}?since=${timestamp}`))).actions).toEqual(answered);
    // `podcast=` naming either URL reads the kept podcast's states.
    for (const podcast of [older, newer]) {
      const named = await json<Actions>(gp.get(`${path}?since=0&podcast=${encodeURIComponent(podcast)}`));
      expect(named.actions, podcast).toEqual(answered);
    }
    const { actions } = await json<Actions>(nextcloud(app).get(`episode_action?since=${timestamp}`));
    expect(actions.map((action) => [action.podcast, action.episode, action.position])).toEqual(
      answered.map((action) => [action.podcast, action.episode, action.position]),
    );
  });

  it("adds it back: nothing written, gpodder answers update_urls [sent, kept]; the simple PUT keeps the kept one; a remove changes nothing; once the kept one is gone, an add revives it", async () => {
    const { user, kept, away, older, newer } = await guidMerged("guid-merge-add");
    const app = await mint(user);
    const gp = gpodder(app);
    const path = `/api/2/subscriptions/${app.loginName}/phone.json`;
    const version = await versionOf(user);
    const answer = await json<{ update_urls: [string, string][] }>(gp.post(path, { add: [newer], remove: [] }));
    expect(answer.update_urls).toEqual([[newer, older]]);
    await json(nextcloud(app).post("subscription_change/create", { add: [newer], remove: [] }));
    expect((await simplePut(app, [newer])).status).toBe(200);
    // gPodder echoes the remove it received.
    await json(gp.post(path, { add: [], remove: [newer] }));
    await json(nextcloud(app).post("subscription_change/create", { add: [], remove: [newer] }));
    expect(await listAll(user)).toEqual(new Map([[kept, older]]));
    expect(await versionOf(user)).toBe(version);

    // The kept podcast unsubscribed: the merged-away URL is its own again, and an add of it revives its tombstone.
    expect((await user.delete(`/v1/subscriptions/${kept}`)).status).toBe(204);
    const revived = await json<{ update_urls: [string, string][] }>(gp.post(path, { add: [newer], remove: [] }));
    expect(revived.update_urls).toEqual([]);
    expect(await listAll(user)).toEqual(new Map([[away, newer]]));
  });
});

describe("guid merges in slices", () => {
  it("merge a bounded number of pairs per statement; a feed with pairs left is due again and the next runs go on", async () => {
    const podcastGuid = crypto.randomUUID();
    const first = await feed({ title: "Sliced", guid: podcastGuid });
    const second = await feed({ title: "Sliced, again", guid: podcastGuid });
    const users: { user: Caller; kept: string }[] = [];
    for (let n = 0; n < 3; n++) {
      const user = await as(`guid-slices-${n}-${uniqueNumber()}`);
      users.push({ user, kept: await subscribe(user, first) });
      await subscribe(user, second);
    }
    const perDatabase = new Map<D1Database, number>();
    for (const { user } of users) {
      const db = await databaseFor(user.userId);
      perDatabase.set(db, (perDatabase.get(db) ?? 0) + 1);
    }
    const databases = new Map(shardDatabases().map(({ name, database: d1 }) => [name, database(d1)] as const));
    const settings = { enabled: true, allowPrivate: true, userAgent: "test", movesPerStatement: 1 };
    const merged = async () => {
      let count = 0;
      for (const { user } of users) count += (await listAll(user)).size === 1 ? 1 : 0;
      return count;
    };
    const perRun: number[] = [];
    for (let time = Date.now(); (await merged()) < users.length; time += 10 * 60 * 1000) {
      await runFeedRound(databases, settings, time);
      perRun.push(await merged());
      if (perRun.length > 10) throw new Error("the merges never end");
    }
    // One pair per statement and database a run: as many runs as the fullest database has users.
    expect(perRun).toHaveLength(Math.max(...perDatabase.values()));
    for (const { user, kept } of users) expect(await listAll(user)).toEqual(new Map([[kept, first]]));
  });
});
