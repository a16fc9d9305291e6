// What `npm run admin -- usage` reads of one database, in one batch: its users, its rows per table, the URL text
// they store, and the largest accounts. Subscription and episode rows are counted from user_stats (kept in step by
// triggers): counting those tables would walk every row of the database; the other tables hold a few rows per
// user (or, for feeds and their learned moves, one per feed URL) and are counted. user_stats itself is read whole
// (one row per user).
import { sql } from "drizzle-orm";
import {
  accountSessions,
  appPasswords,
  devices,
  episodeRehomes,
  feedAliases,
  feeds,
  gpodderSessions,
  userStats as stats,
  subscriptionRenames,
  urlPieces,
} from "../../src/db/schema";
import { statement } from "../../src/db/statements";

const limit = sql.placeholder("limit");

const totalsStatement = statement(sql`
  SELECT count(*) AS users,
    coalesce(sum(CASE WHEN ${stats.storedCount} > 0 OR ${stats.episodeCount} > 0 THEN 1 ELSE 0 END), 0) AS usersWithData,
    coalesce(sum(${stats.activeCount}), 0) AS activeSubscriptions,
    coalesce(sum(${stats.storedCount}), 0) AS subscriptions,
    coalesce(sum(${stats.episodeCount}), 0) AS episodes,
    coalesce(sum(${stats.urlBytes}), 0) AS urlBytes,
    (SELECT count(*) FROM ${urlPieces}) AS urlPieces,
    (SELECT count(*) FROM ${appPasswords}) AS appPasswords,
    (SELECT count(*) FROM ${gpodderSessions}) AS gpodderSessions,
    (SELECT count(*) FROM ${accountSessions}) AS accountSessions,
    (SELECT count(*) FROM ${devices}) AS devices,
    (SELECT count(*) FROM ${subscriptionRenames}) AS subscriptionRenames,
    (SELECT count(*) FROM ${episodeRehomes}) AS episodeRehomes,
    (SELECT count(*) FROM ${feeds}) AS feeds,
    (SELECT count(*) FROM ${feedAliases}) AS feedAliases
  FROM ${stats}`);

const largest = (order: ReturnType<typeof sql>) =>
  statement(sql`
    SELECT ${stats.userId} AS userId, ${stats.activeCount} AS activeSubscriptions,
      ${stats.storedCount} AS storedSubscriptions, ${stats.episodeCount} AS episodes, ${stats.urlBytes} AS urlBytes
    FROM ${stats} WHERE ${stats.storedCount} > 0 OR ${stats.episodeCount} > 0
    ORDER BY ${order} DESC, ${stats.userId} LIMIT ${limit}`);

const largestByBytesStatement = largest(sql`${stats.urlBytes}`);
const largestByRowsStatement = largest(sql`${stats.storedCount} + ${stats.episodeCount}`);

export interface DatabaseTotals {
  users: number;
  usersWithData: number;
  activeSubscriptions: number;
  subscriptions: number;
  episodes: number;
  urlBytes: number;
  urlPieces: number;
  appPasswords: number;
  gpodderSessions: number;
  accountSessions: number;
  devices: number;
  /** The users' renames kept as aliases (docs/API.md §18). */
  subscriptionRenames: number;
  /** Episode states a merge re-homed, waiting for a feed round to give them the kept podcast's ids. */
  episodeRehomes: number;
  /** Feed URLs the service knows (fetched or pending), and the learned moves (one alias row per URL that moved). */
  feeds: number;
  feedAliases: number;
}

export interface LargeAccount {
  userId: string;
  activeSubscriptions: number;
  storedSubscriptions: number;
  episodes: number;
  urlBytes: number;
}

export interface DatabaseUsage {
  totals: DatabaseTotals;
  /** The database's size in bytes as D1 reports it (local D1 too, since the tools open it in-process). */
  sizeBytes: number | undefined;
  largestByBytes: LargeAccount[];
  largestByRows: LargeAccount[];
}

/** Reads one database's usage in one D1 call; `top`: how many of the largest accounts to list. */
export async function readUsage(db: D1Database, top: number): Promise<DatabaseUsage> {
  const [totals, byBytes, byRows] = await db.batch([
    totalsStatement.bind(db, {}),
    largestByBytesStatement.bind(db, { limit: top }),
    largestByRowsStatement.bind(db, { limit: top }),
  ]);
  const size = (totals.meta as { size_after?: unknown }).size_after;
  return {
    totals: totals.results[0] as unknown as DatabaseTotals,
    sizeBytes: typeof size === "number" ? size : undefined,
    largestByBytes: byBytes.results as unknown as LargeAccount[],
    largestByRows: byRows.results as unknown as LargeAccount[],
  };
}
