import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
import {
  accountSessions,
  appPasswords,
  devices,
  episodes,
  gpodderSessions,
  userStats as stats,
  subscriptions,
} from "./schema";
import { statement } from "./statements";

const userId = sql.placeholder("userId");

/**
 * Erasing an account (docs/API.md §15): every table holding the user's content, then the stats row reduced to
 * bare counters. Each user table is listed here; scripts/shards/move.ts lists the same ones to move users.
 */
const eraseStatements = [
  ...[subscriptions, episodes, appPasswords, gpodderSessions, accountSessions, devices].map((table) =>
    statement(sql`DELETE FROM ${table} WHERE ${table.userId} = ${userId}`),
  ),
  // The delete triggers brought the counts and URL bytes to 0. The change numbers move on and the horizons
  // follow them: a device holding a token from before gets 410 (never an empty page it would read as "nothing
  // changed"), its ETags stop matching, and `filter[since]=0` answers the empty feeds.
  statement(sql`
    UPDATE ${stats} SET version = version + 1, subscription_horizon = version + 1,
      episode_version = episode_version + 1, episode_horizon = episode_version + 1
    WHERE ${stats.userId} = ${userId}`),
];

/** Erases everything stored for the user, in one batch (one round trip, one transaction); answers the rows deleted. */
export async function eraseAccount(db: Database, user: string): Promise<number> {
  const results = await call(() => db.batch(eraseStatements.map((erase) => erase.bind(db, { userId: user }))));
  return results.slice(0, -1).reduce((rows, result) => rows + (result.meta?.changes ?? 0), 0);
}

export const accountStatements = Object.fromEntries(eraseStatements.map((erase, index) => [`erase${index}`, erase]));
