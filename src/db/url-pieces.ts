import { type SQL, sql } from "drizzle-orm";
import { urlPieces as p } from "./schema";

/**
 * Where a stored URL's text lives (drizzle/0007): its row keeps at most `headBytes` UTF-8 bytes (cut at a
 * character boundary, so up to 3 fewer) and `url_pieces` the rest, in up to `PIECES` pieces. These numbers must
 * match the migration's triggers, which do the cutting.
 */
interface UrlColumn {
  column: string;
  /** The primary key's second column (the piece's owner). */
  owner: string;
  field: number;
  headBytes: number;
}

const PIECES = 3;

export const FEED_URL: UrlColumn = { column: "feed_url", owner: "guid", field: 0, headBytes: 800 };
export const MEDIA_URL: UrlColumn = { column: "media_url", owner: "id", field: 1, headBytes: 600 };
export const ITEM_GUID: UrlColumn = { column: "item_guid", owner: "id", field: 2, headBytes: 200 };

/**
 * The whole stored text of `url` in the row `row` (the table's name or a query's alias for it): its head, and
 * when the head is long enough to have been cut, the pieces after it, each found by its primary key (a short
 * URL reads nothing more). Every read of these columns goes through it, comparisons with a request's URL too.
 */
export function storedUrl(url: UrlColumn, row: string): SQL {
  const at = (name: string) => sql.raw(`"${row}"."${name}"`);
  const head = at(url.column);
  const pieces = Array.from(
    { length: PIECES },
    (_, index) =>
      sql` || coalesce((SELECT ${p.piece} FROM ${p} WHERE ${p.userId} = ${at("user_id")} AND ${p.owner} = ${at(url.owner)} AND ${p.field} = ${sql.raw(String(url.field))} AND ${p.n} = ${sql.raw(String(index + 1))}), '')`,
  );
  return sql`(CASE WHEN length(CAST(${head} AS BLOB)) >= ${sql.raw(String(url.headBytes - 3))} THEN ${head}${sql.join(pieces)} ELSE ${head} END)`;
}

/** The UTF-8 bytes of the whole stored text (0 for NULL), for the storage budget. */
export function storedUrlBytes(url: UrlColumn, row: string): SQL {
  return sql`coalesce(length(CAST(${storedUrl(url, row)} AS BLOB)), 0)`;
}

/**
 * The UTF-8 bytes of the stored text's JSON string (`json_quote`), from the row's head alone (no piece read): a whole
 * head's exactly (its bytes, its quotes, and a byte more for each character JSON escapes: a quote, a backslash; the
 * code points that would take more are refused in this text, §15); for a head that was cut, an upper bound,
 * `maxQuoted`. 0 for NULL. What a page cut by its text size counts (db/text-pages.ts).
 */
export function quotedBytesAtMost(url: UrlColumn, row: string, maxQuoted: number): SQL {
  const head = sql.raw(`"${row}"."${url.column}"`);
  const bytes = sql`length(CAST(${head} AS BLOB))`;
  const escaped = sql`(length(${head}) - length(replace(replace(${head}, '"', ''), '\\', '')))`;
  return sql`(CASE WHEN ${head} IS NULL THEN 0 WHEN ${bytes} >= ${sql.raw(String(url.headBytes - 3))}
    THEN ${sql.raw(String(maxQuoted))} ELSE ${bytes} + ${escaped} + 2 END)`;
}
