import { type SQL, sql } from "drizzle-orm";
import type { Row, Slot } from "./batch";
import { changeFeedReader, jsonBoolean, rfc3339 } from "./change-feed";
import { call, type Database } from "./database";
import { episodes as e, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import {
  bytesNeeded,
  episodeTombstones,
  type RoomNeed,
  refusal,
  roomStatement,
  roomsStatement,
  rowsNeeded,
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

/** The row's whole mediaUrl and itemGuid (head and pieces): every read of those columns goes through them. */
const storedMediaUrl = storedUrl(MEDIA_URL, "episodes");
const storedItemGuid = storedUrl(ITEM_GUID, "episodes");

/** A row packed as one JSON array, in the order `unpackRow` reads it, with these URL texts. */
const packedWith = (media: SQL, item: SQL) => sql`json_array(${e.id}, ${e.feedGuid}, ${media}, ${item}, ${e.position},
  ${e.duration}, ${e.played}, ${e.positionChangedAt}, ${e.playedChangedAt}, ${e.deletedAt}, ${e.changeSeq})`;

/** The stored row. */
const packed = packedWith(storedMediaUrl, storedItemGuid);

/**
 * Whether a write's facts (`mediaUrl`, `itemGuid`, `duration`) apply (docs/API.md §13): it has no `changedAt`, or
 * one not earlier than the later of the state's two change times; a late upload from an offline device changes
 * none of them. In an UPDATE's SET and WHERE the columns are the stored row's. In its RETURNING they are the
 * written row's, and the answer is the same: a field the write set took `changedAt` as its time, so the later of
 * the two times is then at most `changedAt` exactly when it was before.
 */
const factsApply = sql`(${changedAt} IS NULL OR ${changedAt} >= max(coalesce(${e.positionChangedAt}, 0),
  coalesce(${e.playedChangedAt}, 0)))`;

/**
 * The row a write wrote, for its RETURNING clause: the pieces table may not yet show what the row's triggers
 * write (SQLite runs them after RETURNING reads), so a text the write sent and applied is taken from the
 * request; one it kept is the stored head, whose pieces the write left as they were.
 */
const packedWritten = packedWith(
  sql`CASE WHEN ${mediaUrl} IS NOT NULL AND ${factsApply} THEN ${mediaUrl} ELSE ${storedMediaUrl} END`,
  sql`CASE WHEN ${itemGuidSent} AND ${factsApply} THEN ${itemGuid} ELSE ${storedItemGuid} END`,
);

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
// when sent, they replace the stored ones unless the write is a late one (`factsApply`). A write that changes
// no stored value writes nothing: no change number, no device sent it again.
const positionApplies = sql`(${position} IS NOT NULL AND (${e.positionChangedAt} IS NULL OR ${e.positionChangedAt} < ${changedAt}))`;
const playedApplies = sql`(${played} IS NOT NULL AND (${e.playedChangedAt} IS NULL OR ${e.playedChangedAt} < ${changedAt}))`;
const anyApplies = sql`(${positionApplies} OR ${playedApplies}
  OR (${factsApply} AND ((${mediaUrl} IS NOT NULL AND ${storedMediaUrl} IS NOT ${mediaUrl})
    OR (${itemGuidSent} AND ${storedItemGuid} IS NOT ${itemGuid})
    OR (${durationSent} AND ${e.duration} IS NOT ${duration}))))`;

/**
 * The columns a write sets. `fresh`: the stored row is a tombstone being written again, which starts a fresh
 * state (the forgotten values and times no longer count); otherwise the merge rules above.
 */
function writtenColumns(fresh: SQL): SQL {
  return sql`
    media_url = CASE WHEN ${fresh} THEN ${mediaUrl} WHEN ${factsApply} THEN coalesce(${mediaUrl}, ${e.mediaUrl})
      ELSE ${e.mediaUrl} END,
    item_guid = CASE WHEN ${fresh} OR (${itemGuidSent} AND ${factsApply}) THEN ${itemGuid} ELSE ${e.itemGuid} END,
    position = CASE WHEN ${fresh} THEN coalesce(${position}, 0) WHEN ${positionApplies} THEN ${position} ELSE ${e.position} END,
    position_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${position} IS NOT NULL THEN ${changedAt} END)
      WHEN ${positionApplies} THEN ${changedAt} ELSE ${e.positionChangedAt} END,
    played = CASE WHEN ${fresh} THEN coalesce(${played}, 0) WHEN ${playedApplies} THEN ${played} ELSE ${e.played} END,
    played_changed_at = CASE WHEN ${fresh} THEN (CASE WHEN ${played} IS NOT NULL THEN ${changedAt} END)
      WHEN ${playedApplies} THEN ${changedAt} ELSE ${e.playedChangedAt} END,
    duration = CASE WHEN ${fresh} OR (${durationSent} AND ${factsApply}) THEN ${duration} ELSE ${e.duration} END,
    change_seq = ${nextChange}, received_at = unixepoch(), deleted_at = NULL`;
}

const isTombstone = sql`${e.deletedAt} IS NOT NULL`;

/**
 * The URL bytes a write adds to the user's text (docs/API.md §15): what the row stores after the write minus
 * what it stores now. A write that writes nothing (another feed's state; for a merge, no live state) adds none.
 * `creates`: the write may start a fresh state over a tombstone or no row (POST), else it only merges.
 */
function growth(creates: boolean): SQL {
  const sent = sql`(${utf8Bytes(mediaUrl)} + ${utf8Bytes(itemGuid)})`;
  const merged = sql`(${utf8Bytes(sql`CASE WHEN ${factsApply} THEN coalesce(${mediaUrl}, ${storedMediaUrl}) ELSE ${storedMediaUrl} END`)}
    + CASE WHEN ${itemGuidSent} AND ${factsApply} THEN ${utf8Bytes(itemGuid)} ELSE ${storedUrlBytes(ITEM_GUID, "episodes")} END
    - ${episodeTombstones.bytes})`;
  const fresh = creates ? sent : sql`0`;
  return sql`coalesce((SELECT CASE WHEN ${isTombstone} THEN ${fresh}
      WHEN ${feedGuid} IS NOT NULL AND ${e.feedGuid} IS NOT ${feedGuid} THEN 0
      ELSE ${merged} END
    FROM ${e} WHERE ${isThisEpisode}), ${fresh})`;
}

const mergeBytesNeed = bytesNeeded(growth(false));

/** A create-or-merge's statements: the room it makes first, then the write. */
export interface AddStatements {
  room: Statement;
  upsert: Statement;
}

/**
 * The statements of a create-or-merge that writes only where `applies` holds (a condition on the write's own
 * values, `true` for every write of the API's): where it does not, the room needs nothing and the write writes
 * nothing. A gpodder upload's writes apply only while the guid their episode id was computed from is the one their
 * feed's URL resolves to (db/gpodder.ts).
 *
 * The room is made before the write, one statement for both kinds of tombstones: episode tombstones for the count
 * quota (its refusal wins) when the id is not stored, subscription tombstones (the only ones with URL text) for the
 * bytes. The write creates the state, writes a tombstone's id afresh, or merges into the live state of the same
 * feed; it returns the row only when it wrote one (a merge that changes nothing, or a state of another feed, writes
 * nothing). It writes only within the quota and the storage budget, checked inside the statement (the room before it
 * purged tombstones when there were enough).
 */
export function addStatements(applies: SQL): AddStatements {
  const need: RoomNeed = {
    count: rowsNeeded(
      sql`${applies} AND NOT EXISTS (SELECT 1 FROM ${e} WHERE ${isThisEpisode})`,
      stats.episodeCount,
      MAX_STORED_EPISODES,
    ),
    bytes: sql`(CASE WHEN ${applies} THEN ${bytesNeeded(growth(true))} ELSE 0 END)`,
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
  WHERE ${applies} AND ${need.count} <= 0 AND ${need.bytes} <= 0
  ON CONFLICT (user_id, id) DO UPDATE SET feed_guid = excluded.feed_guid, ${writtenColumns(isTombstone)}
  WHERE ${isTombstone} OR (${e.feedGuid} = ${feedGuid} AND ${anyApplies})
  RETURNING ${packedWritten} AS row`),
  };
}

/** The API's create-or-merge: every write applies. */
const apiAdds = addStatements(sql`1`);
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
 * `adds`: the create-or-merge statements (`addStatements`); `values` beside an operation: what their condition binds.
 */
export function episodeWriter(
  context: WriteContext,
  adds: AddStatements = apiAdds,
): (operation: EpisodeOperation, values?: Record<string, unknown>) => () => EpisodeWriteResult {
  const { batch, db, user, at } = context;
  let stored: StoredRows | undefined;
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
  return (operation, extra) => {
    if (operation.op === "remove") {
      if (stored) written.add(operation.id);
      const slot = batch.push(forgetStatement.bind(db, { userId: user, id: operation.id, now: at }));
      return () => (slot.results()[0].results.length > 0 ? { kind: "removed" } : { kind: "not-found" });
    }
    const values = { ...writeValues(user, operation), ...extra };
    // An add without mediaUrl can only merge (docs/API.md §13): it runs as an update of a state of its feed.
    const creates = operation.op === "add" && operation.mediaUrl !== undefined;
    const [write, rooms] = creates ? [adds.upsert, [adds.room]] : [mergeStatement, mergeRoomStatements];
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
};
