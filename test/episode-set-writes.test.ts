import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { episodeStatements, MAX_STORED_EPISODES } from "../src/db/episodes";
import { MAX_URL_BYTES } from "../src/db/storage";
import { podcastGuid, uuidV5 } from "../src/podcast-guid";
import { as, type Caller, databaseFor, meteredDatabaseOf, ORIGIN, queryPlan, send, walksOf } from "./helpers";
import { propertyOptions, propertyTimeout } from "./property-options";

/**
 * A gpodder episode upload is written as sets (db/episodes.ts, `setWriteStatements`): a few statements per upload
 * whatever its number of actions, with the merge rules of the single writes (docs/API.md §13) and the quota and
 * budget of §15 checked for the set.
 */

/** Fixed so that CI runs are reproducible; fast-check prints the seed and path of a failure. */
const SEED = 20261204;
const RUNS = propertyOptions(SEED, 12);

async function gpodderOf(user: Caller, bindings = {}) {
  const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "x" } } });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  const authorization = `Basic ${btoa(`${username}:${password}`)}`;
  const upload = async (actions: unknown[]) => {
    const response = await send(
      new Request(`${ORIGIN}/api/2/episodes/${username}.json`, {
        method: "POST",
        headers: { Authorization: authorization },
        body: JSON.stringify(actions),
      }),
      bindings,
    );
    expect(response.status).toBe(200);
  };
  return { upload };
}

const FEEDS = ["https://sets.example.com/a.xml", "https://sets.example.com/b.xml"];

interface Action {
  feed: number;
  episode: number;
  kind: "play" | "new";
  position: number;
  total: number;
  /** Seconds after a fixed time: few values, so that equal device times happen. */
  at: number;
  guid: boolean;
}

function toGpodder(action: Action) {
  return {
    podcast: FEEDS[action.feed],
    episode: `https://cdn.sets.example.com/${action.feed}/${action.episode}.mp3`,
    ...(action.guid ? { guid: `guid-${action.feed}-${action.episode}` } : {}),
    action: action.kind,
    timestamp: new Date(Date.UTC(2026, 5, 1, 12, 0, action.at)).toISOString().slice(0, 19),
    ...(action.kind === "play" ? { started: 0, position: action.position, total: action.total } : {}),
  };
}

const action: fc.Arbitrary<Action> = fc.record({
  feed: fc.nat(FEEDS.length - 1),
  episode: fc.nat(2),
  kind: fc.constantFrom("play" as const, "new" as const),
  position: fc.nat(120),
  total: fc.constantFrom(60, 120),
  at: fc.nat(4),
  guid: fc.boolean(),
});

/** Every live state of the user as the JSON:API lists it, without what differs between users (none). */
async function states(user: Caller) {
  const response = await user.get("/v1/episodes?filter[since]=0&page[size]=100");
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { id: string; attributes: Record<string, unknown> }[] };
  return body.data
    .filter((item) => item.attributes.deletedAt === null)
    .map((item) => ({ id: item.id, ...item.attributes }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

let users = 0;

const IDS = [
  "10000000-0000-4000-8000-000000000001",
  "20000000-0000-4000-8000-000000000002",
  "30000000-0000-4000-8000-000000000003",
];
const GUIDS = ["40000000-0000-4000-8000-000000000004", "50000000-0000-4000-8000-000000000005"];

type BulkOp =
  | {
      op: "add";
      id: number;
      feed: number;
      media: number | null;
      position: number | null;
      played: boolean | null;
      at: number;
    }
  | { op: "update"; id: number; position: number | null; played: boolean | null; at: number }
  | { op: "remove"; id: number };

const bulkOp: fc.Arbitrary<BulkOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("add" as const),
      id: fc.nat(IDS.length - 1),
      feed: fc.nat(GUIDS.length - 1),
      media: fc.option(fc.nat(1), { freq: 5 }),
      position: fc.option(fc.nat(300)),
      played: fc.option(fc.boolean()),
      at: fc.nat(4),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("update" as const),
      id: fc.nat(IDS.length - 1),
      position: fc.option(fc.nat(300)),
      played: fc.option(fc.boolean()),
      at: fc.nat(4),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("remove" as const), id: fc.nat(IDS.length - 1) }) },
);

function attributesOf(op: { position: number | null; played: boolean | null; at: number }, media?: number | null) {
  return {
    ...(media === undefined || media === null ? {} : { mediaUrl: `https://cdn.sets.example.com/bulk/${media}.mp3` }),
    ...(op.position === null ? {} : { position: op.position }),
    ...(op.played === null ? {} : { played: op.played }),
    changedAt: new Date(Date.UTC(2026, 5, 1, 12, 0, op.at)).toISOString(),
  };
}

/** The operation as a bulk request's member. */
function toOperation(op: BulkOp) {
  const id = IDS[op.id];
  if (op.op === "remove") return { op: "remove", ref: { type: "episode", id } };
  if (op.op === "update") return { op: "update", data: { type: "episode", id, attributes: attributesOf(op) } };
  return {
    op: "add",
    data: {
      type: "episode",
      id,
      attributes: attributesOf(op, op.media),
      relationships: { subscription: { data: { type: "subscription", id: GUIDS[op.feed] } } },
    },
  };
}

/** What an answer says, the same for a bulk result and a single request's document: the error's status, or the state. */
function outcome(
  document: { data?: { attributes: Record<string, unknown> }; errors?: { status: string }[] } | undefined,
) {
  if (document?.errors) return { error: document.errors[0].status };
  return document?.data ? { state: document.data.attributes } : {};
}

describe("episode uploads written as sets (docs/API.md §13-15)", () => {
  it(
    `an upload ends where its actions sent one per upload end, tombstones written afresh included (${RUNS.numRuns} random runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(action, { minLength: 0, maxLength: 4 }),
          fc.array(fc.record({ feed: fc.nat(FEEDS.length - 1), episode: fc.nat(2) }), { maxLength: 2 }),
          fc.array(action, { minLength: 1, maxLength: 10 }),
          async (before, forgotten, sent) => {
            users++;
            const [setUser, singleUser] = [await as(`sets-set-${users}`), await as(`sets-single-${users}`)];
            const [set, single] = [await gpodderOf(setUser), await gpodderOf(singleUser)];
            for (const [user, client] of [
              [setUser, set],
              [singleUser, single],
            ] as const) {
              if (before.length > 0) await client.upload(before.map(toGpodder));
              for (const gone of forgotten) {
                const id = await uuidV5(
                  await podcastGuid(FEEDS[gone.feed]),
                  `https://cdn.sets.example.com/${gone.feed}/${gone.episode}.mp3`,
                );
                await user.delete(`/v1/episodes/${id}`);
              }
            }
            await set.upload(sent.map(toGpodder));
            for (const one of sent) await single.upload([toGpodder(one)]);
            expect(await states(setUser)).toEqual(await states(singleUser));
          },
        ),
        RUNS,
      );
    },
    propertyTimeout(120_000),
  );

  it(
    `a bulk request's episode operations answer and end as each sent as its own request does (${RUNS.numRuns} random runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(bulkOp, { minLength: 1, maxLength: 12 }), async (ops) => {
          users++;
          const [bulkUser, singleUser] = [await as(`sets-bulk-${users}`), await as(`sets-alone-${users}`)];
          const response = await bulkUser.operations({ "atomic:operations": ops.map(toOperation) });
          expect(response.status).toBe(200);
          const bulk = ((await response.json()) as { "atomic:results": Parameters<typeof outcome>[0][] })[
            "atomic:results"
          ];
          const alone = [];
          for (const op of ops) {
            const operation = toOperation(op);
            const id = IDS[op.id];
            const answer =
              op.op === "remove"
                ? await singleUser.delete(`/v1/episodes/${id}`)
                : op.op === "update"
                  ? await singleUser.patch(`/v1/episodes/${id}`, { data: operation.data })
                  : await singleUser.post("/v1/episodes", { data: operation.data });
            alone.push(outcome(answer.status === 204 ? undefined : await answer.json()));
          }
          expect(bulk.map(outcome)).toEqual(alone);
          expect(await states(bulkUser)).toEqual(await states(singleUser));
        }),
        RUNS,
      );
    },
    propertyTimeout(120_000),
  );

  it("a bulk request's set statements walk no table, nor all of a user's rows", async () => {
    const userId = "sets-plans";
    const meter = await meteredDatabaseOf(userId);
    const user = await as(userId, meter.bindings);
    const adds = (from: number) =>
      Array.from({ length: 5 }, (_, i) => ({
        op: "add",
        data: {
          type: "episode",
          id: crypto.randomUUID(),
          attributes: {
            mediaUrl: `https://cdn.sets.example.com/plans/${from + i}.mp3`,
            position: 1,
            changedAt: "2026-06-01T12:00:00Z",
          },
          relationships: { subscription: { data: { type: "subscription", id: GUIDS[0] } } },
        },
      }));
    expect((await user.operations({ "atomic:operations": adds(0) })).status).toBe(200);
    expect((await user.operations({ "atomic:operations": adds(5) })).status).toBe(200);
    const recorded = new Map(meter.totals.statements.map((statement) => [statement.sql, statement.params]));
    const sets = Object.entries(episodeStatements).filter(([name]) => name.startsWith("set"));
    expect(sets.length).toBe(6);
    for (const [name, statement] of sets) {
      const params = recorded.get(statement.sql);
      expect(params, `statement ${name} not exercised`).toBeDefined();
      const plan = await queryPlan(await databaseFor(userId), statement.sql, params);
      expect(walksOf(plan, ["subscriptions", "episodes", "user_stats"], ["subscriptions", "episodes"]), name).toEqual(
        [],
      );
    }
  });

  it("an upload's statements do not grow with its actions, nor its rows read beyond a few per action", async () => {
    const measured = async (count: number) => {
      const userId = `sets-count-${count}`;
      const meter = await meteredDatabaseOf(userId);
      const { upload } = await gpodderOf(await as(userId), meter.bindings);
      const actions = (offset: number) =>
        Array.from({ length: count }, (_, i) => ({
          podcast: FEEDS[i % 2],
          episode: `https://cdn.sets.example.com/count/${offset + i}.mp3`,
          action: "play",
          timestamp: "2026-06-01T12:00:00",
          started: 0,
          position: 10,
          total: 100,
        }));
      await upload(actions(0)); // the isolate learns the feeds' guids
      meter.reset();
      meter.totals.statements.length = 0;
      meter.totals.rowsReadPerStatement.length = 0;
      await upload(actions(count));
      return { statements: meter.totals.statements.length, rowsRead: meter.totals.rowsRead };
    };
    const [few, many] = [await measured(10), await measured(300)];
    expect(many.statements).toBe(few.statements);
    // Per new state: its row looked up by the two write statements, its walk through their CTEs and the insert with
    // its triggers' stats row (10 measured; the refusals' statements and the room's read nothing while the set fits,
    // the feeds' resolution is a constant). A statement per action read 55.
    expect((many.rowsRead - few.rowsRead) / 290).toBeLessThanOrEqual(12);
  });

  it("near the budget: new states are stored in order while their URLs fit, the rest refused and logged", async () => {
    const userId = "sets-budget";
    const user = await as(userId);
    const { upload } = await gpodderOf(user);
    const db = await databaseFor(userId);
    const long = (n: number) => `https://cdn.sets.example.com/budget/${n}/${"x".repeat(900)}.mp3`;
    const play = (n: number, position = 5) => ({
      podcast: FEEDS[0],
      episode: long(n),
      action: "play",
      timestamp: `2026-06-01T12:00:0${position % 10}`,
      started: 0,
      position,
      total: 100,
    });
    await upload([play(0)]);
    const stats = () =>
      db
        .prepare("SELECT url_bytes, episode_count FROM user_stats WHERE user_id = ?")
        .bind(userId)
        .first<{ url_bytes: number; episode_count: number }>();
    // Room for one more long URL only (no tombstone holds text to purge).
    const room = long(1).length + 100;
    await db
      .prepare("UPDATE user_stats SET url_bytes = ? WHERE user_id = ?")
      .bind(MAX_URL_BYTES - room, userId)
      .run();
    const warned: Record<string, unknown>[] = [];
    const spy = vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
      warned.push(JSON.parse(String(line)) as Record<string, unknown>);
    });
    await upload([play(1), play(2), play(0, 7), play(3)]);
    spy.mockRestore();
    const feed = await podcastGuid(FEEDS[0]);
    const stored = async (n: number) => (await user.get(`/v1/episodes/${await uuidV5(feed, long(n))}`)).status;
    expect([await stored(1), await stored(2), await stored(3)]).toEqual([200, 404, 404]);
    // A merge that adds no text is no refusal: episode 0 took the later position.
    const zero = (await (await user.get(`/v1/episodes/${await uuidV5(feed, long(0))}`)).json()) as {
      data: { attributes: { position: number } };
    };
    expect(zero.data.attributes.position).toBe(7);
    expect(warned).toEqual([
      expect.objectContaining({ event: "episode_actions_refused", count: 2, episodeLimit: 0, storageLimit: 2 }),
    ]);
    expect((await stats())?.url_bytes).toBeLessThanOrEqual(MAX_URL_BYTES);
  });

  it("at the quota: the oldest tombstones make room for new states, as many as there are, the rest refused", async () => {
    const userId = "sets-quota";
    const user = await as(userId);
    const { upload } = await gpodderOf(user);
    const db = await databaseFor(userId);
    const play = (n: number) => ({
      podcast: FEEDS[1],
      episode: `https://cdn.sets.example.com/quota/${n}.mp3`,
      action: "play",
      timestamp: "2026-06-01T12:00:00",
      started: 0,
      position: 5,
      total: 100,
    });
    await upload([play(0), play(1), play(2)]);
    const feed = await podcastGuid(FEEDS[1]);
    const idOf = (n: number) => uuidV5(feed, play(n).episode);
    await user.delete(`/v1/episodes/${await idOf(0)}`);
    await user.delete(`/v1/episodes/${await idOf(1)}`);
    // As if the user stored the whole quota: three rows here, two of them tombstones.
    await db
      .prepare("UPDATE user_stats SET episode_count = ? WHERE user_id = ?")
      .bind(MAX_STORED_EPISODES, userId)
      .run();
    await upload([play(3), play(4), play(5)]);
    const statuses = await Promise.all(
      [3, 4, 5].map(async (n) => (await user.get(`/v1/episodes/${await idOf(n)}`)).status),
    );
    expect(statuses).toEqual([200, 200, 404]);
    const rows = await db
      .prepare("SELECT count(*) AS n FROM episodes WHERE user_id = ? AND deleted_at IS NOT NULL")
      .bind(userId)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
    const stats = await db
      .prepare("SELECT episode_count FROM user_stats WHERE user_id = ?")
      .bind(userId)
      .first<{ episode_count: number }>();
    expect(stats?.episode_count).toBe(MAX_STORED_EPISODES);
  });
});
