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
  /** For a reader with `included`: the related resources of the page's rows, a JSON array's text. */
  included?: string;
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
  /**
   * A reader with related resources (`include`): the row's related resource as JSON text, NULL for none (a
   * tombstone). The page's `included` holds those of the page's rows.
   */
  included?: SQL;
}

/**
 * What separates the related resources of a page's rows in its text, and them from the page's items: JSON text
 * that SQLite writes never holds a raw line feed (json_object escapes it), so they are split without being parsed.
 */
export const INCLUDED_SEPARATOR = "\n";

/**
 * The aggregate of the inner query's `column` (each row's related resource, NULL for none) after a page's items:
 * the separator, then the rows' texts, one per row in the rows' order (an empty one for NULL).
 */
export function includedText(column: string): SQL {
  const name = sql.raw(column);
  return sql` || char(10) || coalesce(group_concat(coalesce(${name}, ''), char(10)), '')`;
}

/**
 * `includedText`'s texts of `rows` rows as a JSON array's text: in `order` when given (`order[k]`: the row to
 * send k-th), the first `count` only, empty ones (rows without) left out.
 */
export function includedOf(text: string, rows: number, order?: readonly number[], count = rows): string {
  if (rows === 0) return "[]";
  const related = text.split(INCLUDED_SEPARATOR);
  const ordered = order ? order.map((i) => related[i]) : related;
  return `[${ordered
    .slice(0, count)
    .filter((item) => item !== "")
    .join(",")}]`;
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
  const included = table.included === undefined ? sql`` : includedText("related");
  const relatedColumn = table.included === undefined ? sql`` : sql`, ${table.included} AS related`;
  return statement(sql`SELECT ${table.version} AS version, ${table.horizon} AS horizon,
CASE WHEN ${table.version} IS ${sql.placeholder("knownVersion")} THEN NULL ELSE (
SELECT coalesce(group_concat(seq, ','), '') || ' [' || coalesce(group_concat(item, ','), '') || ']'${included} FROM (
SELECT ${table.changeSeq} AS seq, ${table.item} AS item${relatedColumn} FROM ${table.from}
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
  const cut = text.indexOf(INCLUDED_SEPARATOR);
  const head = cut < 0 ? text : text.slice(0, cut);
  const space = head.indexOf(" ");
  const seqs = space === 0 ? [] : head.slice(0, space).split(",").map(Number);
  let data = head.slice(space + 1);
  let order: number[] | undefined;
  if (seqs.some((seq, i) => seq < seqs[i - 1])) {
    order = [...seqs.keys()].sort((i, j) => seqs[i] - seqs[j]);
    data = itemsInOrder(data, order);
    seqs.sort((a, b) => a - b);
  }
  const more = seqs.length > size;
  // The one change read past the page only says that `next` exists.
  if (more) data = `${data.slice(0, data.lastIndexOf(ITEM_START))}]`;
  const page = { data, last: seqs[Math.min(size, seqs.length) - 1] ?? since, more };
  if (cut < 0) return page;
  return { ...page, included: includedOf(text.slice(cut + 1), seqs.length, order, Math.min(size, seqs.length)) };
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
  const empty = table.included === undefined ? " []" : ` []${INCLUDED_SEPARATOR}`;
  const read = async (db: Database, user: string, since: number, size: number, known: number | null = null) => {
    const row = await call(() =>
      query
        .bind(db, { userId: user, since, limit: size + 1, knownVersion: known })
        .first<{ version: number; horizon: number; changes: string | null }>(),
    );
    // No stats row: the user has never written anything.
    if (!row) return { version: 0, horizon: 0, changes: known === 0 ? undefined : pageOf(empty, since, size) };
    if (row.changes === null) return { version: row.version, horizon: row.horizon };
    return { version: row.version, horizon: row.horizon, changes: pageOf(row.changes, since, size) };
  };
  return Object.assign(read, { statement: query });
}
