import { type SQL, sql } from "drizzle-orm";
import type { Row, Slot, WriteBatch } from "./batch";
import { changeFeedReader, jsonBoolean, rfc3339 } from "./change-feed";
import { call, type Database } from "./database";
import { episodes as e, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import {
  bytesNeeded,
  episodeTombstones,
  MAX_URL_BYTES,
  type RoomNeed,
  refusal,
  roomStatement,
  roomsStatement,
  rowsNeeded,
  statOf,
  subscriptionTombstones,
  utf8Bytes,
} from "./storage";
import type { WriteContext } from "./subscriptions";
import { ITEM_GUID, MEDIA_URL, storedUrl, storedUrlBytes } from "./url-pieces";

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
  /** Create or merge; without `mediaUrl` only a merge (creating needs one: `media-url-required`). */
  ({ op: "add"; feedGuid: string } & EpisodeWrite) | ({ op: "update" } & EpisodeWrite) | { op: "remove"; id: string };

export type EpisodeWriteResult =
  | { kind: "created"; episode: StoredEpisode }
  | { kind: "merged"; episode: StoredEpisode }
  | { kind: "feed-mismatch"; feedGuid: string }
  | { kind: "limit" }
  | { kind: "storage" }
  | { kind: "not-found" }
  | { kind: "media-url-required" }
  | { kind: "removed" };

const userId = sql.placeholder("userId");

/**
 * What one write sends, as SQL: a single write's own placeholders (`sentByPlaceholders`), or the columns of a row of
 * a set write's writes (`setWriteStatements`). The merge rules below are written once over it.
 */
export interface SentWrite {
  id: SQL;
  feedGuid: SQL;
  mediaUrl: SQL;
  itemGuid: SQL;
  /** 1 when the write sends `itemGuid` (null included), else 0. */
  itemGuidSent: SQL;
  position: SQL;
  duration: SQL;
  /** 1 when the write sends `duration` (null included), else 0. */
  durationSent: SQL;
  played: SQL;
  changedAt: SQL;
}

const sentByPlaceholders: SentWrite = {
  id: sql`${sql.placeholder("id")}`,
  feedGuid: sql`${sql.placeholder("feedGuid")}`,
  mediaUrl: sql`${sql.placeholder("mediaUrl")}`,
  itemGuid: sql`${sql.placeholder("itemGuid")}`,
  itemGuidSent: sql`${sql.placeholder("itemGuidSent")}`,
  position: sql`${sql.placeholder("position")}`,
  duration: sql`${sql.placeholder("duration")}`,
  durationSent: sql`${sql.placeholder("durationSent")}`,
  played: sql`${sql.placeholder("played")}`,
  changedAt: sql`${sql.placeholder("changedAt")}`,
};

/** The user's next episode change number (its own sequence), read inside the writing statement. */
const nextChange = sql`(SELECT coalesce(max(${stats.episodeVersion}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${userId})`;

/** The row's whole mediaUrl and itemGuid (head and pieces): every read of those columns goes through them. */
const storedMediaUrl = storedUrl(MEDIA_URL, "episodes");
const storedItemGuid = storedUrl(ITEM_GUID, "episodes");

/** A row packed as one JSON array, in the order `unpackRow` reads it, with these URL texts. */
const packedWith = (media: SQL, item: SQL) => sql`json_array(${e.id}, ${e.feedGuid}, ${media}, ${item}, ${e.position},
  ${e.duration}, ${e.played}, ${e.positionChangedAt}, ${e.playedChangedAt}, ${e.deletedAt}, ${e.changeSeq})`;

/** The stored row. */
const packed = packedWith(storedMediaUrl, storedItemGuid);

const isTombstone = sql`${e.deletedAt} IS NOT NULL`;

/**
 * The merge rules of docs/API.md §13 over what a write sends (`v`), against the stored row (the `episodes` columns:
 * an upsert's conflicting row, an UPDATE's row).
 *
 * `position` and `played` are replaced only by a change that happened strictly later on its device than the stored
 * one (last writer wins, per field); equal or earlier leaves the field, so a retried write changes nothing.
 * `mediaUrl`, `itemGuid` and `duration` are facts about the episode: when sent, they replace the stored ones unless
 * the write is a late one (`factsApply`). A write that changes no stored value writes nothing: no change number, no
 * device sent it again.
 */
function mergeRules(v: SentWrite) {
  const isThisEpisode = sql`${e.userId} = ${userId} AND ${e.id} = ${v.id}`;
  /**
   * Whether a write's facts (`mediaUrl`, `itemGuid`, `duration`) apply: it has no `changedAt`, or one not earlier
   * than the later of the state's two change times; a late upload from an offline device changes none of them. In an
   * UPDATE's SET and WHERE the columns are the stored row's. In its RETURNING they are the written row's, and the
   * answer is the same: a field the write set took `changedAt` as its time, so the later of the two times is then at
   * most `changedAt` exactly when it was before.
   */
  const factsApply = sql`(${v.changedAt} IS NULL OR ${v.changedAt} >= max(coalesce(${e.positionChangedAt}, 0),
  coalesce(${e.playedChangedAt}, 0)))`;
  const positionApplies = sql`(${v.position} IS NOT NULL AND (${e.positionChangedAt} IS NULL OR ${e.positionChangedAt} < ${v.changedAt}))`;
  const playedApplies = sql`(${v.played} IS NOT NULL AND (${e.playedChangedAt} IS NULL OR ${e.playedChangedAt} < ${v.changedAt}))`;
  const anyApplies = sql`(${positionApplies} OR ${playedApplies}
  OR (${factsApply} AND ((${v.mediaUrl} IS NOT NULL AND ${storedMediaUrl} IS NOT ${v.mediaUrl})
    OR (${v.itemGuidSent} AND ${storedItemGuid} IS NOT ${v.itemGuid})
    OR (${v.durationSent} AND ${e.duration} IS NOT ${v.duration}))))`;
  return {
    isThisEpisode,
    anyApplies,
    /**
     * The columns a write sets. `fresh`: the stored row is a tombstone being written again, which starts a fresh
     * state (the forgotten values and times no longer count); otherwise the merge rules. `change`: its change number.
     */
    writtenColumns: (fresh: SQL, change: SQL = nextChange) => sql`
    media_url = CASE WHEN ${fresh} THEN ${v.mediaUrl} WHEN ${factsApply} THEN coalesce(${v.mediaUrl}, ${e.mediaUrl})
      ELSE ${e.mediaUrl} END,
    item_guid = CASE WHEN ${fresh} OR (${v.itemGuidSent} AND ${factsApply}) THEN ${v.itemGuid} ELSE ${e.itemGuid} END,
    position = CASE WHEN ${fresh} THEN coalesce(${v.position}, 0) WHEN ${positionApplies} THEN ${v.position} ELSE ${e.position} END,
    position_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${v.position} IS NOT NULL THEN ${v.changedAt} END)
      WHEN ${positionApplies} THEN ${v.changedAt} ELSE ${e.positionChangedAt} END,
    played = CASE WHEN ${fresh} THEN coalesce(${v.played}, 0) WHEN ${playedApplies} THEN ${v.played} ELSE ${e.played} END,
    played_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${v.played} IS NOT NULL THEN ${v.changedAt} END)
      WHEN ${playedApplies} THEN ${v.changedAt} ELSE ${e.playedChangedAt} END,
    duration = CASE WHEN ${fresh} OR (${v.durationSent} AND ${factsApply}) THEN ${v.duration} ELSE ${e.duration} END,
    change_seq = ${change}, received_at = unixepoch(), deleted_at = NULL`,
    /**
     * The URL bytes a write adds to the user's text (docs/API.md §15): what the row stores after the write minus
     * what it stores now. A write that writes nothing (another feed's state; for a merge, no live state) adds none.
     * `creates`: the write may start a fresh state over a tombstone or no row (POST), else it only merges.
     */
    growth: (creates: boolean): SQL => {
      const sent = sql`(${utf8Bytes(v.mediaUrl)} + ${utf8Bytes(v.itemGuid)})`;
      const merged = sql`(${utf8Bytes(sql`CASE WHEN ${factsApply} THEN coalesce(${v.mediaUrl}, ${storedMediaUrl}) ELSE ${storedMediaUrl} END`)}
    + CASE WHEN ${v.itemGuidSent} AND ${factsApply} THEN ${utf8Bytes(v.itemGuid)} ELSE ${storedUrlBytes(ITEM_GUID, "episodes")} END
    - ${episodeTombstones.bytes})`;
      const fresh = creates ? sent : sql`0`;
      return sql`coalesce((SELECT CASE WHEN ${isTombstone} THEN ${fresh}
      WHEN ${v.feedGuid} IS NOT NULL AND ${e.feedGuid} IS NOT ${v.feedGuid} THEN 0
      ELSE ${merged} END
    FROM ${e} WHERE ${isThisEpisode}), ${fresh})`;
    },
    /**
     * The row a write wrote, for its RETURNING clause: the pieces table may not yet show what the row's triggers
     * write (SQLite runs them after RETURNING reads), so a text the write sent and applied is taken from the
     * request; one it kept is the stored head, whose pieces the write left as they were.
     */
    packedWritten: packedWith(
      sql`CASE WHEN ${v.mediaUrl} IS NOT NULL AND ${factsApply} THEN ${v.mediaUrl} ELSE ${storedMediaUrl} END`,
      sql`CASE WHEN ${v.itemGuidSent} AND ${factsApply} THEN ${v.itemGuid} ELSE ${storedItemGuid} END`,
    ),
  };
}

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

const rules = mergeRules(sentByPlaceholders);
const { isThisEpisode, anyApplies, writtenColumns, growth, packedWritten } = rules;
const { id, feedGuid, mediaUrl, itemGuid, position, duration, played, changedAt } = sentByPlaceholders;

const mergeBytesNeed = bytesNeeded(growth(false));

/** A create-or-merge's statements: the room it makes first, then the write. */
interface AddStatements {
  room: Statement;
  upsert: Statement;
}

/**
 * The statements of one create-or-merge (a POST; a bulk request's adds go in sets, `setWriteStatements`). The room is made before the write, one statement for both kinds of tombstones: episode tombstones for the count
 * quota (its refusal wins) when the id is not stored, subscription tombstones (the only ones with URL text) for the
 * bytes. The write creates the state, writes a tombstone's id afresh, or merges into the live state of the same
 * feed; it returns the row only when it wrote one (a merge that changes nothing, or a state of another feed, writes
 * nothing). It writes only within the quota and the storage budget, checked inside the statement (the room before it
 * purged tombstones when there were enough).
 */
function addStatements(): AddStatements {
  const need: RoomNeed = {
    count: rowsNeeded(
      sql`NOT EXISTS (SELECT 1 FROM ${e} WHERE ${isThisEpisode})`,
      stats.episodeCount,
      MAX_STORED_EPISODES,
    ),
    bytes: bytesNeeded(growth(true)),
    exclude: id,
  };
  return {
    room: roomsStatement([
      { table: episodeTombstones, need: { count: need.count, bytes: sql`0`, exclude: id } },
      { table: subscriptionTombstones, need: { count: sql`0`, bytes: need.bytes, exclude: sql`NULL` } },
    ]),
    upsert: statement(sql`
  INSERT INTO ${e} (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
    position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
  SELECT ${userId}, ${id}, ${feedGuid}, ${mediaUrl}, ${itemGuid}, coalesce(${position}, 0), ${duration},
    coalesce(${played}, 0), CASE WHEN ${position} IS NOT NULL THEN ${changedAt} END,
    CASE WHEN ${played} IS NOT NULL THEN ${changedAt} END, ${nextChange}, unixepoch(), NULL
  WHERE ${need.count} <= 0 AND ${need.bytes} <= 0
  ON CONFLICT (user_id, id) DO UPDATE SET feed_guid = excluded.feed_guid, ${writtenColumns(isTombstone)}
  WHERE ${isTombstone} OR (${e.feedGuid} = ${feedGuid} AND ${anyApplies})
  RETURNING ${packedWritten} AS row`),
  };
}

const apiAdds = addStatements();
const mergeRoomStatements = [
  roomStatement(subscriptionTombstones, { count: sql`0`, bytes: mergeBytesNeed, exclude: sql`NULL` }),
];

/** Merges into a live state (PATCH, bulk update); with a feed guid, only a state of that feed. */
const mergeStatement = statement(sql`
  UPDATE ${e} SET ${writtenColumns(sql`0`)}
  WHERE ${isThisEpisode} AND ${e.deletedAt} IS NULL
    AND (${feedGuid} IS NULL OR ${e.feedGuid} = ${feedGuid}) AND ${anyApplies} AND ${mergeBytesNeed} <= 0
  RETURNING ${packedWritten} AS row`);

/** Forgets a live state, keeping a tombstone for the feed: no URL text, no values, no times. */
const forgetStatement = statement(sql`
  UPDATE ${e} SET media_url = NULL, item_guid = NULL, position = 0, duration = NULL, played = 0,
    position_changed_at = NULL, played_changed_at = NULL, deleted_at = ${sql.placeholder("now")},
    change_seq = ${nextChange}, received_at = unixepoch()
  WHERE ${isThisEpisode} AND ${e.deletedAt} IS NULL
  RETURNING 1 AS written`);

/**
 * The stored rows of several ids (a JSON array: one parameter however many), live or tombstones, as they were
 * before the writes that follow it in the batch; one JSON array of packed rows. `CROSS JOIN` keeps the ids
 * outside: left to itself, SQLite walks every state of the user and looks each up in the ids.
 */
const storedRowsStatement = statement(sql`
  SELECT json_group_array(json(${packed})) AS rows
  FROM json_each(${sql.placeholder("ids")}) AS wanted CROSS JOIN ${e} ON ${e.userId} = ${userId} AND ${e.id} = wanted.value`);

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
 * The stored rows one read before the writes of a request returned, by id: read once when the batch ran.
 */
class StoredRows {
  readonly ids = new Set<string>();
  private rows: Map<string, ChangedEpisode> | undefined;

  constructor(private readonly slot: Slot) {}

  get(id: string): ChangedEpisode | undefined {
    if (!this.rows) {
      const packed = this.slot.results()[0].results[0]?.rows;
      const rows = typeof packed === "string" ? (JSON.parse(packed) as PackedRow[]) : [];
      this.rows = new Map(rows.map((row) => [row[0], unpackRow(row)]));
    }
    return this.rows.get(id);
  }
}

/**
 * The episode writes of one request. Each operation's statements go into the shared batch in request order:
 * the room (purging tombstones when the write would pass the quota or the budget), then the write (which
 * returns the row only when it wrote it). The stored rows as they were come from one read placed before the
 * first create-or-merge and covering every later one whose id no episode write of the request touched in
 * between (a purge may delete a tombstone or renumber a live row meanwhile, which changes neither whether the
 * state is live nor its values); an id written again starts the next such read, just before its write. With them, the
 * write's result tells a new state from a merge, a write that changed nothing from a state of another feed.
 * With `sets` (a bulk request), consecutive creating adds of distinct ids go in one set instead (`PlannedSet`): a
 * few statements for all of them, placed where the first was.
 */
export function episodeWriter(
  context: WriteContext,
  options: { sets?: boolean } = {},
): (operation: EpisodeOperation) => () => EpisodeWriteResult {
  const { batch, db, user, at } = context;
  let stored: StoredRows | undefined;
  let set: PlannedSet | undefined;
  /** The ids written since `stored` was placed. */
  const written = new Set<string>();
  const storedBefore = (values: ReturnType<typeof writeValues>): (() => ChangedEpisode | undefined) => {
    if (!stored || written.has(values.id)) {
      const rows: StoredRows = new StoredRows(
        batch.later(() => storedRowsStatement.bind(db, { userId: user, ids: JSON.stringify([...rows.ids]) })),
      );
      stored = rows;
      written.clear();
    }
    const rows = stored;
    rows.ids.add(values.id);
    return () => rows.get(values.id);
  };
  return (operation) => {
    if (options.sets && operation.op === "add" && operation.mediaUrl !== undefined) {
      if (!set || set.ids.has(operation.id) || batch.length !== set.end) set = new PlannedSet(batch, db, user);
      if (stored) written.add(operation.id);
      return set.add(user, { ...operation, mediaUrl: operation.mediaUrl });
    }
    if (operation.op === "remove") {
      if (stored) written.add(operation.id);
      const slot = batch.push(forgetStatement.bind(db, { userId: user, id: operation.id, now: at }));
      return () => (slot.results()[0].results.length > 0 ? { kind: "removed" } : { kind: "not-found" });
    }
    const values = writeValues(user, operation);
    // An add without mediaUrl can only merge (docs/API.md §13): it runs as an update of a state of its feed.
    const creates = operation.op === "add" && operation.mediaUrl !== undefined;
    const [write, rooms] = creates ? [apiAdds.upsert, [apiAdds.room]] : [mergeStatement, mergeRoomStatements];
    const readBefore = storedBefore(values);
    written.add(values.id);
    const slot = batch.push(...rooms.map((room) => room.bind(db, values)), write.bind(db, values));
    return () => {
      const results = slot.results();
      const before = readBefore();
      const writtenRow = rowOf(results[rooms.length]);
      const live = before && before.deletedAt === null ? before : undefined;
      if (writtenRow && writtenRow.deletedAt === null) {
        return { kind: live ? "merged" : "created", episode: toStored(writtenRow) };
      }
      const refused = refusal(results.slice(0, rooms.length));
      if (refused) return { kind: refused };
      if (!live) return { kind: operation.op === "add" ? "media-url-required" : "not-found" };
      if (operation.feedGuid !== undefined && live.feedGuid !== operation.feedGuid) {
        return { kind: "feed-mismatch", feedGuid: live.feedGuid };
      }
      return { kind: "merged", episode: toStored(live) };
    };
  };
}

// ---------------------------------------------------------------------------------------------
// Set writes: many create-or-merges in a few statements (a gpodder upload's actions, docs/API.md §14)

/** A write that may create its state: it names its feed and sends a mediaUrl. */
export type CreatingWrite = EpisodeWrite & { feedGuid: string; mediaUrl: string };

/**
 * The statements of a set write, in batch order: the room the writes need (`room`), then the writes to stored rows
 * (`stored`: merges, and tombstones written afresh), then the writes of new states (`fresh`), each write statement
 * after the one that says which of its writes the quota or the budget refuses (`storedRefused`, `freshRefused`). All
 * bind the writes as one JSON array (`writes`, rows of `setWriteRow`), `sentBytes` (their URL text's bytes) and what
 * the source's own CTEs bind.
 */
export interface SetWriteStatements {
  room: Statement;
  storedRefused: Statement;
  stored: Statement;
  freshRefused: Statement;
  fresh: Statement;
}

/** Where the writes of a set come from: CTEs of the caller's (after `sent_writes`), and which writes apply. */
export interface SetWriteSource {
  ctes?: SQL;
  /** A condition on the write `sw` (a row of `sent_writes`): a write that does not apply writes nothing. */
  applies: SQL;
}

/**
 * One write of a set as its JSON row, in the order `sent_writes` reads it; `feed`: the caller's index of its feed
 * (what its `applies` may look up).
 */
export function setWriteRow(user: string, write: CreatingWrite, feed = 0): unknown[] {
  const values = writeValues(user, write);
  return [
    feed,
    values.id,
    values.feedGuid,
    values.mediaUrl,
    values.itemGuid,
    values.itemGuidSent,
    values.position,
    values.duration,
    values.durationSent,
    values.played,
    values.changedAt,
  ];
}

/**
 * The set's writes, numbered in order (`n`); every id at most once (`setWriteStatements`). `MATERIALIZED`: each
 * value is taken out of its JSON row once, where a view would take it out again at every use.
 */
const sentWrites = sql`sent_writes(n, feed, id, feed_guid, media_url, item_guid, item_guid_sent, position, duration,
    duration_sent, played, changed_at) AS MATERIALIZED (
    SELECT key, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7,
      value ->> 8, value ->> 9, value ->> 10 FROM json_each(${sql.placeholder("writes")}))`;

const setRules = mergeRules({
  id: sql`sw.id`,
  feedGuid: sql`sw.feed_guid`,
  mediaUrl: sql`sw.media_url`,
  itemGuid: sql`sw.item_guid`,
  itemGuidSent: sql`sw.item_guid_sent`,
  position: sql`sw.position`,
  duration: sql`sw.duration`,
  durationSent: sql`sw.duration_sent`,
  played: sql`sw.played`,
  changedAt: sql`sw.changed_at`,
});

const storedRow = sql`EXISTS (SELECT 1 FROM ${e} WHERE ${setRules.isThisEpisode})`;

/**
 * Whether the whole set fits whatever it writes: a new row per write and all its URL text. Then nothing is refused
 * and no room is needed, and the statements that would say so evaluate nothing more (a CASE branch not taken).
 */
const setFits = sql`(coalesce(${statOf(stats.episodeCount)}, 0) + json_array_length(${sql.placeholder("writes")}) <= ${MAX_STORED_EPISODES}
  AND coalesce(${statOf(stats.urlBytes)}, 0) + ${sql.placeholder("sentBytes")} <= ${MAX_URL_BYTES})`;

/**
 * The many create-or-merges of a set (every id at most once: each write meets its row as stored before the set),
 * with the rules of the single writes above (`mergeRules`), in statements per set rather than per write. Their
 * room is made once, for the set (the storage room of a gpodder subscription upload: `partial`, purging what there
 * is up to the need, never a tombstone the set writes). The writes to stored rows are admitted in order while the
 * URL text they add fits the budget, and the new states after them in order while they fit the quota and the
 * budget: once one is refused, every later one that needs room is too (a single write admitted later ones that
 * needed less). Sums of a statement's admissions are over the stats as the statement began (`MATERIALIZED`: the
 * triggers count each row it writes). Change numbers follow each other: a stored row's is read as it is written
 * (the trigger moves the version on), the new states' are the version plus their place.
 */
export function setWriteStatements(source: SetWriteSource): SetWriteStatements {
  const head = source.ctes === undefined ? sentWrites : sql`${sentWrites}, ${source.ctes}`;
  const stored = sql`${head},
  revived AS MATERIALIZED (
    SELECT sw.*, ${setRules.growth(true)} AS growth, coalesce(${statOf(stats.urlBytes)}, 0) AS base_bytes
    FROM sent_writes AS sw WHERE ${source.applies} AND ${storedRow}),
  revivals AS (SELECT *, sum(max(growth, 0)) OVER (ORDER BY n) AS bytes_so_far FROM revived)`;
  const storedAdmitted = sql`(sw.growth <= 0 OR sw.base_bytes + sw.bytes_so_far <= ${MAX_URL_BYTES})`;
  const fresh = sql`${head},
  fresh AS MATERIALIZED (
    SELECT sw.*, ${utf8Bytes(sql`sw.media_url`)} + ${utf8Bytes(sql`sw.item_guid`)} AS growth,
      coalesce(${statOf(stats.episodeCount)}, 0) AS base_count, coalesce(${statOf(stats.urlBytes)}, 0) AS base_bytes,
      coalesce(${statOf(stats.episodeVersion)}, 0) AS base_change
    FROM sent_writes AS sw WHERE ${source.applies} AND sw.media_url IS NOT NULL AND NOT ${storedRow}),
  admissions AS (SELECT *, row_number() OVER (ORDER BY n) AS k, sum(growth) OVER (ORDER BY n) AS bytes_so_far FROM fresh)`;
  const countFits = sql`sw.base_count + sw.k <= ${MAX_STORED_EPISODES}`;
  const freshAdmitted = sql`(${countFits} AND sw.base_bytes + sw.bytes_so_far <= ${MAX_URL_BYTES})`;
  // The refused writes, as a JSON array of [place in the set, by the quota (1) or the budget (0)].
  const refused = (ctes: SQL, from: string, admitted: SQL, byQuota: SQL) =>
    statement(sql`SELECT CASE WHEN ${setFits} THEN '[]' ELSE (WITH ${ctes}
      SELECT json_group_array(json_array(sw.n, ${byQuota})) FROM ${sql.raw(from)} AS sw WHERE NOT ${admitted}) END AS refused`);
  return {
    room: roomsStatement([
      {
        table: episodeTombstones,
        partial: true,
        need: {
          count: sql`(CASE WHEN ${setFits} THEN 0 ELSE (WITH ${fresh} SELECT count(*) FROM fresh)
            + coalesce(${statOf(stats.episodeCount)}, 0) - ${MAX_STORED_EPISODES} END)`,
          bytes: sql`0`,
          exclude: sql`NULL`,
          excludeAll: sql`SELECT value ->> 1 FROM json_each(${sql.placeholder("writes")})`,
        },
      },
      {
        table: subscriptionTombstones,
        partial: true,
        need: {
          count: sql`0`,
          bytes: sql`(CASE WHEN ${setFits} THEN 0 ELSE (WITH ${stored} SELECT coalesce(sum(max(growth, 0)), 0) FROM revived)
            + (WITH ${fresh} SELECT coalesce(sum(growth), 0) FROM fresh)
            + coalesce(${statOf(stats.urlBytes)}, 0) - ${MAX_URL_BYTES} END)`,
          exclude: sql`NULL`,
        },
      },
    ]),
    storedRefused: refused(stored, "revivals", storedAdmitted, sql`0`),
    stored: statement(sql`
  WITH ${stored}
  UPDATE ${e} SET feed_guid = sw.feed_guid, ${setRules.writtenColumns(isTombstone)}
  FROM revivals AS sw
  WHERE ${setRules.isThisEpisode} AND ${storedAdmitted}
    AND (${isTombstone} OR (${e.feedGuid} = sw.feed_guid AND ${setRules.anyApplies}))`),
    freshRefused: refused(fresh, "admissions", freshAdmitted, sql`NOT (${countFits})`),
    fresh: statement(sql`
  WITH ${fresh}
  INSERT INTO ${e} (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
    position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
  SELECT ${userId}, sw.id, sw.feed_guid, sw.media_url, sw.item_guid, coalesce(sw.position, 0), sw.duration,
    coalesce(sw.played, 0), CASE WHEN sw.position IS NOT NULL THEN sw.changed_at END,
    CASE WHEN sw.played IS NOT NULL THEN sw.changed_at END, sw.base_change + sw.k, unixepoch(), NULL
  FROM admissions AS sw WHERE ${freshAdmitted} ORDER BY sw.k`),
  };
}

/** The API's sets (a bulk request's creating adds): every write applies. */
const apiSets = setWriteStatements({ applies: sql`1` });

/** The user's episode version as a set's writes begin (after its room), and the stored rows of `ids`, packed. */
const setBeforeStatement = statement(sql`
  SELECT (SELECT ${stats.episodeVersion} FROM ${stats} WHERE ${stats.userId} = ${userId}) AS version,
    (SELECT json_group_array(json(${packed}))
      FROM json_each(${sql.placeholder("ids")}) AS wanted CROSS JOIN ${e} ON ${e.userId} = ${userId} AND ${e.id} = wanted.value) AS rows`);

function packedRows(result: D1Result<Row>): Map<string, ChangedEpisode> {
  const packed = result.results[0]?.rows;
  const rows = typeof packed === "string" ? (JSON.parse(packed) as PackedRow[]) : [];
  return new Map(rows.map((row) => [row[0], unpackRow(row)]));
}

/** The refusals of a set's two refusal statements (`storedRefused`, `freshRefused`), by place in the set. */
export function refusalsOf(results: D1Result<Row>[]): Map<number, "limit" | "storage"> {
  const refused = new Map<number, "limit" | "storage">();
  for (const result of results) {
    for (const [n, byQuota] of JSON.parse(String(result.results[0]?.refused ?? "[]")) as [number, number][]) {
      refused.set(n, byQuota ? "limit" : "storage");
    }
  }
  return refused;
}

/**
 * Creating adds of a bulk request planned as one set (`setWriteStatements`): consecutive in the batch, each id once.
 * Its seven statements are placed when the set starts and bound when the batch runs, with every write added until
 * then: the room, the rows as the writes meet them (and the version they start after), the writes, the rows after.
 * A write's result: written (its row's change number past that version), else refused, else what the stored row
 * says (another feed's state, or a merge that changed nothing).
 */
class PlannedSet {
  readonly ids = new Set<string>();
  /** The batch's length after this set's statements: another writer's statement after them ends the set. */
  readonly end: number;
  private readonly rows: string[] = [];
  private sentBytes = 0;
  private bound: Record<string, unknown> | undefined;
  private readonly slots: { before: Slot; storedRefused: Slot; freshRefused: Slot; after: Slot };
  private read:
    | { version: number; before: Map<string, ChangedEpisode>; after: Map<string, ChangedEpisode> }
    | undefined;
  private refused: Map<number, "limit" | "storage"> | undefined;

  constructor(batch: WriteBatch, db: Database, user: string) {
    const values = () => {
      this.bound ??= {
        userId: user,
        writes: `[${this.rows.join(",")}]`,
        sentBytes: this.sentBytes,
        ids: JSON.stringify([...this.ids]),
      };
      return this.bound;
    };
    const place = (statement: Statement) => batch.later(() => statement.bind(db, values()));
    place(apiSets.room);
    const before = place(setBeforeStatement);
    const storedRefused = place(apiSets.storedRefused);
    place(apiSets.stored);
    const freshRefused = place(apiSets.freshRefused);
    place(apiSets.fresh);
    const after = place(storedRowsStatement);
    this.slots = { before, storedRefused, freshRefused, after };
    this.end = batch.length;
  }

  add(user: string, write: CreatingWrite): () => EpisodeWriteResult {
    const n = this.rows.length;
    this.ids.add(write.id);
    this.rows.push(JSON.stringify(setWriteRow(user, write)));
    this.sentBytes += sentUrlBytes(write);
    return () => this.result(n, write);
  }

  private result(n: number, write: CreatingWrite): EpisodeWriteResult {
    this.read ??= {
      version: Number(this.slots.before.results()[0].results[0]?.version ?? 0),
      before: packedRows(this.slots.before.results()[0]),
      after: packedRows(this.slots.after.results()[0]),
    };
    const { version, before, after } = this.read;
    const stored = before.get(write.id);
    const live = stored && stored.deletedAt === null ? stored : undefined;
    const written = after.get(write.id);
    if (written && written.deletedAt === null && written.changeSeq > version) {
      return { kind: live ? "merged" : "created", episode: toStored(written) };
    }
    this.refused ??= refusalsOf([this.slots.storedRefused.results()[0], this.slots.freshRefused.results()[0]]);
    const refused = this.refused.get(n);
    if (refused) return { kind: refused };
    if (!live) return { kind: "media-url-required" };
    if (live.feedGuid !== write.feedGuid) return { kind: "feed-mismatch", feedGuid: live.feedGuid };
    return { kind: "merged", episode: toStored(live) };
  }
}

const encoder = new TextEncoder();

/** The UTF-8 bytes of URL text a set write sends (its mediaUrl and itemGuid): what its set binds as `sentBytes`. */
export function sentUrlBytes(write: CreatingWrite): number {
  return encoder.encode(write.mediaUrl).byteLength + (write.itemGuid ? encoder.encode(write.itemGuid).byteLength : 0);
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

/**
 * An episode as its change feed reports it, written by SQLite member for member as `toEpisodeChangeResource`
 * writes it: the resource plus `deletedAt: null`, or a tombstone without links.
 */
const episodeChangeItem = (() => {
  const identified = sql`'type','episode','id',${e.id}`;
  const feed = sql`'relationships',json_object('subscription',json_object('data',json_object('type','subscription','id',${e.feedGuid})))`;
  return sql`CASE WHEN ${e.deletedAt} IS NULL THEN json_object(${identified},'attributes',json_object('mediaUrl',${storedMediaUrl},
'itemGuid',${storedItemGuid},'position',${e.position},'duration',${e.duration},'played',${jsonBoolean(e.played)},
'positionChangedAt',${rfc3339(e.positionChangedAt)},'playedChangedAt',${rfc3339(e.playedChangedAt)},'deletedAt',NULL),
${feed},'links',json_object('self','/v1/episodes/'||${e.id}))
ELSE json_object(${identified},'attributes',json_object('deletedAt',${rfc3339(e.deletedAt)}),${feed}) END`;
})();

/** The episode change feed (docs/API.md §13): its own sequence, tombstones included. */
export const listEpisodeChanges = changeFeedReader({
  version: stats.episodeVersion,
  horizon: stats.episodeHorizon,
  from: sql`${e}`,
  userId: e.userId,
  changeSeq: e.changeSeq,
  item: episodeChangeItem,
});

/** Every statement this module runs, for the test that proves none scans a table. */
export const episodeStatements: Record<string, Statement> = {
  upsert: apiAdds.upsert,
  merge: mergeStatement,
  forget: forgetStatement,
  storedRows: storedRowsStatement,
  upsertRoom: apiAdds.room,
  mergeRoom: mergeRoomStatements[0],
  findOne: findOneStatement,
  changes: listEpisodeChanges.statement,
  setRoom: apiSets.room,
  setBefore: setBeforeStatement,
  setStoredRefused: apiSets.storedRefused,
  setStored: apiSets.stored,
  setFreshRefused: apiSets.freshRefused,
  setFresh: apiSets.fresh,
};
