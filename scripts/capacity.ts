// Measures what a stored subscription costs in a D1 (SQLite) database of this schema: fills a local D1
// (Miniflare, the engine `wrangler dev` and the tests use) through the migrations in drizzle/ with
// 100 000 subscriptions and reads the database's page usage. docs/CAPACITY.md quotes its output.
//
//   npm run capacity                          100 000 subscriptions, 100 per user, 10 % tombstones
//   npm run capacity -- --subscriptions 200000 --per-user 200 --tombstones 0.2
//   npm run capacity -- --account             the worst account: bytes at the budget, SQL time of its requests
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { parseArgs } from "node:util";
import { convertV4MiniflareOptions, Miniflare, NoOpLog } from "miniflare";
import { unstable_splitSqlQuery } from "wrangler";
import { allStatements } from "../src/db/subscriptions";
import { urlKey } from "../src/db/url-key";
import { measureWorstAccount, rendered } from "./capacity-account";

const { values } = parseArgs({
  options: {
    subscriptions: { type: "string", default: "100000" },
    "per-user": { type: "string", default: "100" },
    tombstones: { type: "string", default: "0.1" },
    account: { type: "boolean", default: false },
  },
});
if (values.account) {
  console.log(JSON.stringify(measureWorstAccount(), null, 2));
  process.exit(0);
}
const total = Number(values.subscriptions);
const perUser = Number(values["per-user"]);
const tombstoneShare = Number(values.tombstones);

const MIGRATIONS = new URL("../drizzle/", import.meta.url);
const ROWS_PER_STATEMENT = 14; // 7 bound parameters a row; D1 allows 100 per statement

// Deterministic data, shaped like production: user ids as identity providers issue them (about 30
// characters), guids as UUIDs, feed URLs of typical podcast hosts (50-80 characters).
let seed = 20261121;
/** mulberry32: a small deterministic generator, so every run builds the same database. */
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const hex = (length: number) => Array.from({ length }, () => Math.floor(random() * 16).toString(16)).join("");
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${"89ab"[Math.floor(random() * 4)]}${hex(3)}-${hex(12)}`;
const hosts = ["feeds.simplecast.com", "feeds.megaphone.fm", "anchor.fm/s", "feeds.buzzsprout.com", "rss.art19.com"];
const feedUrl = () =>
  `https://${hosts[Math.floor(random() * hosts.length)]}/${hex(8 + Math.floor(random() * 24))}/podcast.rss`;

function sqliteFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sqliteFiles(join(dir, entry.name))
      : entry.name.endsWith(".sqlite")
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The SQL text and parameters of one of src/db/subscriptions.ts's statements for `values`. */
const renderedStatement = (name: keyof typeof allStatements, values: Record<string, unknown>) =>
  rendered(allStatements[name], values);

/**
 * SQL time of the app's own statements on the filled database, per request kind, measured in-process
 * on the same file (D1 reports times in whole milliseconds only). D1 runs one query at a time, so
 * 1000 / ms bounds what one database can serve per second; D1 adds its own overhead per query on top.
 */
function timeRequests(sqlite: DatabaseSync) {
  const users = (
    sqlite.prepare("SELECT user_id FROM user_stats ORDER BY user_id LIMIT 300").all() as { user_id: string }[]
  ).map((row) => row.user_id);
  const someGuid = sqlite.prepare("SELECT guid FROM subscriptions WHERE user_id = ? LIMIT 1");
  const kinds: Record<string, (user: string) => { sql: string; params: SQLInputValue[] }[]> = {
    "list page 1 (25)": (user) => [
      renderedStatement("list", { userId: user, knownVersion: null, limit: 25, offset: 0 }),
    ],
    "get one": (user) => [
      renderedStatement("findOne", { userId: user, guid: (someGuid.get(user) as { guid: string }).guid }),
    ],
    "change feed (25)": (user) => [
      renderedStatement("changes", { userId: user, since: 0, limit: 25, knownVersion: null }),
    ],
    "subscribe (new)": (user) => {
      const values = { userId: user, guid: uuid(), feedUrl: feedUrl(), now: Date.now(), urlKey: 0 };
      return [renderedStatement("subscribe", values), renderedStatement("findActive", values)];
    },
  };
  const report: Record<string, { meanMs: number; p99Ms: number; perSecond: number }> = {};
  for (const [kind, statementsOf] of Object.entries(kinds)) {
    const times: number[] = [];
    for (const user of users) {
      const statements = statementsOf(user).map(({ sql, params }) => ({ prepared: sqlite.prepare(sql), params }));
      const started = performance.now();
      sqlite.exec("BEGIN");
      for (const { prepared, params } of statements) prepared.all(...params);
      sqlite.exec("COMMIT");
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const mean = times.reduce((sum, ms) => sum + ms, 0) / times.length;
    report[kind] = {
      meanMs: Math.round(mean * 1000) / 1000,
      p99Ms: Math.round(times[Math.floor(times.length * 0.99)] * 1000) / 1000,
      perSecond: Math.round(1000 / mean),
    };
  }
  return report;
}

const persist = mkdtempSync(join(tmpdir(), "capacity-"));
const mf = new Miniflare(
  convertV4MiniflareOptions({
    log: new NoOpLog(),
    modules: true,
    script: "export default { fetch() { return new Response(null); } }",
    d1Databases: { DB: "capacity" },
    resourcePersistencePath: persist,
  }),
);
try {
  const db = await mf.getD1Database("DB");
  for (const file of readdirSync(MIGRATIONS)
    .filter((name) => name.endsWith(".sql"))
    .sort()) {
    const queries = unstable_splitSqlQuery(readFileSync(new URL(file, MIGRATIONS), "utf8"));
    await db.batch(queries.map((query) => db.prepare(query)));
  }

  const statements = [];
  let written = 0;
  let tombstones = 0;
  const t0 = Date.UTC(2024, 0, 1);
  while (written < total) {
    const userId = `auth0|${hex(24)}`;
    const rows = Math.min(perUser, total - written);
    for (let start = 0; start < rows; start += ROWS_PER_STATEMENT) {
      const count = Math.min(ROWS_PER_STATEMENT, rows - start);
      const params: (string | number | null)[] = [];
      for (let i = 0; i < count; i++) {
        const gone = random() < tombstoneShare;
        if (gone) tombstones++;
        const at = t0 + Math.floor(random() * 3e10);
        // With url_key as every write since migration 0004 sets it: an unkeyed row would also sit in the index
        // of rows awaiting the backfill (migration 0008), which no row written today does.
        const guid = uuid();
        const url = feedUrl();
        params.push(userId, guid, url, at, gone ? at + 86_400_000 : null, start + i + 1, urlKey(url));
      }
      statements.push(
        db
          .prepare(
            `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, url_key) VALUES ${Array(count).fill("(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
          )
          .bind(...params),
      );
    }
    written += rows;
    if (statements.length >= 100) await db.batch(statements.splice(0));
  }
  if (statements.length > 0) await db.batch(statements.splice(0));

  const users = (await db.prepare("SELECT count(*) AS n FROM user_stats").first<{ n: number }>())?.n ?? 0;
  const urlBytes =
    (await db.prepare("SELECT avg(length(CAST(feed_url AS BLOB))) AS n FROM subscriptions").first<{ n: number }>())
      ?.n ?? 0;
  await mf.dispose();

  // D1 refuses page PRAGMAs and dbstat; the database file it wrote is plain SQLite, read here after closing it.
  const file = sqliteFiles(join(persist, "d1")).sort((a, b) => statSync(b).size - statSync(a).size)[0];
  const sqlite = new DatabaseSync(file);
  sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)"); // the rows are still in the write-ahead log
  const pragma = (name: string) => Number(Object.values(sqlite.prepare(`PRAGMA ${name}`).get() ?? {})[0]);
  const pageSize = pragma("page_size");
  const pageCount = pragma("page_count");
  const freePages = pragma("freelist_count");
  const objects = sqlite
    .prepare(
      "SELECT name, sum(pgsize) AS bytes, sum(pgsize - unused) AS used FROM dbstat GROUP BY name ORDER BY bytes DESC",
    )
    .all() as { name: string; bytes: number; used: number }[];
  const sqlTime = timeRequests(sqlite); // last: its writes must not count in the sizes above
  sqlite.close();
  const bytes = (pageCount - freePages) * pageSize;
  const per = (value: number) => Math.round((value / written) * 10) / 10;
  console.log(
    JSON.stringify(
      {
        subscriptions: written,
        tombstones,
        users,
        averageFeedUrlBytes: Math.round(urlBytes * 10) / 10,
        pageSize,
        pageCount,
        freePages,
        databaseBytes: bytes,
        bytesPerSubscription: per(bytes),
        sqlMsPerRequest: sqlTime,
        objects: objects
          .filter((object) => object.bytes >= pageSize * 4)
          .map((object) => ({
            ...object,
            bytesPerSubscription: per(object.bytes),
            fill: Math.round((object.used / object.bytes) * 100) / 100,
          })),
      },
      null,
      2,
    ),
  );
} finally {
  await mf.dispose().catch(() => {});
  rmSync(persist, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// Episode states (docs/API.md §13): what one stored state costs, in a database of its own so that
// nothing else shares its pages. 100 users of 1 000 states each (10 % tombstones), ids as random UUIDs
// (inserted in random key order, as devices name episodes), enclosure URLs of about 100 bytes (a
// tracking prefix, a host, a path) and item guids of about 40.

const EPISODE_USERS = 100;
const EPISODES_PER_USER = 1000;
const EPISODE_TOMBSTONES = 0.1;
const EPISODE_COLUMNS = 13; // bound parameters a row
const EPISODE_ROWS_PER_STATEMENT = Math.floor(100 / EPISODE_COLUMNS); // D1 allows 100 per statement
/** D1's limit per database, and the share of it planned for (as for subscriptions above). */
const DATABASE_BYTES = 1e10;
const PLANNED_SHARE = 0.7;

const mediaUrl = () =>
  `https://dts.podtrac.com/redirect.mp3/${hosts[Math.floor(random() * hosts.length)]}/${hex(16)}/${hex(10 + Math.floor(random() * 20))}.mp3`;
const itemGuid = () => `gid://art19-episode-locator/V0/${hex(10)}`;

/**
 * A local D1 database (Miniflare) through the migrations of drizzle/, filled by `fill`, then opened as the plain
 * SQLite file D1 wrote (D1 refuses page PRAGMAs and dbstat); `remove` closes it and deletes the files.
 */
async function migratedDatabase(name: string, fill: (db: D1Database) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      log: new NoOpLog(),
      modules: true,
      script: "export default { fetch() { return new Response(null); } }",
      d1Databases: { DB: name },
      resourcePersistencePath: dir,
    }),
  );
  try {
    const db = await miniflare.getD1Database("DB");
    for (const file of readdirSync(MIGRATIONS)
      .filter((migration) => migration.endsWith(".sql"))
      .sort()) {
      const queries = unstable_splitSqlQuery(readFileSync(new URL(file, MIGRATIONS), "utf8"));
      await db.batch(queries.map((query) => db.prepare(query)));
    }
    await fill(db);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    await miniflare.dispose();
  }
  const file = sqliteFiles(join(dir, "d1")).sort((a, b) => statSync(b).size - statSync(a).size)[0];
  const sqlite = new DatabaseSync(file);
  sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)"); // the rows are still in the write-ahead log
  return {
    sqlite,
    remove() {
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Inserts the episode states of one user, numbered 1.. in its episode change feed. */
function episodeStatements(
  db: D1Database,
  userId: string,
  t0: number,
): { statements: D1PreparedStatement[]; gone: number } {
  const statements: D1PreparedStatement[] = [];
  let gone = 0;
  for (let start = 0; start < EPISODES_PER_USER; start += EPISODE_ROWS_PER_STATEMENT) {
    const count = Math.min(EPISODE_ROWS_PER_STATEMENT, EPISODES_PER_USER - start);
    const params: (string | number | null)[] = [];
    for (let i = 0; i < count; i++) {
      const at = t0 + Math.floor(random() * 3e10);
      const change = start + i + 1;
      if (random() < EPISODE_TOMBSTONES) {
        gone++;
        params.push(userId, uuid(), uuid(), null, null, 0, null, 0, null, null, change, at / 1000, at);
      } else {
        const played = random() < 0.3 ? 1 : 0;
        const position = Math.floor(random() * 3600);
        params.push(
          userId,
          uuid(),
          uuid(),
          mediaUrl(),
          itemGuid(),
          position,
          1800 + position,
          played,
          at,
          at,
          change,
          at / 1000,
          null,
        );
      }
    }
    statements.push(
      db
        .prepare(
          `INSERT INTO episodes (user_id, id, feed_guid, media_url, item_guid, position, duration, played, position_changed_at, played_changed_at, change_seq, received_at, deleted_at) VALUES ${Array(
            count,
          )
            .fill(`(${Array(EPISODE_COLUMNS).fill("?").join(", ")})`)
            .join(", ")}`,
        )
        .bind(...params),
    );
  }
  return { statements, gone };
}

/** Bytes per stored episode state, per object and in all, and users per 10 GB database at 1 000 and 10 000 states. */
async function measureEpisodeStates() {
  let tombstones = 0;
  const t0 = Date.UTC(2024, 0, 1);
  const { sqlite, remove } = await migratedDatabase("capacity-episodes", async (db) => {
    for (let user = 0; user < EPISODE_USERS; user++) {
      const { statements, gone } = episodeStatements(db, `auth0|${hex(24)}`, t0);
      tombstones += gone;
      for (let i = 0; i < statements.length; i += 100) await db.batch(statements.slice(i, i + 100));
    }
  });
  try {
    const states = EPISODE_USERS * EPISODES_PER_USER;
    const pragma = (name: string) => Number(Object.values(sqlite.prepare(`PRAGMA ${name}`).get() ?? {})[0]);
    const pageSize = pragma("page_size");
    const databaseBytes = (pragma("page_count") - pragma("freelist_count")) * pageSize;
    const averages = sqlite
      .prepare(
        "SELECT avg(length(CAST(media_url AS BLOB))) AS mediaUrl, avg(length(CAST(item_guid AS BLOB))) AS itemGuid FROM episodes",
      )
      .get() as { mediaUrl: number; itemGuid: number };
    const objects = sqlite
      .prepare(
        "SELECT name, sum(pgsize) AS bytes, sum(pgsize - unused) AS used FROM dbstat GROUP BY name ORDER BY bytes DESC",
      )
      .all() as { name: string; bytes: number; used: number }[];
    const perState = databaseBytes / states;
    const usersPer = (bytes: number, perUser: number) => Math.floor(bytes / (perState * perUser));
    console.log(
      JSON.stringify(
        {
          episodeStates: states,
          episodeTombstones: tombstones,
          users: EPISODE_USERS,
          averageMediaUrlBytes: Math.round(averages.mediaUrl * 10) / 10,
          averageItemGuidBytes: Math.round(averages.itemGuid * 10) / 10,
          databaseBytes,
          bytesPerEpisodeState: Math.round(perState * 10) / 10,
          usersPerDatabase: Object.fromEntries(
            [1000, 10000].map((perUser) => [
              `${perUser} states each`,
              { planned: usersPer(DATABASE_BYTES * PLANNED_SHARE, perUser), full: usersPer(DATABASE_BYTES, perUser) },
            ]),
          ),
          objects: objects
            .filter((object) => object.bytes >= pageSize * 4)
            .map((object) => ({
              ...object,
              bytesPerEpisodeState: Math.round((object.bytes / states) * 10) / 10,
              fill: Math.round((object.used / object.bytes) * 100) / 100,
            })),
        },
        null,
        2,
      ),
    );
  } finally {
    remove();
  }
}

await measureEpisodeStates();
