/**
 * Reads that answer more rows than one D1 call should hold the database for, as keyset pages: each page
 * starts after the previous page's last key, so every page costs its own rows however deep it is, and only
 * one page is held in the isolate at a time. Not one snapshot: a row written while the pages are read shows
 * when its key sorts after the pages already read.
 */

/**
 * Pages that grow while their text is short. Rows are what a page costs the database; the text they hold (URLs
 * of a few bytes up to 2 KB each) is what it costs the isolate. A walk starts with pages of `first` rows; after a
 * page whose text was short, it asks for as many rows as that page's text per row says fit in `text`
 * characters, never fewer than `first` nor more than `max`. An account of short URLs is read in a fifth of the
 * round trips; one of long URLs in pages no larger than `first` rows.
 */
export interface GrowingPages<Row> {
  first: number;
  max: number;
  text: number;
  /** The characters of text a page holds. */
  textOf: (rows: readonly Row[]) => number;
}

/** The rows the page after `rows` asks for. */
function nextPageRows<Row>(size: GrowingPages<Row>, rows: readonly Row[]): number {
  const text = size.textOf(rows);
  const fitting = text === 0 ? size.max : Math.floor((rows.length * size.text) / text);
  return Math.min(size.max, Math.max(size.first, fitting));
}

/** Pages of `size` rows each, or pages that grow while their text is short. */
export async function* keysetPages<Row, Key>(
  read: (after: Key, limit: number) => Promise<Row[]>,
  start: Key,
  keyOf: (last: Row) => Key,
  size: number | GrowingPages<Row>,
): AsyncGenerator<Row[], void, undefined> {
  let after = start;
  let limit = typeof size === "number" ? size : size.first;
  for (;;) {
    const rows = await read(after, limit);
    if (rows.length > 0) yield rows;
    if (rows.length < limit) return;
    after = keyOf(rows[rows.length - 1]);
    if (typeof size !== "number") limit = nextPageRows(size, rows);
  }
}
