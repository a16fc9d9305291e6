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

/**
 * One page of changes as the response carries it. SQLite writes each item's JSON text: parsing a page in the
 * isolate and serialising it again cost about as much as the rest of the request.
 */
export interface ChangeTexts {
  /** The page's resource objects: a JSON array's text, oldest change first. */
  data: string;
  /** The change number of the page's last item (the `since` read from when the page is empty). */
  last: number;
  /** Whether changes follow the page. */
  more: boolean;
}

export interface ChangePage {
  /** The user's latest change number of this resource. */
  version: number;
  /** The highest change number of a purged tombstone of this resource: tokens below it (but 0) expired. */
  horizon: number;
  /** Undefined when `known` was current: nothing but the version was read. */
  changes?: ChangeTexts;
}

export interface ChangeFeedTable {
  /** The user's latest change number of this resource (a user_stats column). */
  version: SQLiteColumn;
  /** The user's horizon of purged tombstones of this resource (a user_stats column). */
  horizon: SQLiteColumn;
  /** The table and its user and change-number columns. */
  from: SQL;
  userId: SQLiteColumn;
  changeSeq: SQLiteColumn;
  /** A row's resource object as the change feed reports it, as JSON text (equal to the resource module's). */
  item: SQL;
}

/**
 * A time as responses carry it (`toRfc3339`: milliseconds and `Z`), written by SQLite; NULL stays NULL.
 * SQLite rounds the seconds to the whole millisecond before formatting, so no float error shows.
 */
export function rfc3339(ms: SQL | SQLiteColumn): SQL {
  return sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${ms} / 1000.0, 'unixepoch')`;
}

/** A 0/1 column as a JSON boolean inside `json_object`. */
export function jsonBoolean(value: SQLiteColumn): SQL {
  return sql`json(CASE WHEN ${value} THEN 'true' ELSE 'false' END)`;
}

/**
 * One statement: the stats row, and unless the client's `knownVersion` is current (CASE short-circuits) up to
 * `limit` changes after `since`, as one text: their change numbers (comma-separated), a space, then their items
 * as a JSON array. It walks the change index from `since`, so a page reads its own rows plus the stats row
 * however long the history is.
 */
function changesStatement(table: ChangeFeedTable): Statement {
  const userId = sql.placeholder("userId");
  return statement(sql`SELECT ${table.version} AS version, ${table.horizon} AS horizon,
CASE WHEN ${table.version} IS ${sql.placeholder("knownVersion")} THEN NULL ELSE (
SELECT coalesce(group_concat(seq, ','), '') || ' [' || coalesce(group_concat(item, ','), '') || ']' FROM (
SELECT ${table.changeSeq} AS seq, ${table.item} AS item FROM ${table.from}
WHERE ${table.userId} = ${userId} AND ${table.changeSeq} > ${sql.placeholder("since")}
ORDER BY ${table.changeSeq} LIMIT ${sql.placeholder("limit")})) END AS changes
FROM ${stats} WHERE ${stats.userId} = ${userId}`);
}

/**
 * Where each item of a page's text starts: every item is an object whose first member is `type`, and no
 * string value can hold this sequence unescaped (its quotes would read `\"`).
 */
const ITEM_START = ',{"type":"';

/**
 * The page from the statement's text. An aggregate does not promise to keep its input order, but both lists
 * come from one pass over the same rows: the change numbers show the items' order, and a page that did not
 * come in change order is put in order here.
 */
export function pageOf(text: string, since: number, size: number): ChangeTexts {
  const space = text.indexOf(" ");
  const seqs = space === 0 ? [] : text.slice(0, space).split(",").map(Number);
  let data = text.slice(space + 1);
  if (seqs.some((seq, i) => seq < seqs[i - 1])) {
    data = itemsInOrder(
      data,
      [...seqs.keys()].sort((i, j) => seqs[i] - seqs[j]),
    );
    seqs.sort((a, b) => a - b);
  }
  const more = seqs.length > size;
  // The one change read past the page only says that `next` exists.
  if (more) data = `${data.slice(0, data.lastIndexOf(ITEM_START))}]`;
  return { data, last: seqs[Math.min(size, seqs.length) - 1] ?? since, more };
}

/**
 * A JSON array's text of resource objects (each an object whose first member is `type`, as SQLite writes them)
 * with its items in `order` (`order[k]`: the position of the k-th item to send).
 */
export function itemsInOrder(data: string, order: readonly number[]): string {
  const items = data.slice(1, -1).split(ITEM_START);
  // Splitting took the start of every item but the first.
  return `[${order.map((i) => (i ? `{"type":"${items[i]}` : items[0])).join(",")}]`;
}

export interface ChangeFeedReader {
  (db: Database, user: string, since: number, size: number, known?: number | null): Promise<ChangePage>;
  statement: Statement;
}

/** Up to `size` changes after `since`, in change order, with the user's latest change number. */
export function changeFeedReader(table: ChangeFeedTable): ChangeFeedReader {
  const query = changesStatement(table);
  const read = async (db: Database, user: string, since: number, size: number, known: number | null = null) => {
    const row = await call(() =>
      query
        .bind(db, { userId: user, since, limit: size + 1, knownVersion: known })
        .first<{ version: number; horizon: number; changes: string | null }>(),
    );
    // No stats row: the user has never written anything.
    if (!row) return { version: 0, horizon: 0, changes: known === 0 ? undefined : pageOf(" []", since, size) };
    if (row.changes === null) return { version: row.version, horizon: row.horizon };
    return { version: row.version, horizon: row.horizon, changes: pageOf(row.changes, since, size) };
  };
  return Object.assign(read, { statement: query });
}
