import { describe, expect, it } from "vitest";
import { database } from "../src/db/database";
import { allStatements, REHOMES_PER_ROUND, renameRehomedStatements } from "../src/db/episode-rehomes";
import { runFeedRound } from "../src/feeds/round";
import { podcastGuidSync, uuidV5Sync } from "../src/podcast-guid";
import { at, FETCHING, subscribe, uniqueNumber } from "./feed-round-calls";
import { as, type Caller, databaseFor, listAll, queryPlan, runCron, walksOf } from "./helpers";
import { gpodder, json, mint } from "./nextcloud-client";

/**
 * A re-homed state takes the kept podcast's id (docs/API.md §18: "episode actions under any alias reach the same
 * episode states"; src/db/episode-rehomes.ts). gPodder follows a `301` itself and plays under B before the round
 * learns A -> B; the round then re-homes those states to the user's subscription (its guid), keeping the ids computed
 * in B's own namespace, and the next round gives each the id every upload under the subscription computes. Without
 * it, a later play of that episode under B makes a second state of it.
 */

/** A feed URL that answers a `301` to a feed: the round learns that it moved; [A, B]. */
function movingFeed(): [string, string] {
  const from = at("/redirect/301/1/feeds/tech.rss");
  return [from, from.replace("/redirect/301/1/feeds/", "/feeds/")];
}

/** A gpodder play action (with the item guid gPodder sends) at `timestamp`. */
function playOf(podcast: string, episode: string, position: number, timestamp: string) {
  return { podcast, episode, guid: `${episode}#guid`, timestamp, action: "play", started: 0, position, total: 100 };
}

interface LiveState {
  id: string;
  attributes: { mediaUrl: string; position: number; deletedAt: string | null };
  relationships: { subscription: { data: { id: string } } };
}

/** The user's episode change feed from 0: live states and tombstones. */
async function episodeChanges(user: Caller): Promise<LiveState[]> {
  const response = await user.get("/v1/episodes?filter[since]=0&page[size]=100");
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: LiveState[] }).data;
}

const live = async (user: Caller) =>
  (await episodeChanges(user)).filter((state) => state.attributes.deletedAt === null);

/**
 * A user subscribed to A whose phone played `episode` under B (position 30, at `playedAt`) before the round learned
 * A -> B; after the round that learns it, the state is the subscription's, still under its id in B's namespace.
 */
async function strayUnderTheTarget(name: string, playedAt: string) {
  const user = await as(`${name}-${uniqueNumber()}`);
  const [from, to] = movingFeed();
  const guid = await subscribe(user, from);
  const app = await mint(user, "gPodder");
  const gp = gpodder(app);
  const path = `/api/2/episodes/${app.loginName}.json`;
  const episode = `${to}-episode-1.mp3`;
  await json(gp.post(path, [playOf(to, episode, 30, playedAt)]));
  const strayId = uuidV5Sync(podcastGuidSync(to), `${episode}#guid`);
  // A new feed is due at once; runs until the one that fetches A (the round takes FEEDS_PER_ROUND due feeds a run).
  for (let run = 0; run < 4 && (await listAll(user)).get(guid) !== to; run++) {
    await runCron(Date.now() + run * 10 * 60 * 1000, FETCHING);
  }
  expect(await listAll(user)).toEqual(new Map([[guid, to]]));
  const states = await live(user);
  expect(states.map((state) => [state.id, state.relationships.subscription.data.id])).toEqual([[strayId, guid]]);
  const keptId = uuidV5Sync(guid, `${episode}#guid`);
  return { user, gp, path, to, guid, episode, strayId, keptId, db: await databaseFor(user.userId) };
}

const queued = async (db: D1Database, user: string) =>
  (await db.prepare("SELECT id FROM episode_rehomes WHERE user_id = ?").bind(user).all<{ id: string }>()).results.map(
    (row) => row.id,
  );

describe("a re-homed episode state takes the kept podcast's id", () => {
  it("the next round moves it to the id an upload under the subscription computes: a later play reaches it, the old id is a tombstone", async () => {
    const { user, gp, path, to, guid, episode, strayId, keptId, db } = await strayUnderTheTarget(
      "rehome-rename",
      "2026-01-02T03:00:00",
    );
    expect(await queued(db, user.userId)).toEqual([strayId]);

    await runCron(Date.now(), FETCHING);

    const states = await live(user);
    expect(
      states.map((state) => [state.id, state.relationships.subscription.data.id, state.attributes.position]),
    ).toEqual([[keptId, guid, 30]]);
    // The old id is forgotten as a DELETE forgets: a JSON:API client that held it learns it is gone.
    const tombstones = (await episodeChanges(user)).filter((state) => state.attributes.deletedAt !== null);
    expect(tombstones.map((state) => state.id)).toContain(strayId);
    expect(await queued(db, user.userId)).toEqual([]);

    // A later play under B (which now names the subscription) reaches that state: one state of the episode.
    await json(gp.post(path, [playOf(to, episode, 55, "2026-01-02T06:00:00")]));
    const after = await live(user);
    expect(after.map((state) => [state.id, state.attributes.position])).toEqual([[keptId, 55]]);
    const { actions } = await json<{ actions: { podcast: string; episode: string; position: number }[] }>(
      gp.get(`${path}?since=0`),
    );
    expect(actions.map((action) => [action.podcast, action.episode, action.position])).toEqual([[to, episode, 55]]);
    // Change numbers stay distinct.
    const seqs = await db
      .prepare("SELECT count(DISTINCT change_seq) AS d, count(*) AS n FROM episodes WHERE user_id = ?")
      .bind(user.userId)
      .first<{ d: number; n: number }>();
    expect(seqs?.d).toBe(seqs?.n);
  });

  it("a play under the subscription before the rename made its own state: the rename merges the two by section 13", async () => {
    // The stray's play (position 30) is the later one on its device: it wins over the play made since.
    const { user, gp, path, to, episode, keptId, db } = await strayUnderTheTarget(
      "rehome-merge",
      "2026-01-02T05:00:00",
    );
    await json(gp.post(path, [playOf(to, episode, 60, "2026-01-02T04:00:00")]));
    expect((await live(user)).map((state) => state.attributes.position).sort()).toEqual([30, 60]);

    await runCron(Date.now(), FETCHING);

    expect((await live(user)).map((state) => [state.id, state.attributes.position])).toEqual([[keptId, 30]]);
    expect(await queued(db, user.userId)).toEqual([]);
  });

  it("waits while a bucket is frozen (the round writes no user's rows), and a state deleted meanwhile only leaves the queue", async () => {
    const { user, strayId, db } = await strayUnderTheTarget("rehome-frozen", "2026-01-02T03:00:00");
    const databases = new Map([["db", database(db)]]);
    const settings = { enabled: true, allowPrivate: true, userAgent: "test", movesPerStatement: 0 };
    expect((await runFeedRound(databases, settings, Date.now())).statesRenamed).toBe(0);
    expect((await live(user)).map((state) => state.id)).toEqual([strayId]);
    expect(await queued(db, user.userId)).toEqual([strayId]);

    expect((await user.delete(`/v1/episodes/${strayId}`)).status).toBe(204);
    const { movesPerStatement: _frozen, ...thawed } = settings;
    expect((await runFeedRound(databases, thawed, Date.now())).statesRenamed).toBe(1);
    expect(await live(user)).toEqual([]);
    expect(await queued(db, user.userId)).toEqual([]);
  });

  it("renames at most REHOMES_PER_ROUND states a round and database, the rest in the next runs", async () => {
    const { user, db } = await strayUnderTheTarget("rehome-bound", "2026-01-02T03:00:00");
    // More queued states than a round takes: the user's one and ids no state has (each read, then only dequeued).
    const extra = Array.from({ length: REHOMES_PER_ROUND + 5 }, () => crypto.randomUUID());
    await db.batch(
      extra.map((id) => db.prepare("INSERT INTO episode_rehomes (user_id, id) VALUES (?, ?)").bind(user.userId, id)),
    );
    const databases = new Map([["db", database(db)]]);
    const settings = { enabled: true, allowPrivate: true, userAgent: "test" };
    const first = await runFeedRound(databases, settings, Date.now());
    expect(first.statesRenamed).toBe(REHOMES_PER_ROUND);
    const second = await runFeedRound(databases, settings, Date.now());
    expect(second.statesRenamed).toBe(extra.length + 1 - REHOMES_PER_ROUND);
    expect(await queued(db, user.userId)).toEqual([]);
    expect(await live(user)).toHaveLength(1);
  });

  it("scans no table but its own queue, and an empty read writes nothing", async () => {
    const db = await databaseFor("rehome-plans");
    for (const [name, statement] of Object.entries(allStatements)) {
      const parameters = Math.max(0, ...[...statement.sql.matchAll(/\?(\d+)/g)].map((match) => Number(match[1])));
      const plan = await queryPlan(db, statement.sql, Array(parameters).fill(1));
      // The read walks the queue (at most REHOMES_PER_ROUND rows); the writes walk only the renames sent.
      expect(walksOf(plan, ["episodes", "user_stats", "url_pieces"]), `${name}\n${plan.join("\n")}`).toEqual([]);
    }
    expect(renameRehomedStatements(database(db), [], 0)).toEqual([]);
  });
});
