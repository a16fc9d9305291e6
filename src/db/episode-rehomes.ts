import { sql } from "drizzle-orm";
import { uuidV5Sync } from "../podcast-guid";
import { rowNextEpisodeChange } from "./change-numbers";
import type { Database } from "./database";
import { episodes as e, episodeRehomes as q, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { ITEM_GUID, MEDIA_URL, storedUrl } from "./url-pieces";

/**
 * The id a merged-away state takes in the kept podcast (docs/API.md §18: "episode actions under any alias reach the
 * same episode states"; docs/decisions.md, "A re-homed state takes the kept podcast's id"). A merge that finds no
 * state of the kept podcast for an episode re-homes the merged-away state: its feed becomes the kept guid, but its id
 * is still UUIDv5 in the namespace of the feed it came from, while every app (and the gpodder.net and Nextcloud
 * uploads, src/gpodder/episode-actions.ts) names that episode by UUIDv5 in the kept guid's namespace. So the feed
 * round gives it that id: the state is written under it (merged by section 13's rules into a state already there,
 * as a merge merges), and the old id is forgotten as a DELETE forgets (a tombstone, so a JSON:API client that held
 * it learns it is gone). SQLite has no SHA-1, so the ids are computed here, between the round's two D1 calls: the
 * re-homed states are read at the end of its first batch (`dueFeeds`) and renamed in its second (`recordFeeds`);
 * no D1 call of their own.
 */

/**
 * Re-homed states renamed per round and database, at most: each costs the isolate a SHA-1 (a few µs) and its share
 * of three statements; a merge of a feed with many subscribers re-homes more than this, and the rest wait for the
 * next runs (a play under the kept podcast meanwhile makes its own state, which the rename then merges into).
 */
export const REHOMES_PER_ROUND = 200;

/** A re-homed state as the round reads it: its feed and naming texts, all null when it is no longer live. */
export interface RehomedState {
  userId: string;
  id: string;
  feedGuid: string | null;
  itemGuid: string | null;
  mediaUrl: string | null;
}

/** The queued states, live ones with their feed, item guid and media URL (the whole stored texts). */
const rehomedStatement = statement(sql`
  SELECT queue.user_id AS userId, queue.id AS id, x.feed_guid AS feedGuid, ${storedUrl(ITEM_GUID, "x")} AS itemGuid,
    ${storedUrl(MEDIA_URL, "x")} AS mediaUrl
  FROM ${q} AS queue LEFT JOIN ${e} AS x ON x.user_id = queue.user_id AND x.id = queue.id AND x.deleted_at IS NULL
  LIMIT ${sql.placeholder("limit")}`);

/** The statement that reads up to `limit` re-homed states (`rehomedStates` reads its result). */
export function rehomedStatesStatement(db: Database, limit = REHOMES_PER_ROUND): D1PreparedStatement {
  return rehomedStatement.bind(db, { limit });
}

/** What `rehomedStatesStatement` read. */
export function rehomedStates(result: D1Result): RehomedState[] {
  return result.results as unknown as RehomedState[];
}

/** The renames as rows `(user_id, x, y, f)`: the state `x` of feed `f` goes to id `y`. */
const renamedSql = sql`renamed(u, x, y, f) AS MATERIALIZED (
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(${sql.placeholder("renamed")}))`;

const tombstone = sql`${e.deletedAt} IS NOT NULL`;
const later = (column: string) => sql.raw(`excluded.${column} > coalesce(episodes.${column}, -1)`);

/**
 * Each state written under its new id: created there with its values and texts, or written afresh over a tombstone
 * (a forgotten state starts anew, §13), or merged into the live state of the same feed already there by section 13's
 * rules (`position` and `played` each from the later change on a device, strictly; a `duration` it lacks; its media
 * URL and item guid stay), as the merges do (db/feed-aliases.ts). The change numbers are the user's next ones in
 * order, computed before the first row is written (the rows are read from the table written, so SQLite reads them all
 * first); a merge that changes nothing leaves its number unused.
 */
const writeRenamedStatement = statement(sql`
  WITH ${renamedSql}
  INSERT INTO ${e} (user_id, id, feed_guid, media_url, item_guid, position, duration, played, position_changed_at,
    played_changed_at, change_seq, received_at, deleted_at)
  SELECT x.user_id, renamed.y, x.feed_guid, ${storedUrl(MEDIA_URL, "x")}, ${storedUrl(ITEM_GUID, "x")}, x.position,
    x.duration, x.played, x.position_changed_at, x.played_changed_at,
    coalesce((SELECT ${stats.episodeVersion} FROM ${stats} WHERE ${stats.userId} = x.user_id), 0)
      + row_number() OVER (PARTITION BY x.user_id ORDER BY renamed.y), unixepoch(), NULL
  FROM renamed CROSS JOIN ${e} AS x ON x.user_id = renamed.u AND x.id = renamed.x
  WHERE x.deleted_at IS NULL AND x.feed_guid = renamed.f
  ON CONFLICT (user_id, id) DO UPDATE SET
    feed_guid = excluded.feed_guid,
    media_url = CASE WHEN ${tombstone} THEN excluded.media_url ELSE ${e.mediaUrl} END,
    item_guid = CASE WHEN ${tombstone} THEN excluded.item_guid ELSE ${e.itemGuid} END,
    position = CASE WHEN ${tombstone} OR ${later("position_changed_at")} THEN excluded.position ELSE ${e.position} END,
    position_changed_at = CASE WHEN ${tombstone} OR ${later("position_changed_at")} THEN excluded.position_changed_at
      ELSE ${e.positionChangedAt} END,
    played = CASE WHEN ${tombstone} OR ${later("played_changed_at")} THEN excluded.played ELSE ${e.played} END,
    played_changed_at = CASE WHEN ${tombstone} OR ${later("played_changed_at")} THEN excluded.played_changed_at
      ELSE ${e.playedChangedAt} END,
    duration = CASE WHEN ${tombstone} THEN excluded.duration ELSE coalesce(${e.duration}, excluded.duration) END,
    change_seq = excluded.change_seq, received_at = unixepoch(), deleted_at = NULL
  WHERE ${tombstone} OR (${e.feedGuid} = excluded.feed_guid AND (${later("position_changed_at")}
    OR ${later("played_changed_at")} OR (${e.duration} IS NULL AND excluded.duration IS NOT NULL)))`);

/**
 * Each old id whose state now lives under its new one (a live state of the same feed there) forgotten as a DELETE
 * forgets: a tombstone without text, values or times, taking the user's next change number. One whose new id holds
 * another feed's state (an app chose that id for something else) stays as it is, re-homed.
 */
const forgetRenamedStatement = statement(sql`
  WITH ${renamedSql}
  UPDATE ${e} SET media_url = NULL, item_guid = NULL, position = 0, duration = NULL, played = 0,
    position_changed_at = NULL, played_changed_at = NULL, deleted_at = ${sql.placeholder("now")},
    change_seq = ${rowNextEpisodeChange}, received_at = unixepoch()
  WHERE (${e.userId}, ${e.id}, ${e.feedGuid}) IN (
      SELECT renamed.u, renamed.x, renamed.f FROM renamed CROSS JOIN ${e} AS y ON y.user_id = renamed.u AND y.id = renamed.y
      WHERE y.deleted_at IS NULL AND y.feed_guid = renamed.f)
    AND ${e.deletedAt} IS NULL`);

/** The states read, renamed or not (no longer live, or already under their id), leave the queue. */
const dequeueStatement = statement(sql`
  DELETE FROM ${q} WHERE (${q.userId}, ${q.id}) IN (SELECT value ->> 0, value ->> 1 FROM json_each(${sql.placeholder("read")}))`);

/**
 * The statements that give the states read their ids in the kept podcast's namespace (of the item guid, else of the
 * media URL: as an upload names the episode), in this order in one batch; none when nothing was read. A state whose
 * id is already that one only leaves the queue, and so does one whose new id is another read state's old one (two
 * ids would trade places: only a SHA-1 collision makes one).
 */
export function renameRehomedStatements(
  db: Database,
  states: readonly RehomedState[],
  at: number,
): D1PreparedStatement[] {
  if (states.length === 0) return [];
  const old = new Set(states.map((state) => `${state.userId} ${state.id}`));
  const renamed = states.flatMap(({ userId, id, feedGuid, itemGuid, mediaUrl }) => {
    if (feedGuid === null || mediaUrl === null) return [];
    const named = uuidV5Sync(feedGuid, itemGuid ?? mediaUrl);
    return named === id || old.has(`${userId} ${named}`) ? [] : [[userId, id, named, feedGuid]];
  });
  const read = JSON.stringify(states.map((state) => [state.userId, state.id]));
  const sent = JSON.stringify(renamed);
  const writes =
    renamed.length === 0
      ? []
      : [
          writeRenamedStatement.bind(db, { renamed: sent }),
          forgetRenamedStatement.bind(db, { renamed: sent, now: at }),
        ];
  return [...writes, dequeueStatement.bind(db, { read })];
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const allStatements: Record<string, Statement> = {
  rehomed: rehomedStatement,
  writeRenamed: writeRenamedStatement,
  forgetRenamed: forgetRenamedStatement,
  dequeue: dequeueStatement,
};
