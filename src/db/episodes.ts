import { type SQL, sql } from "drizzle-orm";
import type { Row } from "./batch";
import { changeFeedReader } from "./change-feed";
import { call, type Database } from "./database";
import { episodes as e, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import type { WriteContext } from "./subscriptions";

/** Stored episode states per user, tombstones included (docs/API.md §13). */
export const MAX_STORED_EPISODES = 50_000;

/** A live episode state as stored. Times are milliseconds since the epoch (the device's, for the two `...ChangedAt`). */
export interface StoredEpisode {
  id: string;
  feedGuid: string;
  mediaUrl: string;
  itemGuid: string | null;
  position: number;
  duration: number | null;
  played: boolean;
  positionChangedAt: number | null;
  playedChangedAt: number | null;
}

/** A row of the episode change feed: a live state, or a tombstone (no mediaUrl), with its change number. */
export type ChangedEpisode =
  | (StoredEpisode & { deletedAt: null; changeSeq: number })
  | { id: string; feedGuid: string; deletedAt: number; changeSeq: number };

/**
 * What a write says about an episode: the fields it sends (absent ones are kept). `changedAt` is when the
 * change happened on the device (already truncated and clamped), required with `position` or `played`.
 */
export interface EpisodeWrite {
  id: string;
  /** Required to create; when given on an update it must be the stored one. */
  feedGuid?: string;
  mediaUrl?: string;
  itemGuid?: string | null;
  position?: number;
  duration?: number | null;
  played?: boolean;
  changedAt?: number;
}

export type EpisodeOperation =
  | ({ op: "add"; feedGuid: string; mediaUrl: string } & EpisodeWrite)
  | ({ op: "update" } & EpisodeWrite)
  | { op: "remove"; id: string };

export type EpisodeWriteResult =
  | { kind: "created"; episode: StoredEpisode }
  | { kind: "merged"; episode: StoredEpisode }
  | { kind: "feed-mismatch"; feedGuid: string }
  | { kind: "limit" }
  | { kind: "not-found" }
  | { kind: "removed" };

const userId = sql.placeholder("userId");
const id = sql.placeholder("id");
const feedGuid = sql.placeholder("feedGuid");
const mediaUrl = sql.placeholder("mediaUrl");
const itemGuid = sql.placeholder("itemGuid");
const itemGuidSent = sql.placeholder("itemGuidSent");
const position = sql.placeholder("position");
const duration = sql.placeholder("duration");
const durationSent = sql.placeholder("durationSent");
const played = sql.placeholder("played");
const changedAt = sql.placeholder("changedAt");

/** The user's next episode change number (its own sequence), read inside the writing statement. */
const nextChange = sql`(SELECT coalesce(max(${stats.episodeVersion}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${userId})`;
const isThisEpisode = sql`${e.userId} = ${userId} AND ${e.id} = ${id}`;

/** The stored row packed as one JSON array, in the order `unpackRow` reads it. */
const packed = sql`json_array(${e.id}, ${e.feedGuid}, ${e.mediaUrl}, ${e.itemGuid}, ${e.position}, ${e.duration},
  ${e.played}, ${e.positionChangedAt}, ${e.playedChangedAt}, ${e.deletedAt}, ${e.changeSeq})`;

type PackedRow = [
  string,
  string,
  string | null,
  string | null,
  number,
  number | null,
  number,
  number | null,
  number | null,
  number | null,
  number,
];

function unpackRow(row: PackedRow): ChangedEpisode {
  const [id, feedGuid, mediaUrl, itemGuid, position, duration, played, positionChangedAt, playedChangedAt] = row;
  const [deletedAt, changeSeq] = [row[9], row[10]];
  if (deletedAt !== null) return { id, feedGuid, deletedAt, changeSeq };
  return {
    id,
    feedGuid,
    mediaUrl: mediaUrl as string,
    itemGuid,
    position,
    duration,
    played: played === 1,
    positionChangedAt,
    playedChangedAt,
    deletedAt: null,
    changeSeq,
  };
}

/** A live state from a changed row (the change number and `deletedAt` left out). */
function toStored(row: ChangedEpisode & { deletedAt: null }): StoredEpisode {
  const { deletedAt: _deleted, changeSeq: _change, ...episode } = row;
  return episode;
}

// Merge rules (docs/API.md §13): `position` and `played` are replaced only by a change that happened strictly
// later on its device than the stored one (last writer wins, per field); equal or earlier leaves the field,
// so a retried write changes nothing. `mediaUrl`, `itemGuid` and `duration` are facts about the episode:
// when sent, they replace the stored ones.
const positionApplies = sql`(${position} IS NOT NULL AND (${e.positionChangedAt} IS NULL OR ${e.positionChangedAt} < ${changedAt}))`;
const playedApplies = sql`(${played} IS NOT NULL AND (${e.playedChangedAt} IS NULL OR ${e.playedChangedAt} < ${changedAt}))`;
const anyApplies = sql`(${positionApplies} OR ${playedApplies}
  OR (${mediaUrl} IS NOT NULL AND ${e.mediaUrl} IS NOT ${mediaUrl})
  OR (${itemGuidSent} AND ${e.itemGuid} IS NOT ${itemGuid})
  OR (${durationSent} AND ${e.duration} IS NOT ${duration}))`;

/**
 * The columns a write sets. `fresh`: the stored row is a tombstone being written again, which starts a fresh
 * state (the forgotten values and times no longer count); otherwise the merge rules above.
 */
function writtenColumns(fresh: SQL): SQL {
  return sql`
    media_url = CASE WHEN ${fresh} THEN ${mediaUrl} ELSE coalesce(${mediaUrl}, ${e.mediaUrl}) END,
    item_guid = CASE WHEN ${fresh} OR ${itemGuidSent} THEN ${itemGuid} ELSE ${e.itemGuid} END,
    position = CASE WHEN ${fresh} THEN coalesce(${position}, 0) WHEN ${positionApplies} THEN ${position} ELSE ${e.position} END,
    position_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${position} IS NOT NULL THEN ${changedAt} END)
      WHEN ${positionApplies} THEN ${changedAt} ELSE ${e.positionChangedAt} END,
    played = CASE WHEN ${fresh} THEN coalesce(${played}, 0) WHEN ${playedApplies} THEN ${played} ELSE ${e.played} END,
    played_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${played} IS NOT NULL THEN ${changedAt} END)
      WHEN ${playedApplies} THEN ${changedAt} ELSE ${e.playedChangedAt} END,
    duration = CASE WHEN ${fresh} OR ${durationSent} THEN ${duration} ELSE ${e.duration} END,
    change_seq = ${nextChange}, received_at = unixepoch(), deleted_at = NULL`;
}

const isTombstone = sql`${e.deletedAt} IS NOT NULL`;

/**
 * Creates the state, writes a tombstone's id afresh, or merges into the live state of the same feed; returns
 * the row only when it wrote one (a merge that changes nothing, or a state of another feed, writes nothing).
 * A new row is inserted only while the user stores fewer than the quota, checked inside the statement.
 */
const upsertStatement = statement(sql`
  INSERT INTO ${e} (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
    position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
  SELECT ${userId}, ${id}, ${feedGuid}, ${mediaUrl}, ${itemGuid}, coalesce(${position}, 0), ${duration},
    coalesce(${played}, 0), CASE WHEN ${position} IS NOT NULL THEN ${changedAt} END,
    CASE WHEN ${played} IS NOT NULL THEN ${changedAt} END, ${nextChange}, unixepoch(), NULL
  WHERE coalesce((SELECT ${stats.episodeCount} FROM ${stats} WHERE ${stats.userId} = ${userId}), 0) < ${MAX_STORED_EPISODES}
    OR EXISTS (SELECT 1 FROM ${e} WHERE ${isThisEpisode})
  ON CONFLICT (user_id, id) DO UPDATE SET feed_guid = excluded.feed_guid, ${writtenColumns(isTombstone)}
  WHERE ${isTombstone} OR (${e.feedGuid} = ${feedGuid} AND ${anyApplies})
  RETURNING ${packed} AS row`);

/** Merges into a live state (PATCH, bulk update); with a feed guid, only a state of that feed. */
const mergeStatement = statement(sql`
  UPDATE ${e} SET ${writtenColumns(sql`0`)}
  WHERE ${isThisEpisode} AND ${e.deletedAt} IS NULL
    AND (${feedGuid} IS NULL OR ${e.feedGuid} = ${feedGuid}) AND ${anyApplies}
  RETURNING ${packed} AS row`);

/** Forgets a live state, keeping a tombstone for the feed: no URL text, no values, no times. */
const forgetStatement = statement(sql`
  UPDATE ${e} SET media_url = NULL, item_guid = NULL, position = 0, duration = NULL, played = 0,
    position_changed_at = NULL, played_changed_at = NULL, deleted_at = ${sql.placeholder("now")},
    change_seq = ${nextChange}, received_at = unixepoch()
  WHERE ${isThisEpisode} AND ${e.deletedAt} IS NULL
  RETURNING 1 AS written`);

/** The stored row, live or tombstone, as it was before the writes that follow it in the batch. */
const storedRowStatement = statement(sql`SELECT ${packed} AS row FROM ${e} WHERE ${isThisEpisode}`);

function rowOf(result: D1Result<Row> | undefined): ChangedEpisode | undefined {
  const row = result?.results[0]?.row;
  return typeof row === "string" ? unpackRow(JSON.parse(row) as PackedRow) : undefined;
}

function writeValues(user: string, write: EpisodeWrite) {
  return {
    userId: user,
    id: write.id,
    feedGuid: write.feedGuid ?? null,
    mediaUrl: write.mediaUrl ?? null,
    itemGuidSent: write.itemGuid !== undefined ? 1 : 0,
    itemGuid: write.itemGuid ?? null,
    position: write.position ?? null,
    durationSent: write.duration !== undefined ? 1 : 0,
    duration: write.duration ?? null,
    played: write.played === undefined ? null : write.played ? 1 : 0,
    changedAt: write.changedAt ?? null,
  };
}

/**
 * The episode writes of one request. Each operation's statements go into the shared batch in request order:
 * a read of the stored row as it was, then the write (which returns the row only when it wrote it), so its
 * result tells a new state from a merge, a write that changed nothing from a state of another feed.
 */
export function episodeWriter(context: WriteContext): (operation: EpisodeOperation) => () => EpisodeWriteResult {
  const { batch, db, user, at } = context;
  return (operation) => {
    if (operation.op === "remove") {
      const slot = batch.push(forgetStatement.bind(db, { userId: user, id: operation.id, now: at }));
      return () => (slot.results()[0].results.length > 0 ? { kind: "removed" } : { kind: "not-found" });
    }
    const values = writeValues(user, operation);
    const write = operation.op === "add" ? upsertStatement : mergeStatement;
    const slot = batch.push(storedRowStatement.bind(db, values), write.bind(db, values));
    return () => {
      const [before, written] = slot.results().map(rowOf);
      const live = before && before.deletedAt === null ? before : undefined;
      if (written && written.deletedAt === null) {
        return { kind: live ? "merged" : "created", episode: toStored(written) };
      }
      if (!live) return { kind: operation.op === "add" ? "limit" : "not-found" };
      if (operation.feedGuid !== undefined && live.feedGuid !== operation.feedGuid) {
        return { kind: "feed-mismatch", feedGuid: live.feedGuid };
      }
      return { kind: "merged", episode: toStored(live) };
    };
  };
}

// ---------------------------------------------------------------------------------------------
// Reads

const findOneStatement = statement(sql`
  SELECT ${stats.episodeVersion} AS version,
    (SELECT ${packed} FROM ${e} WHERE ${isThisEpisode} AND ${e.deletedAt} IS NULL) AS row
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

export interface EpisodeRead {
  /** The user's latest episode change number (the ETag). */
  version: number;
  /** Undefined when the user has no such live state. */
  episode?: StoredEpisode;
}

/** One live episode state of the user, with the user's episode version. */
export async function findEpisode(db: Database, user: string, episode: string): Promise<EpisodeRead> {
  const row = await call(() => findOneStatement.bind(db, { userId: user, id: episode }).first<Row>());
  if (!row) return { version: 0 };
  const found = rowOf({ results: [row] } as D1Result<Row>);
  return { version: row.version as number, episode: found?.deletedAt === null ? toStored(found) : undefined };
}

/** The episode change feed (docs/API.md §13): its own sequence, tombstones included. */
export const listEpisodeChanges = changeFeedReader<ChangedEpisode>({
  version: stats.episodeVersion,
  from: sql`${e}`,
  userId: e.userId,
  changeSeq: e.changeSeq,
  columns: sql`${e.id}, ${e.feedGuid}, ${e.mediaUrl}, ${e.itemGuid}, ${e.position}, ${e.duration}, ${e.played},
    ${e.positionChangedAt}, ${e.playedChangedAt}, ${e.deletedAt}, ${e.changeSeq}`,
  unpack: (row) => unpackRow(row as PackedRow),
});

/** Every statement this module runs, for the test that proves none scans a table. */
export const episodeStatements: Record<string, Statement> = {
  upsert: upsertStatement,
  merge: mergeStatement,
  forget: forgetStatement,
  storedRow: storedRowStatement,
  findOne: findOneStatement,
  changes: listEpisodeChanges.statement,
};
