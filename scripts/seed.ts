// Demo data for local development: a dozen real podcast feeds for the dev user ("dev-user", the user of
// `npm run dev`'s sample token), written into the LOCAL D1 database that `wrangler dev` uses (the user's shard
// with --env: the database the environment's SHARD_MAP gives the user's bucket).
//
//   npm run db:seed                      seed "dev-user"
//   npm run db:seed -- <userId>          seed another user
//   npm run db:seed -- --env shards      seed the user's shard of [env.shards] (npm run dev:shards)
//   npm run db:seed -- --persist-to DIR  seed the local state kept in DIR (as `wrangler dev --persist-to DIR`)
//
// The rows are written by the API's own subscription writer (src/db/subscriptions.ts: the adds and the remove of
// a bulk request, each at its feed's time), so their change numbers, counters, keys and URL pieces are what the
// API would have written. Idempotent: the database's migrations are applied first (a no-op when up to date), and
// a feed the user has a row for (live or unsubscribed) is left as it is, so a second run changes nothing. Ids are
// podcast:guid values (src/podcast-guid.ts), as a podcast app would send them.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { WriteBatch } from "../src/db/batch";
import { DatabaseError } from "../src/db/database";
import { subscriptions as s } from "../src/db/schema";
import { statement } from "../src/db/statements";
import { subscriptionWriter } from "../src/db/subscriptions";
import { podcastGuid } from "../src/podcast-guid";
import { DEFAULT_CONFIG, localStateDir, type Target, targetFlags, userShardOf, wrangler } from "./shards/wrangler";
import { closeLocalDatabases, wranglerD1 } from "./shards/wrangler-d1";

// [feed URL, subscribed at (UTC), unsubscribed at (UTC) or null]
const FEEDS: [string, string, string | null][] = [
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

/** The feeds the user has a row for, live or unsubscribed: the seed leaves those as they are. */
const storedGuidsStatement = statement(
  sql`SELECT ${s.guid} AS guid FROM ${s} WHERE ${s.userId} = ${sql.placeholder("userId")}`,
);

const USAGE = "usage: npm run db:seed -- [userId] [--env NAME] [--persist-to DIR]";

function fail(message: string, status: number): never {
  console.error(message);
  process.exit(status);
}

const options = {
  env: { type: "string" },
  "persist-to": { type: "string" },
  help: { type: "boolean", default: false },
} as const;

function parse() {
  try {
    return parseArgs({ options, allowPositionals: true });
  } catch (err) {
    return fail(`${(err as Error).message}\n${USAGE}`, 2);
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parse();
  if (values.help) {
    console.log(
      `${USAGE}\nDemo subscriptions for dev-user (or <userId>) in the local D1 database of \`wrangler dev\`.`,
    );
    return;
  }
  const user = positionals[0] ?? "dev-user";
  if (positionals.length > 1 || user.length === 0 || user.length > 255) fail(USAGE, 2);
  const persistTo = localStateDir(values["persist-to"]);
  const target: Target = {
    config: DEFAULT_CONFIG,
    env: values.env,
    remote: false,
    persistTo: persistTo && resolve(persistTo),
  };
  const { binding } = await userShardOf(target, user);
  wrangler(["d1", "migrations", "apply", binding, ...targetFlags(target)], { quiet: true });
  const db = wranglerD1(target, binding);
  const { results } = await storedGuidsStatement.bind(db, { userId: user }).all<{ guid: string }>();
  const stored = new Set(results.map((row) => row.guid));
  // One batch (one transaction, as a request's writes are), each feed written at its own time.
  const batch = new WriteBatch();
  let written = 0;
  for (const [feedUrl, subscribedAt, unsubscribedAt] of FEEDS) {
    const guid = await podcastGuid(feedUrl);
    if (stored.has(guid)) continue;
    const writerAt = (time: string) => subscriptionWriter({ batch, db, user, at: Date.parse(time) });
    writerAt(subscribedAt)({ op: "add", guid, feedUrl });
    if (unsubscribedAt !== null) writerAt(unsubscribedAt)({ op: "remove", guid });
    written++;
  }
  await batch.run(db);
  const active = FEEDS.filter(([, , unsubscribedAt]) => unsubscribedAt === null).length;
  console.log(
    `Demo data for "${user}" is in the local D1 database ${binding}: ${active} subscriptions and ${FEEDS.length - active} unsubscribed ` +
      `(${written} new; feeds the user already had a row for were left as they were).`,
  );
  console.log(
    `List them: npm run dev${values.env ? ` -- --env ${values.env}` : ""}, then use the printed token (or: npm run token -- ${user}).`,
  );
}

try {
  await main();
  await closeLocalDatabases();
} catch (err) {
  const cause = err instanceof DatabaseError ? err.cause : err;
  fail(`db:seed: ${cause instanceof Error ? cause.message : String(cause)}`, 1);
}
