import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  d1Executor,
  moveBuckets,
  type ShardConfigStore,
  type ShardExecutor,
  type ShardSettings,
  USER_TABLES,
} from "../scripts/shards/move";
import { gpodderUsername } from "../src/auth/gpodder-username";
import { secretHash } from "../src/auth/secrets";
import { startAccountSession } from "../src/db/account-sessions";
import { type BucketRange, bucketOf } from "../src/shards";
import { Browser, SESSION_COOKIE, signInBindings } from "./account-browser";
import { as, type Bindings, subscriptionDocument } from "./helpers";

// The move runs on the local D1 databases of the two-shard configuration, whose spare database DB_2 is
// not in the map; the single-database configuration has nowhere to move to.
const spare = env.DB_2;
const MOVING = { first: 512, last: 767 };

const database = (name: string) => Reflect.get(env, name) as D1Database;

/** Writers and readers leave the local database some room between requests, as real clients would. */
const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

/** The routing settings the worker reads, held by the test: the move rewrites them, requests read them. */
function settingsStore(initial: ShardSettings) {
  const settings = { ...initial };
  const history: ShardSettings[] = [];
  const store: ShardConfigStore & { bindings: () => Partial<Bindings> } = {
    read: async () => ({ ...settings }),
    write: async (next) => {
      Object.assign(settings, next);
      history.push({ ...next });
      await afterWrite(next);
    },
    bindings: () => ({ SHARD_MAP: settings.map, SHARD_FROZEN: settings.frozen }),
  };
  let afterWrite: (settings: ShardSettings) => Promise<void> = async () => {};
  return {
    store,
    settings,
    history,
    onWrite: (hook: typeof afterWrite) => {
      afterWrite = hook;
    },
  };
}

/** `count` user ids whose buckets are inside (or, with `inside` false, outside) `range`. */
async function usersWhere(prefix: string, count: number, range: BucketRange, inside = true): Promise<string[]> {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    const bucket = await bucketOf(`${prefix}-${i}`);
    if ((bucket >= range.first && bucket <= range.last) === inside) users.push(`${prefix}-${i}`);
  }
  return users;
}

async function usersIn(name: string): Promise<Set<string>> {
  const { results } = await database(name)
    .prepare("SELECT user_id FROM subscriptions UNION SELECT user_id FROM user_stats")
    .all<{ user_id: string }>();
  return new Set(results.map((row) => row.user_id));
}

/** The user's active guids as the API lists them (every page). */
async function listedGuids(userId: string, bindings: Partial<Bindings>): Promise<string[]> {
  const user = await as(userId, bindings);
  const guids: string[] = [];
  for (let page = 1; ; page++) {
    const response = await user.get(`/v1/subscriptions?page[number]=${page}&page[size]=100`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { id: string }[]; links: { next: string | null } };
    guids.push(...body.data.map((resource) => resource.id));
    if (body.links.next === null) return guids.sort();
  }
}

/** A mediaUrl of 2 048 UTF-8 bytes: a head in the row and two pieces in url_pieces. */
function longMediaUrl(id: string): string {
  const head = `https://cdn.example/${id}/`;
  const rest = 2048 - head.length;
  return head + "é".repeat(Math.floor(rest / 2)) + "x".repeat(rest % 2);
}

async function subscribe(userId: string, bindings: Partial<Bindings>): Promise<{ guid: string; status: number }> {
  const guid = crypto.randomUUID();
  const response = await (await as(userId, bindings)).post(
    "/v1/subscriptions",
    subscriptionDocument(guid, `https://move.example/${guid}`),
  );
  return { guid, status: response.status };
}

describe.runIf(spare)("moving buckets 512-767 from DB_1 to DB_2 (npm run shards:move)", () => {
  it("refuses a target without the schema, before freezing anything", async () => {
    const { store, history } = settingsStore({ map: env.SHARD_MAP, frozen: "" });
    const executor = d1Executor(database);
    await expect(moveBuckets({ buckets: MOVING, from: "DB_1", to: "DB_2", executor, config: store })).rejects.toThrow(
      /apply the migrations to DB_2/,
    );
    expect(history).toEqual([]);
  });

  it("moves every row and stat while writers keep writing: nothing lost, nothing duplicated", {
    timeout: 120_000,
  }, async () => {
    await applyD1Migrations(spare as D1Database, env.TEST_MIGRATIONS);
    const { store, settings, history, onWrite } = settingsStore({ map: env.SHARD_MAP, frozen: "" });
    const moving = await usersWhere("mover", 12, MOVING);
    const staying = await usersWhere("stayer", 12, MOVING, false);
    const acknowledged = new Map<string, Set<string>>([...moving, ...staying].map((userId) => [userId, new Set()]));

    // Before: subscriptions, and a tombstone per moving user (deleted rows must move too).
    for (const userId of [...moving, ...staying]) {
      for (let i = 0; i < 3; i++) {
        const { guid, status } = await subscribe(userId, store.bindings());
        expect(status).toBe(201);
        acknowledged.get(userId)?.add(guid);
      }
    }
    for (const userId of moving) {
      const [gone] = acknowledged.get(userId) ?? [];
      expect((await (await as(userId, store.bindings())).delete(`/v1/subscriptions/${gone}`)).status).toBe(204);
      acknowledged.get(userId)?.delete(gone);
    }
    // Each moving user's listening state, and a forgotten one (its tombstone must move too).
    const episodes = new Map<string, string>();
    for (const userId of moving) {
      const user = await as(userId, store.bindings());
      const [kept, forgotten] = [crypto.randomUUID(), crypto.randomUUID()];
      for (const id of [kept, forgotten]) {
        const response = await user.post("/v1/episodes", {
          data: {
            type: "episode",
            id,
            attributes: { mediaUrl: longMediaUrl(id), position: 42, changedAt: "2026-06-01T00:00:00Z" },
            relationships: {
              subscription: { data: { type: "subscription", id: [...(acknowledged.get(userId) ?? [])][0] } },
            },
          },
        });
        expect(response.status).toBe(201);
      }
      expect((await user.delete(`/v1/episodes/${forgotten}`)).status).toBe(204);
      episodes.set(userId, kept);
      // The kept state re-homed as a merge re-homes one (its feed changed: drizzle/0017 queues it for a feed round to
      // rename): the queue must move too.
      await database("DB_1")
        .prepare("UPDATE episodes SET feed_guid = ? WHERE user_id = ? AND id = ?")
        .bind(crypto.randomUUID(), userId, kept)
        .run();
    }
    // Each moving user renamed a subscription (docs/API.md §18: its old URL stays an alias, which must move too).
    const renamed = new Map<string, { guid: string; from: string }>();
    for (const userId of moving) {
      const user = await as(userId, store.bindings());
      const [, guid] = acknowledged.get(userId) ?? [];
      const got = (await (await user.get(`/v1/subscriptions/${guid}`)).json()) as {
        data: { attributes: { feedUrl: string } };
      };
      const from = got.data.attributes.feedUrl;
      const patched = await user.patch(`/v1/subscriptions/${guid}`, {
        data: { type: "subscription", id: guid, attributes: { feedUrl: `${from}-renamed` } },
      });
      expect(patched.status).toBe(200);
      renamed.set(userId, { guid, from });
    }
    // Each moving user is signed in on the account pages (docs/API.md §16): the session must move with them.
    const pageSessions = new Map<string, string>();
    for (const userId of moving) {
      const cookie = `${await gpodderUsername(userId)}.${crypto.randomUUID()}`;
      await startAccountSession(database("DB_1"), {
        sessionHash: await secretHash(cookie),
        userId,
        name: `${userId} on the page`,
        now: Date.now(),
      });
      pageSessions.set(userId, cookie);
    }
    const etags = new Map<string, string>();
    for (const userId of moving) {
      const list = await (await as(userId, store.bindings())).get("/v1/subscriptions");
      etags.set(userId, list.headers.get("ETag") as string);
    }
    const beforeMove = { DB: await usersIn("DB"), DB_1: await usersIn("DB_1") };
    expect(moving.every((userId) => beforeMove.DB_1.has(userId))).toBe(true);

    // After every settings change, a write of a moving user shows what the worker does at that step.
    const probes: { frozen: string; map: string; status: number }[] = [];
    onWrite(async (next) => {
      const userId = moving[0];
      const { guid, status } = await subscribe(userId, store.bindings());
      if (status === 201) acknowledged.get(userId)?.add(guid);
      probes.push({ ...next, status });
    });

    // Writers on the buckets that stay, all through the move.
    let running = true;
    let writes = 0;
    const writer = async (users: string[]) => {
      for (let i = 0; running; i++) {
        const userId = users[i % users.length];
        const { guid, status } = await subscribe(userId, store.bindings());
        expect(status).toBe(201);
        acknowledged.get(userId)?.add(guid);
        writes++;
        await pause();
      }
    };
    // Brand-new users of the moving buckets, each writing for the first time, all through the move: a frozen
    // bucket answers 503 and the client retries, as Retry-After says; every acknowledged write must survive.
    const newcomers = await usersWhere("newcomer", 40, MOVING);
    const newcomerWrites: number[] = [];
    const newcomer = (async () => {
      for (const userId of newcomers) {
        if (!running) break;
        acknowledged.set(userId, new Set());
        for (;;) {
          const { guid, status } = await subscribe(userId, store.bindings());
          newcomerWrites.push(status);
          if (status === 201) {
            acknowledged.get(userId)?.add(guid);
            break;
          }
          expect(status).toBe(503);
          await pause();
        }
        await pause();
      }
    })();
    const writers = [writer(staying.slice(0, 6)), writer(staying.slice(6)), newcomer];
    // A reader of moving users: reads never fail during the move.
    const reader = (async () => {
      for (let i = 0; running; i++) {
        const response = await (await as(moving[i % moving.length], store.bindings())).get("/v1/subscriptions");
        expect(response.status).toBe(200);
        await pause();
      }
    })();

    const steps: string[] = [];
    const report = await moveBuckets({
      buckets: MOVING,
      from: "DB_1",
      to: "DB_2",
      executor: d1Executor(database),
      config: store,
      log: (line) => steps.push(line),
    }).finally(() => {
      running = false;
    });
    await Promise.all([...writers, reader]);

    expect(steps.map((step) => step.slice(0, 3))).toEqual(["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"]);
    expect(writes).toBeGreaterThan(0);
    // Newcomers wrote before, during (refused while frozen) and after the move.
    expect(newcomerWrites).toContain(201);
    const newcomersMoved = newcomers.filter((userId) => (acknowledged.get(userId)?.size ?? 0) > 0);
    expect(report.users).toBeGreaterThanOrEqual(moving.length);
    const tables = Object.fromEntries(report.tables.map((table) => [table.table, table.rows]));
    // Every user moved (the old ones and the newcomers that wrote before the freeze) has its rows and stats.
    expect(tables).toEqual({
      subscriptions: moving.length * 3 + (report.users - moving.length),
      episodes: moving.length * 2,
      // The kept state's 2 048-byte mediaUrl: two pieces beyond its head (the forgotten one's went with its text).
      url_pieces: moving.length * 2,
      app_passwords: 0,
      gpodder_sessions: 0,
      account_sessions: moving.length,
      devices: 0,
      subscription_renames: moving.length,
      episode_rehomes: moving.length,
      user_stats: report.users,
    });
    expect(newcomersMoved.length).toBeGreaterThan(0);
    expect(settings).toEqual({ map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" });
    expect(history).toEqual([
      { map: env.SHARD_MAP, frozen: "512-767" },
      { map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "512-767" },
      { map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" },
    ]);
    // Frozen: writes refused (before and after the switch); unfrozen: accepted, in the new database.
    expect(probes.map((probe) => probe.status)).toEqual([503, 503, 201]);

    const after = { DB: await usersIn("DB"), DB_1: await usersIn("DB_1"), DB_2: await usersIn("DB_2") };
    for (const userId of moving) {
      expect([after.DB.has(userId), after.DB_1.has(userId), after.DB_2.has(userId)], userId).toEqual([
        false,
        false,
        true,
      ]);
    }
    for (const userId of staying) {
      const holders = Object.entries(after).filter(([, users]) => users.has(userId));
      expect(
        holders.map(([name]) => name),
        userId,
      ).toEqual([beforeMove.DB.has(userId) ? "DB" : "DB_1"]);
    }
    // Every acknowledged write is there, nothing else; stats agree; moving users' ETags survived (versions copied).
    for (const [userId, guids] of acknowledged) {
      expect(await listedGuids(userId, store.bindings()), userId).toEqual([...guids].sort());
    }
    for (const userId of moving.slice(1)) {
      // moving[0] took the one accepted probe write, which changed its version.
      const cached = await (await as(userId, store.bindings())).get("/v1/subscriptions", {
        "If-None-Match": etags.get(userId) as string,
      });
      expect(cached.status, userId).toBe(304);
    }
    // Their renames moved with them: an add of the old URL names the renamed subscription in the new database.
    for (const [userId, { guid, from }] of renamed) {
      const added = await (await as(userId, store.bindings())).post("/v1/subscriptions", {
        data: { type: "subscription", id: crypto.randomUUID(), attributes: { feedUrl: from } },
      });
      expect(added.status, userId).toBe(409);
      expect(((await added.json()) as { errors: { meta?: { guid?: string } }[] }).errors[0].meta?.guid).toBe(guid);
    }
    // Listening state moved with them: the episode feed from 0 reads the live state (its 2 048-byte mediaUrl whole:
    // the pieces beyond the row's head moved too) and the tombstone.
    for (const [userId, kept] of episodes) {
      const feed = (await (await (await as(userId, store.bindings())).get("/v1/episodes")).json()) as {
        data: { id: string; attributes: { position?: number; deletedAt: string | null; mediaUrl?: string } }[];
      };
      expect(
        feed.data.map((item) => [
          item.id === kept,
          item.attributes.deletedAt === null,
          item.attributes.position,
          item.attributes.mediaUrl,
        ]),
        userId,
      ).toEqual([
        [true, true, 42, longMediaUrl(kept)],
        [false, false, undefined, undefined],
      ]);
    }
    // Signed in still, on the database the user now lives in.
    for (const [userId, cookie] of pageSessions) {
      const browser = new Browser(signInBindings(store.bindings()));
      browser.setCookie(SESSION_COOKIE, cookie);
      expect((await browser.page("/account")).html, userId).toContain(
        `Signed in as <strong><bdi>${userId} on the page</bdi></strong>`,
      );
    }
    const pieces = async (name: string) =>
      (
        await database(name)
          .prepare(`SELECT count(*) AS n FROM url_pieces WHERE user_id IN (${moving.map(() => "?").join(", ")})`)
          .bind(...moving)
          .first<{ n: number }>()
      )?.n;
    expect(await pieces("DB_1")).toBe(0);
    expect(await pieces("DB_2")).toBe(2 * moving.length);
    const stats = await database("DB_2")
      .prepare("SELECT count(*) AS users, sum(active_count) AS active FROM user_stats")
      .first<{ users: number; active: number }>();
    const inMovedBuckets = [...moving, ...newcomersMoved];
    expect(stats).toEqual({
      users: inMovedBuckets.length,
      active: inMovedBuckets.reduce((sum, userId) => sum + (acknowledged.get(userId)?.size ?? 0), 0),
    });

    // Running the same command again finds the move done and changes nothing.
    const again = await moveBuckets({
      buckets: MOVING,
      from: "DB_1",
      to: "DB_2",
      executor: d1Executor(database),
      config: store,
    });
    expect(again.resumed).toBe(true);
    expect(settings).toEqual({ map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" });
    for (const [userId, guids] of acknowledged) {
      expect(await listedGuids(userId, store.bindings()), userId).toEqual([...guids].sort());
    }
  });

  it("keeps the map and the rows when the copy does not verify, and unfreezes", async () => {
    // DB_2 already holds 512-767 (the test above); 768-1023 is still in DB_1.
    const { store, settings } = settingsStore({ map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" });
    const users = await usersWhere("unverified", 3, { first: 768, last: 1023 });
    const before = new Map<string, string[]>();
    for (const userId of users) {
      await subscribe(userId, store.bindings());
      before.set(userId, await listedGuids(userId, store.bindings()));
    }
    // An executor that silently loses the first statement (subscription rows) of every copy batch into DB_2.
    const real = d1Executor(database);
    const lossy: ShardExecutor = {
      all: real.all,
      batch: (name, statements) =>
        real.batch(name, name === "DB_2" && statements[0]?.sql.startsWith("INSERT") ? statements.slice(1) : statements),
    };
    await expect(
      moveBuckets({ buckets: { first: 768, last: 1023 }, from: "DB_1", to: "DB_2", executor: lossy, config: store }),
    ).rejects.toThrow(/differs/);
    expect(settings).toEqual({ map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" });
    for (const userId of users) {
      expect(await listedGuids(userId, store.bindings()), userId).toEqual(before.get(userId));
    }
    const left = await usersIn("DB_2");
    expect(users.filter((userId) => left.has(userId))).toEqual([]);
  });

  it("refuses, before freezing anything, a per-user table it does not know; skips listed tables not created yet", async () => {
    // Today's databases lack several USER_TABLES (episodes, app_passwords, ...): the moves above ran anyway.
    const { store, history } = settingsStore({ map: "DB:0-511,DB_2:512-767,DB_1:768-1023", frozen: "" });
    await database("DB_1").prepare("CREATE TABLE unlisted_things (user_id TEXT NOT NULL, value TEXT)").run();
    try {
      await expect(
        moveBuckets({
          buckets: { first: 768, last: 1023 },
          from: "DB_1",
          to: "DB_2",
          executor: d1Executor(database),
          config: store,
        }),
      ).rejects.toThrow(/unlisted_things .*add it to USER_TABLES/);
      expect(history).toEqual([]);
    } finally {
      await database("DB_1").prepare("DROP TABLE unlisted_things").run();
    }
    expect(USER_TABLES.map((table) => table.table)).toContain("episodes");
  });
});
