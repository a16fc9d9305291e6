#!/usr/bin/env node
// Demo data for local development: a dozen real podcast feeds for the dev user ("dev-user", the user of
// `npm run dev`'s sample token), written into the LOCAL D1 database that `wrangler dev` uses.
//
//   npm run db:seed                      seed "dev-user"
//   npm run db:seed -- <userId>          seed another user
//   npm run db:seed -- --persist-to DIR  seed the local database kept in DIR (as `wrangler dev --persist-to DIR`)
//
// Idempotent: local migrations are applied first (a no-op when up to date), and every row is inserted with
// ON CONFLICT DO NOTHING, so a second run changes nothing, not even rows the user has since unsubscribed.
// Ids are podcast:guid values (UUIDv5 of the feed URL without scheme and trailing slash, in the
// Podcasting 2.0 namespace), as a podcast app would send them.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const PODCAST_GUID_NAMESPACE = "ead4c236-bf58-58c6-a2c6-a6b28d128cb6";

// [feed URL, subscribed at (UTC), unsubscribed at (UTC) or null]
const FEEDS = [
  ["https://feeds.npr.org/510289/podcast.xml", "2025-01-14T08:12:31.000Z", null],
  ["https://feeds.simplecast.com/54nAGcIl", "2025-02-02T19:45:10.250Z", null],
  ["https://feeds.99percentinvisible.org/99percentinvisible", "2025-03-21T07:03:44.812Z", null],
  ["https://changelog.com/podcast/feed", "2025-04-09T12:30:00.000Z", null],
  ["https://feed.syntax.fm/rss", "2025-05-17T21:14:05.377Z", null],
  ["https://feeds.twit.tv/twit.xml", "2025-06-01T06:59:59.999Z", null],
  ["https://www.thisamericanlife.org/podcast/rss.xml", "2025-07-23T16:20:18.040Z", null],
  ["https://feeds.feedburner.com/dancarlin/history?format=xml", "2025-08-30T10:00:00.500Z", null],
  ["https://feeds.npr.org/510325/podcast.xml", "2025-09-12T13:37:13.137Z", null],
  ["https://softwareengineeringdaily.com/feed/podcast/", "2025-10-05T09:41:27.600Z", null],
  ["https://rss.art19.com/the-talk-show", "2025-11-11T11:11:11.111Z", null],
  // An unsubscribed feed: a tombstone, never listed, shows how unsubscribing keeps the row.
  ["https://feeds.megaphone.fm/replyall", "2024-12-01T18:00:00.000Z", "2025-06-15T18:30:00.000Z"],
];

/** RFC 9562 UUIDv5 (SHA-1, name-based). */
export function uuidV5(name, namespace) {
  const ns = Buffer.from(namespace.replaceAll("-", ""), "hex");
  const hash = createHash("sha1").update(ns).update(name, "utf8").digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** podcast:guid of a feed: UUIDv5 of the URL without its scheme and trailing slashes. */
export function podcastGuid(feedUrl) {
  return uuidV5(feedUrl.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").replace(/\/+$/, ""), PODCAST_GUID_NAMESPACE);
}

const sqlText = (value) => `'${String(value).replaceAll("'", "''")}'`;

export function seedSql(userId) {
  const rows = FEEDS.map(([feedUrl, subscribedAt, unsubscribedAt]) => {
    const unsubscribed = unsubscribedAt === null ? "NULL" : Date.parse(unsubscribedAt);
    return `(${sqlText(userId)}, ${sqlText(podcastGuid(feedUrl))}, ${sqlText(feedUrl)}, ${Date.parse(subscribedAt)}, ${unsubscribed})`;
  });
  // One statement per row: the user_stats triggers count each insert that happens, none that conflicts.
  return rows
    .map(
      (row) =>
        `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at) VALUES ${row}\n  ON CONFLICT (user_id, guid) DO NOTHING;`,
    )
    .join("\n");
}

/** Runs wrangler; with `brief`, its stdout stops before the per-statement JSON dump of `d1 execute`. */
function wrangler(args, { brief = false } = {}) {
  const run = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    stdio: ["ignore", brief ? "pipe" : "inherit", "inherit"],
    encoding: "utf8",
  });
  if (brief) {
    const lines = run.stdout.split("\n");
    const json = lines.indexOf("[");
    process.stdout.write(`${(run.status === 0 && json >= 0 ? lines.slice(0, json) : lines).join("\n")}\n`);
  }
  if (run.status !== 0) {
    console.error(`wrangler ${args.slice(0, 3).join(" ")} failed (exit ${run.status ?? run.signal}).`);
    process.exit(run.status || 1);
  }
}

function main() {
  const args = process.argv.slice(2);
  const persistIndex = args.indexOf("--persist-to");
  const persist = persistIndex >= 0 ? ["--persist-to", args.splice(persistIndex, 2)[1]] : [];
  const userId = args[0] ?? "dev-user";
  if (
    args.length > 1 ||
    userId.length === 0 ||
    userId.length > 255 ||
    (persist[1] === undefined && persistIndex >= 0)
  ) {
    console.error("usage: npm run db:seed -- [userId] [--persist-to DIR]");
    process.exit(2);
  }
  wrangler(["d1", "migrations", "apply", "DB", "--local", ...persist]);
  const dir = mkdtempSync(join(tmpdir(), "seed-"));
  try {
    const file = join(dir, "seed.sql");
    writeFileSync(file, `${seedSql(userId)}\n`);
    wrangler(["d1", "execute", "DB", "--local", ...persist, "--file", file, "--yes"], { brief: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const active = FEEDS.filter(([, , unsubscribedAt]) => unsubscribedAt === null).length;
  console.log(
    `Demo data for "${userId}" is in the local D1 database: ${active} subscriptions and ${FEEDS.length - active} unsubscribed (rows that already existed were left as they were).`,
  );
  console.log(`List them: npm run dev, then use the printed token (or: npm run token -- ${userId}).`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
