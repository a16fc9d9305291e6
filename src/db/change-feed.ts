import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { call, type Database } from "./database";
import { userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";

/**
 * The change feeds of every resource (docs/API.md §8, §13): what changed after a token, oldest change first,
 * each row once with its current state. A resource's rows carry `user_id` and `change_seq` (its own sequence)
 * with an index on (user_id, change_seq), and its latest number is a column of the user's stats row.
 */

export interface ChangePage<T> {
  /** The user's latest change number of this resource. */
  version: number;
  /** The highest change number of a purged tombstone of this resource: tokens below it (but 0) expired. */
  horizon: number;
  /** Undefined when `known` was current: nothing but the version was read. */
  changes?: T[];
}

export interface ChangeFeedTable<T> {
  /** The user's latest change number of this resource (a user_stats column). */
  version: SQLiteColumn;
  /** The user's horizon of purged tombstones of this resource (a user_stats column). */
  horizon: SQLiteColumn;
  /** The table and its user and change-number columns. */
  from: SQL;
  userId: SQLiteColumn;
  changeSeq: SQLiteColumn;
  /** The columns of an item, in the order `unpack` reads them (the change number among them). */
  columns: SQL;
  unpack(packed: unknown[]): T & { changeSeq: number };
}

/**
 * One statement: the stats row, and unless the client's `knownVersion` is current (CASE short-circuits) up to
 * `limit` changes after `since`, packed as JSON. It walks the change index from `since`, so a page reads its
 * own rows plus the stats row however long the history is.
 */
function changesStatement(table: ChangeFeedTable<unknown>): Statement {
  const userId = sql.placeholder("userId");
  return statement(sql`
    SELECT ${table.version} AS version, ${table.horizon} AS horizon,
      CASE WHEN ${table.version} IS ${sql.placeholder("knownVersion")} THEN NULL ELSE (
        SELECT json_group_array(json(item)) FROM (
          SELECT json_array(${table.columns}) AS item FROM ${table.from}
          WHERE ${table.userId} = ${userId} AND ${table.changeSeq} > ${sql.placeholder("since")}
          ORDER BY ${table.changeSeq}
          LIMIT ${sql.placeholder("limit")}
        )
      ) END AS changes
    FROM ${stats} WHERE ${stats.userId} = ${userId}`);
}

export interface ChangeFeedReader<T> {
  (db: Database, user: string, since: number, limit: number, known?: number | null): Promise<ChangePage<T>>;
  statement: Statement;
}

/** Up to `limit` changes after `since`, in change order, with the user's latest change number. */
export function changeFeedReader<T>(table: ChangeFeedTable<T>): ChangeFeedReader<T & { changeSeq: number }> {
  const query = changesStatement(table as ChangeFeedTable<unknown>);
  const read = async (db: Database, user: string, since: number, limit: number, known: number | null = null) => {
    const row = await call(() =>
      query
        .bind(db, { userId: user, since, limit, knownVersion: known })
        .first<{ version: number; horizon: number; changes: string | null }>(),
    );
    // No stats row: the user has never written anything.
    if (!row) return { version: 0, horizon: 0, changes: known === 0 ? undefined : [] };
    if (row.changes === null) return { version: row.version, horizon: row.horizon };
    // An aggregate does not promise to keep its input order: sorted again here.
    const changes = (JSON.parse(row.changes) as unknown[][])
      .map(table.unpack)
      .sort((a, b) => a.changeSeq - b.changeSeq);
    return { version: row.version, horizon: row.horizon, changes };
  };
  return Object.assign(read, { statement: query });
}
