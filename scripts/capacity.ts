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
const ROWS_PER_STATEMENT = 16; // 6 bound parameters a row; D1 allows 100 per statement

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
      const values = { userId: user, guid: uuid(), feedUrl: feedUrl(), now: Date.now() };
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
        params.push(userId, uuid(), feedUrl(), at, gone ? at + 86_400_000 : null, start + i + 1);
      }
      statements.push(
        db
          .prepare(
            `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq) VALUES ${Array(count).fill("(?, ?, ?, ?, ?, ?)").join(", ")}`,
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
