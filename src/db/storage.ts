import { type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Row } from "./batch";
import { episodes as e, subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { FEED_URL, ITEM_GUID, MEDIA_URL, storedUrlBytes } from "./url-pieces";

/**
 * What an account may store, beyond row counts (docs/API.md §15): the URL text, and how tombstones are recycled
 * to make room. Purging is raising a horizon (`user_stats.*_horizon`): a trigger (drizzle/0005) then renumbers
 * the live rows below it and deletes the tombstones at or below it, so every writer purges the same way.
 */

/** The UTF-8 bytes of URL text a user may store: feedUrls (tombstones included), mediaUrls and itemGuids. */
export const MAX_URL_BYTES = 8 * 1024 * 1024;

/** The UTF-8 byte length of a text value in SQL (0 for NULL). */
export function utf8Bytes(value: SQLWrapper): SQL {
  return sql`coalesce(length(CAST(${value} AS BLOB)), 0)`;
}

const userId = sql.placeholder("userId");

/** A resource whose deleted rows stay as tombstones, ordered by its own change numbers. */
export interface TombstoneTable {
  table: SQL;
  userId: SQLiteColumn;
  /** The row's id within the user (the primary key's second column). */
  id: SQLiteColumn;
  changeSeq: SQLiteColumn;
  /** The tombstone time column (NULL on live rows), also what the retention cron ages by. */
  deletedAt: SQLiteColumn;
  /** The URL bytes one row stores. */
  bytes: SQL;
  /** The user_stats column raising which purges this resource's tombstones. */
  horizon: SQLiteColumn;
  /** The user_stats column of this resource's latest change number. */
  version: SQLiteColumn;
}

export const subscriptionTombstones: TombstoneTable = {
  table: sql`${s}`,
  userId: s.userId,
  id: s.guid,
  changeSeq: s.changeSeq,
  deletedAt: s.unsubscribedAt,
  bytes: storedUrlBytes(FEED_URL, "subscriptions"),
  horizon: stats.subscriptionHorizon,
  version: stats.version,
};

export const episodeTombstones: TombstoneTable = {
  table: sql`${e}`,
  userId: e.userId,
  id: e.id,
  changeSeq: e.changeSeq,
  deletedAt: e.deletedAt,
  // Parenthesised: it is subtracted (a merge's growth is what it stores after minus this), and without them
  // `a - b + c` counted the itemGuid twice, refusing position-only writes near the budget.
  bytes: sql`(${storedUrlBytes(MEDIA_URL, "episodes")} + ${storedUrlBytes(ITEM_GUID, "episodes")})`,
  horizon: stats.episodeHorizon,
  version: stats.episodeVersion,
};

/** The user's stats column, read inside a statement. */
export function statOf(column: SQLiteColumn): SQL {
  return sql`(SELECT ${column} FROM ${stats} WHERE ${stats.userId} = ${userId})`;
}

/**
 * The URL bytes a write growing the user's text by `growth` must free first (<= 0: it fits). A write that keeps
 * or shrinks the text needs nothing, even over the budget (an account stored before the budget may shrink).
 * The write checks `<= 0` itself, so concurrent writers cannot overshoot.
 */
export function bytesNeeded(growth: SQL): SQL {
  return sql`(CASE WHEN ${growth} > 0 THEN coalesce(${statOf(stats.urlBytes)}, 0) + ${growth} - ${MAX_URL_BYTES} ELSE 0 END)`;
}

/** The tombstones a write adding a row (`isNew`) must free first under a count quota (<= 0: it fits). */
export function rowsNeeded(isNew: SQL, count: SQLiteColumn, max: number): SQL {
  return sql`(CASE WHEN ${isNew} THEN coalesce(${statOf(count)}, 0) + 1 - ${max} ELSE 0 END)`;
}

/** What a write needs freed before it can run: tombstones (`count`) and URL bytes (`bytes`); <= 0 is none. */
export interface RoomNeed {
  count: SQL;
  bytes: SQL;
  /** A row the write itself revives: not counted as freeing anything (it may still be purged, see below). */
  exclude: SQLWrapper;
  /** The rows a set write revives (a SELECT of their ids): never purged to make room. */
  excludeAll?: SQL;
}

/** One kind of tombstones a write may purge, and what the write needs freed of it. */
export interface Room {
  table: TombstoneTable;
  need: RoomNeed;
  /**
   * For a write of many rows that are each admitted while they fit (a gpodder upload): purge what there is up to
   * the need even when it is not enough, so that as many as possible fit. Otherwise nothing is purged unless
   * the whole need can be met (a single write that is refused purges nothing).
   */
  partial?: boolean;
}

/**
 * Makes room for one write, placed just before it in the batch: when the write would pass the count quota or the
 * budget, it raises the horizon to the newest of the user's oldest tombstones (change order) that free enough,
 * which purges them (the trigger), and returns whether room was found: `count_ok`, `bytes_ok` (1 or 0). Live rows
 * alone filling the quota or the budget: nothing is purged, and the write that follows refuses itself. When the
 * write needs nothing it reads the stats row only, writes nothing and returns no row.
 *
 * The revived row is left out of what frees room: if the trigger deletes it (it lies below the new horizon),
 * the write inserts it as new, which the freed tombstones made room for as well.
 */
export function roomStatement(table: TombstoneTable, need: RoomNeed): Statement {
  return roomsStatement([{ table, need }]);
}

/**
 * The rooms of several kinds of tombstones in one statement (one answer to parse per write of a bulk request
 * rather than one per kind), each kind walked and purged on its own as `roomStatement` does; its one row says
 * whether every kind found room. The kinds' needs must not depend on each other's purges (different tables,
 * and the first kind's tombstones hold no URL text when a later kind frees bytes).
 */
export function roomsStatement(rooms: Room[]): Statement {
  const parts = rooms.map(({ table, need, partial }, index) => {
    const named = (name: string) => sql.raw(`${name}_${index}`);
    const [needName, walkName, pickName] = [named("need"), named("walk"), named("pick")];
    const excludedAll = need.excludeAll === undefined ? sql`` : sql` AND ${table.id} NOT IN (${need.excludeAll})`;
    const tombstones = sql`${table.userId} = ${userId} AND ${table.deletedAt} IS NOT NULL AND ${table.id} IS NOT ${need.exclude}${excludedAll}`;
    // The user's next tombstone in change order after `seq`, and its change number and bytes (primary-key lookups).
    // The walk's column is named `tombstone`, a name no table has, so it never resolves to a table's own column.
    const nextAfter = (seq: SQL) =>
      sql`(SELECT ${table.id} FROM ${table.table} WHERE ${tombstones} AND ${table.changeSeq} > ${seq} ORDER BY ${table.changeSeq} LIMIT 1)`;
    const column = (value: SQL | SQLiteColumn, id: SQL) =>
      sql`(SELECT ${value} FROM ${table.table} WHERE ${table.userId} = ${userId} AND ${table.id} = ${id})`;
    const k = sql`(SELECT k FROM ${needName})`;
    const b = sql`(SELECT b FROM ${needName})`;
    const next = nextAfter(sql`${walkName}.seq`);
    const ok = partial ? sql`1` : sql`(SELECT count_ok AND bytes_ok FROM ${pickName})`;
    const h = sql`(SELECT h FROM ${pickName})`;
    // Walks the tombstone index one entry at a time and stops as soon as enough is freed: a write reads the
    // tombstones it purges (at most the whole prefix only when it is refused anyway), never all of them.
    return {
      ctes: sql`${needName} AS (SELECT ${need.count} AS k, ${need.bytes} AS b),
    ${walkName}(tombstone, seq, n, cum) AS (
      SELECT tombstone, ${column(table.changeSeq, sql`tombstone`)}, 1, ${column(table.bytes, sql`tombstone`)}
      FROM (SELECT CASE WHEN ${k} > 0 OR ${b} > 0 THEN ${nextAfter(sql`-1`)} END AS tombstone) WHERE tombstone IS NOT NULL
      UNION ALL
      SELECT ${next}, ${column(table.changeSeq, next)}, ${walkName}.n + 1, ${walkName}.cum + ${column(table.bytes, next)}
      FROM ${walkName} WHERE (${walkName}.n < ${k} OR ${walkName}.cum < ${b}) AND ${next} IS NOT NULL
    ),
    ${pickName} AS (
      SELECT (SELECT max(seq) FROM ${walkName}) AS h,
        k <= 0 OR coalesce((SELECT max(n) FROM ${walkName}), 0) >= k AS count_ok,
        b <= 0 OR coalesce((SELECT max(cum) FROM ${walkName}), 0) >= b AS bytes_ok
      FROM ${needName}
    )`,
      set: sql`${sql.identifier(table.horizon.name)} = CASE WHEN ${ok} AND ${h} IS NOT NULL THEN max(${table.horizon}, ${h}) ELSE ${table.horizon} END`,
      needs: sql`(${k} > 0 OR ${b} > 0)`,
      countOk: sql`(SELECT count_ok FROM ${pickName})`,
      bytesOk: sql`(SELECT bytes_ok FROM ${pickName})`,
      renumbered: sql`(SELECT count(*) FROM ${table.table} WHERE ${table.userId} = ${userId} AND ${table.deletedAt} IS NULL
        AND ${table.changeSeq} < ${h} AND ${ok})`,
    };
  });
  const all = (pick: (part: (typeof parts)[number]) => SQL, separator: string) =>
    sql.join(parts.map(pick), sql.raw(separator));
  return statement(sql`
    WITH RECURSIVE ${all((part) => part.ctes, ",\n    ")}
    UPDATE ${stats} SET ${all((part) => part.set, ", ")}
    WHERE ${stats.userId} = ${userId} AND (${all((part) => part.needs, " OR ")})
    RETURNING ${all((part) => part.countOk, " AND ")} AS count_ok, ${all((part) => part.bytesOk, " AND ")} AS bytes_ok,
      ${all((part) => part.renumbered, " + ")} AS renumbered`);
}

/**
 * The live rows the purges of a batch renumbered (each make-room statement reports those below its new horizon):
 * what the request is charged for beyond itself (middleware/rate-limit.ts).
 */
export function renumberedRows(results: D1Result<Row>[]): number {
  return results.reduce(
    (sum, result) => sum + result.results.reduce((rows, row) => rows + (Number(row.renumbered) || 0), 0),
    0,
  );
}

/** Why a make-room statement found no room, if it did not: the count quota wins over the budget. */
export function refusal(results: D1Result<Row>[]): "limit" | "storage" | undefined {
  const rows = results.flatMap((result) => result.results);
  if (rows.some((row) => row.count_ok === 0)) return "limit";
  if (rows.some((row) => row.bytes_ok === 0)) return "storage";
  return undefined;
}
