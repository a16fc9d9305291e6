import { sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { MAX_APP_PASSWORDS } from "./app-passwords";
import { call, type Database } from "./database";
import { MAX_DEVICES } from "./devices";
import { MAX_STORED_EPISODES } from "./episodes";
import {
  accountSessions,
  appPasswords,
  devices,
  episodeRehomes,
  episodes,
  gpodderSessions,
  userStats as stats,
  subscriptions,
} from "./schema";
import { statement } from "./statements";
import { MAX_URL_BYTES } from "./storage";
import { MAX_STORED_SUBSCRIPTIONS } from "./subscriptions";

const userId = sql.placeholder("userId");

/**
 * Erasing an account (docs/API.md §15): every table holding the user's content, then the stats row reduced to
 * bare counters. Each user table is listed here; scripts/shards/move.ts lists the same ones to move users.
 */
const eraseStatements = [
  ...[subscriptions, episodes, episodeRehomes, appPasswords, gpodderSessions, accountSessions, devices].map((table) =>
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

/** What the user stores against what may be stored: what an account page shows (docs/API.md §12, §13, §15). */
export interface AccountUsage {
  /** `stored` counts tombstones too (the quota does); only `active` ones can fill it: tombstones are recycled. */
  subscriptions: { active: number; stored: number; max: number };
  episodes: { live: number; stored: number; max: number };
  /** The UTF-8 bytes of URL text stored, subscription tombstones' included (purged to make room). */
  urlBytes: { stored: number; max: number };
  devices: { stored: number; max: number };
  appPasswords: { stored: number; max: number };
  /**
   * What a write that adds is refused for now: live rows alone fill the quota (`subscriptions`, `episodes`), or
   * the URL text stored reaches the budget (`storage`: tombstones' bytes would still be recycled first).
   */
  full: { subscriptions: boolean; episodes: boolean; storage: boolean };
}

const stat = (column: SQLiteColumn) =>
  sql`coalesce((SELECT ${column} FROM ${stats} WHERE ${stats.userId} = ${userId}), 0)`;

/** The counts, from the stats row and bounded counts (100 devices, 50 app passwords, the episode tombstones). */
const usageStatement = statement(sql`
  SELECT ${stat(stats.activeCount)} AS activeSubscriptions, ${stat(stats.storedCount)} AS storedSubscriptions,
    ${stat(stats.episodeCount)} AS storedEpisodes,
    (SELECT count(*) FROM ${episodes} INDEXED BY episodes_tombstones
      WHERE ${episodes.userId} = ${userId} AND ${episodes.deletedAt} IS NOT NULL) AS episodeTombstones,
    ${stat(stats.urlBytes)} AS urlBytes,
    (SELECT count(*) FROM ${devices} WHERE ${devices.userId} = ${userId}) AS devices,
    (SELECT count(*) FROM ${appPasswords} WHERE ${appPasswords.userId} = ${userId}) AS appPasswords`);

/** The user's counts against the quotas and the budget, in one statement (an account page's "the account is full"). */
export async function accountUsage(db: Database, user: string): Promise<AccountUsage> {
  const row = (await call(() => usageStatement.bind(db, { userId: user }).first())) as Record<string, number>;
  const usage = {
    subscriptions: {
      active: row.activeSubscriptions,
      stored: row.storedSubscriptions,
      max: MAX_STORED_SUBSCRIPTIONS,
    },
    episodes: {
      live: row.storedEpisodes - row.episodeTombstones,
      stored: row.storedEpisodes,
      max: MAX_STORED_EPISODES,
    },
    urlBytes: { stored: row.urlBytes, max: MAX_URL_BYTES },
    devices: { stored: row.devices, max: MAX_DEVICES },
    appPasswords: { stored: row.appPasswords, max: MAX_APP_PASSWORDS },
  };
  return {
    ...usage,
    full: {
      subscriptions: usage.subscriptions.active >= usage.subscriptions.max,
      episodes: usage.episodes.live >= usage.episodes.max,
      storage: usage.urlBytes.stored >= usage.urlBytes.max,
    },
  };
}

export const accountStatements = {
  ...Object.fromEntries(eraseStatements.map((erase, index) => [`erase${index}`, erase])),
  usage: usageStatement,
};
