/**
 * Reads that answer more rows than one D1 call should hold the database for, as keyset pages: each page
 * starts after the previous page's last key, so every page costs its own rows however deep it is, and only
 * one page is held in the isolate at a time. Not one snapshot: a row written while the pages are read shows
 * when its key sorts after the pages already read. (The gpodder GETs whose text SQLite writes cut their pages by
 * that text: text-pages.ts.)
 */

/** Pages of `size` rows each. */
export async function* keysetPages<Row, Key>(
  read: (after: Key, limit: number) => Promise<Row[]>,
  start: Key,
  keyOf: (last: Row) => Key,
  size: number,
): AsyncGenerator<Row[], void, undefined> {
  let after = start;
  for (;;) {
    const rows = await read(after, size);
    if (rows.length > 0) yield rows;
    if (rows.length < size) return;
    after = keyOf(rows[rows.length - 1]);
  }
}
