import { sql } from "drizzle-orm";
import { episodes as e, subscriptions as s, userStats as stats } from "./schema";

/**
 * The next change number of the subscription row being written. Correlated with the row on purpose: SQLite
 * evaluates an uncorrelated subquery once per statement, so every row of an UPDATE that changes several (the gpodder
 * API's removes by URL, the feed round's learned moves, rows of many users) would get the same number; this one is
 * read again for each row, after the trigger recorded the previous row's.
 */
export const rowNextChange = sql`(SELECT coalesce(max(${stats.version}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${s.userId})`;

/** The user's next episode change number for the episode row being written, read again for each row (as above). */
export const rowNextEpisodeChange = sql`(SELECT coalesce(max(${stats.episodeVersion}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${e.userId})`;
