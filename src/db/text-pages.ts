import { type SQL, sql } from "drizzle-orm";

/**
 * Long answers whose JSON text SQLite writes, a page per D1 call, each page cut by the size of its text (the gpodder
 * GETs that grow with the account: docs/API.md §14). A page statement walks up to `limit` rows in key order, writes
 * each row's item (NULL when the row says nothing), and keeps the rows up to where their text reaches `bytes`: the
 * isolate splices the text without parsing it, and what one call answers stays bounded however long the URLs are.
 * A page starts after the last row the page before kept, so the rows walked past the cut are walked again: the
 * next page asks for about as many rows as the cut one kept.
 */

/**
 * A page statement, in one pass over the rows walked: `sized` is a SELECT of them in key order (`seq`; `size`, an
 * upper bound of the bytes of the row's item, 0 when it has none; and any other columns), a row is kept while the
 * items before it hold less than `bytes`, and `item` (an expression of the row, `cut`) is evaluated for the kept rows
 * with a size alone: a walk of 12 500 rows of 2 KB URLs would otherwise write 150 MB of text for SQLite to cut 4 MiB
 * from. It answers `columns` (expressions of no row) and the page's own: the rows walked and kept, the last key
 * kept, and the items with their keys. The rows reach the aggregate in key order (`itemsText` checks it). D1 counts
 * a row read for the walk, and two for the running sum (its sort and its frame).
 */
export function textPageSelect(columns: SQL, sized: SQL, item: SQL): SQL {
  const told = sql`cut.kept AND cut.size > 0`;
  return sql`SELECT ${columns}, count(*) AS walked, coalesce(sum(cut.kept), 0) AS kept,
    max(CASE WHEN cut.kept THEN cut.seq END) AS last, coalesce(sum(CASE WHEN cut.kept THEN cut.size END), 0) AS size,
    coalesce(group_concat(CASE WHEN ${told} THEN cut.seq END, ','), '') || ' '
      || coalesce(group_concat(CASE WHEN ${told} THEN ${item} END, ','), '') AS items
  FROM (SELECT *, sum(size) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - size < ${sql.placeholder("bytes")} AS kept
    FROM (${sized})) AS cut`;
}

/** What a page statement answers (`textPageSelect`). */
export interface TextPageRow {
  walked: number;
  kept: number;
  last: number | null;
  /** The bound of the kept items' bytes. */
  size: number;
  /** The kept items' keys (comma-separated), a space, then their texts (comma-separated). */
  items: string;
}

/** A page: its items' text (comma-separated JSON values, "" for none), and the rows its walk read. */
export interface TextPage {
  text: string;
  walked: number;
}

/** How a walk's pages are sized: rows walked at most, at least after a cut page, and the text kept. */
export interface TextPageSize {
  rows: number;
  min: number;
  bytes: number;
}

/**
 * The items' text in key order. An aggregate does not promise to keep its input order, but both lists come from one
 * pass over the same rows: the keys show the items' order, and a page that did not come in key order is put in order
 * here. Each item starts with `start`, which no item holds unescaped elsewhere (a quote inside a JSON string reads
 * `\"`), so the text splits at `,${start}`.
 */
export function itemsText(items: string, start: string): string {
  const space = items.indexOf(" ");
  const text = items.slice(space + 1);
  if (space === 0) return text;
  if (keysAscend(items, space)) return text;
  const seqs = items.slice(0, space).split(",").map(Number);
  const parts = text.split(`,${start}`);
  // Splitting took the start of every item but the first.
  const item = (i: number) => (i === 0 ? parts[0] : `${start}${parts[i]}`);
  return [...seqs.keys()]
    .sort((i, j) => seqs[i] - seqs[j])
    .map(item)
    .join(",");
}

/**
 * Whether the comma-separated keys in `items` before `end` ascend, read digit by digit: the common case, checked on
 * every page (splitting 10 000 keys into numbers was a tenth of the heavy listener's episode GET in the bench's
 * profile).
 */
function keysAscend(items: string, end: number): boolean {
  let previous = -1;
  let key = 0;
  for (let i = 0; i <= end; i++) {
    const code = i < end ? items.charCodeAt(i) : 44;
    if (code !== 44) {
      key = key * 10 + code - 48;
      continue;
    }
    if (key < previous) return false;
    previous = key;
    key = 0;
  }
  return true;
}

/**
 * The rows the page after `row` (which asked for `limit`) asks for, undefined when `row` was the last page: after a
 * page cut by its text, as many rows as it kept; after a whole one, as many as its rows' sizes say fit (a walk past a
 * cut reads rows it walks again next time).
 */
export function nextPageLimit(row: TextPageRow, limit: number, size: TextPageSize): number | undefined {
  if (row.kept === row.walked && row.walked < limit) return undefined;
  const fitting = row.kept < row.walked ? row.kept : Math.floor((row.walked * size.bytes) / Math.max(1, row.size));
  return Math.min(size.rows, Math.max(size.min, fitting));
}

/**
 * Every page of a walk, the first already read (`firstLimit` rows asked), the next ones read by `read(after, limit)`
 * as they are asked for. `start` begins every item (`itemsText`).
 */
export async function* textPages(
  first: TextPageRow,
  firstLimit: number,
  read: (after: number, limit: number) => Promise<TextPageRow>,
  size: TextPageSize,
  start: string,
): AsyncGenerator<TextPage, void, undefined> {
  let row = first;
  let limit: number | undefined = firstLimit;
  for (;;) {
    yield { text: itemsText(row.items, start), walked: row.walked };
    limit = nextPageLimit(row, limit, size);
    if (limit === undefined) return;
    row = await read(row.last as number, limit);
  }
}
