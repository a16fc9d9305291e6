import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
import { podcastNameJson } from "./feeds";
import { subscriptions as s } from "./schema";
import { type Statement, statement } from "./statements";
import type { FeedItem } from "./subscriptions";
import { feedListFitsSql, MAX_STORED_SUBSCRIPTIONS } from "./subscriptions";
import type { TextPageSize } from "./text-pages";
import { FEED_URL, quotedBytesAtMost, storedUrl } from "./url-pieces";

/**
 * The rows the exports hand on at a time (the OPML export, the simple API's lists): a row holds at most a 2 KB URL,
 * and its outline at most twice that URL escaped (`&quot;` is 6 bytes for 1) and its podcast's names: ~30 KB, so
 * what is written at once stays under ~3 MB whatever the account holds. A D1 page holds many of these.
 */
export const OPML_EXPORT_PAGE_ROWS = 100;

/**
 * The D1 pages of the exports: the whole account (at most 10 000 rows) in one walk, cut where the rows' JSON text
 * reaches 1.5 MiB. A row of a short URL with its podcast's names is ~250 bytes: an account of 10 000 such feeds is
 * two calls, without the names one; an account of 2 KB URLs is read in pages of ~350. A page holds at most ~15 MiB
 * at its peak: D1's answer escapes the text again (at most twice its bytes), the text parsed from it and the rows
 * parsed from that take at most twice its bytes each (UTF-16), and the outlines of 100 rows written from them ~6 MB.
 */
export const EXPORT_PAGES: TextPageSize = { rows: MAX_STORED_SUBSCRIPTIONS + 1, min: 100, bytes: 1.5 * 1024 * 1024 };

/**
 * Where the next page of the export starts: after this (subscribedAt, subscribedSeq), in list order. The pair
 * is unique among a user's rows, so no row is skipped at a page boundary: subscribedSeq is the change number
 * the (re)subscription took (migration 0004 gave older rows their change number), and change numbers are
 * never handed out twice, purges and erasure included.
 */
export interface ExportCursor {
  subscribedAt: number;
  subscribedSeq: number;
}

/** Before every row: subscribed_at is a non-negative millisecond time. */
const START: ExportCursor = { subscribedAt: -1, subscribedSeq: -1 };

type ExportRow = FeedItem & ExportCursor;

/** An exported feed with what the service knows of its podcast (docs/API.md §18): null when unknown. */
export type ExportPodcastRow = ExportRow & { title: string | null; siteUrl: string | null };

/** A row's JSON text beyond its URL and its podcast's names: two numbers, a guid, brackets and commas. */
const ROW_REST_BYTES = 80;
/** A feed URL as a JSON string (at most twice its 2 048 bytes, and its quotes). */
const MAX_QUOTED_URL = 2 * 2048 + 2;

/**
 * One page of the user's active subscriptions in list order (subscribedAt, then subscribedSeq), after a cursor, cut
 * by the size of its text (as text-pages.ts cuts the gpodder GETs' pages): the walk of up to `limit` rows is served by
 * the partial index of the list (`subscriptions_active_page`: no table scan, no sort of the table, tombstones never
 * read), a row is kept while the rows before it hold less than `bytes`, and SQLite writes the kept rows as one text of
 * JSON arrays `[subscribedAt, subscribedSeq, guid, feedUrl(, [title, siteUrl] | null)]`: one D1 call answers as many
 * rows as fit, not a fixed hundred. With the podcasts (the OPML exports), each walked row's feed is looked up by its
 * primary key. D1 counts three rows read per row walked (the walk, and the running sum's sort and frame) and the
 * lookups: the exports trade rows read for round trips (docs/decisions.md, Performance).
 */
function exportPageStatementOf(podcasts: boolean): Statement {
  const names = podcasts ? sql`${podcastNameJson("subscriptions")}` : sql`NULL`;
  const namesItem = podcasts ? sql`, json(cut.names)` : sql``;
  return statement(sql`SELECT count(*) AS walked, coalesce(sum(cut.kept), 0) AS kept,
    coalesce(sum(CASE WHEN cut.kept THEN cut.size END), 0) AS size,
    coalesce(group_concat(CASE WHEN cut.kept THEN json_array(cut.subscribed_at, cut.subscribed_seq, cut.guid,
      ${storedUrl(FEED_URL, "cut")}${namesItem}) END, ','), '') AS items
  FROM (SELECT *, sum(size) OVER (ORDER BY subscribed_at, subscribed_seq ROWS UNBOUNDED PRECEDING) - size
      < ${sql.placeholder("bytes")} AS kept
    FROM (SELECT ${s.userId} AS user_id, ${s.guid} AS guid, ${s.feedUrl} AS feed_url,
        ${s.subscribedAt} AS subscribed_at, ${s.subscribedSeq} AS subscribed_seq, ${names} AS names,
        ${quotedBytesAtMost(FEED_URL, "subscriptions", MAX_QUOTED_URL)} + coalesce(length(CAST(${names} AS BLOB)), 4)
          + ${sql.raw(String(ROW_REST_BYTES))} AS size
      FROM ${s}
      WHERE ${s.userId} = ${sql.placeholder("userId")} AND ${s.unsubscribedAt} IS NULL
        AND (${s.subscribedAt}, ${s.subscribedSeq}) > (${sql.placeholder("afterAt")}, ${sql.placeholder("afterSeq")})
      ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}
      LIMIT ${podcasts ? sql.placeholder("limit") : sql`CASE WHEN ${sql.placeholder("whole")} AND ${exportFits} THEN 0 ELSE ${sql.placeholder("limit")} END`})) AS cut`);
}

/**
 * Whether the list without the podcasts fits one page by the stats' bound (a row's size below: its URL's JSON string,
 * `names` NULL, and the rest; `feedListFitsSql` counts the string and a comma). A LIMIT of 0 ends a walk before its
 * first row (a condition of no row in WHERE is tested at each row walked).
 */
const exportFits = feedListFitsSql(sql.placeholder("userId"), sql.placeholder("bytes"), 4 + ROW_REST_BYTES - 1);

/**
 * The first page of the list without the podcasts (the simple API's), when it fits one page (`exportFits`; else it
 * walks nothing, and the page statement beside it, which then walks, answers): the walk alone, a row read per row.
 */
const wholeExportStatement = statement(sql`SELECT ${exportFits} AS fits, count(*) AS walked, count(*) AS kept,
    coalesce(sum(listed.size), 0) AS size,
    coalesce(group_concat(json_array(listed.subscribed_at, listed.subscribed_seq, listed.guid, ${storedUrl(FEED_URL, "listed")}), ','), '') AS items
  FROM (SELECT ${s.userId} AS user_id, ${s.guid} AS guid, ${s.feedUrl} AS feed_url,
      ${s.subscribedAt} AS subscribed_at, ${s.subscribedSeq} AS subscribed_seq,
      ${quotedBytesAtMost(FEED_URL, "subscriptions", MAX_QUOTED_URL)} + ${sql.raw(String(4 + ROW_REST_BYTES))} AS size
    FROM ${s}
    WHERE ${s.userId} = ${sql.placeholder("userId")} AND ${s.unsubscribedAt} IS NULL
    ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}
    LIMIT CASE WHEN ${exportFits} THEN -1 ELSE 0 END) AS listed`);

const exportPageStatement = exportPageStatementOf(false);
const exportWithPodcastsPageStatement = exportPageStatementOf(true);

/** The export statements (tests of what each reads). */
export const exportStatements = { whole: wholeExportStatement, page: exportPageStatement };

/** What a page statement answers. */
interface ExportPageRow {
  /** On the whole page (`wholeExportStatement`) alone: whether it answered. */
  fits?: number;
  walked: number;
  kept: number;
  size: number;
  items: string;
}

type ExportItem = [number, number, string, string, [string | null, string | null] | null | undefined];

/**
 * A page's rows in list order. An aggregate does not promise to keep its input order: each row carries its key, and
 * a page that did not come in order is put in order here (the common case is checked, not sorted).
 */
function rowsOf(page: ExportPageRow): ExportPodcastRow[] {
  const items = JSON.parse(`[${page.items}]`) as ExportItem[];
  const before = (a: ExportItem, b: ExportItem) => a[0] - b[0] || a[1] - b[1];
  if (items.some((item, i) => i > 0 && before(items[i - 1], item) > 0)) items.sort(before);
  return items.map(([subscribedAt, subscribedSeq, guid, feedUrl, names]) => ({
    guid,
    feedUrl,
    subscribedAt,
    subscribedSeq,
    title: names?.[0] ?? null,
    siteUrl: names?.[1] ?? null,
  }));
}

/**
 * The rows the page after `page` (which asked for `limit`) asks for, undefined when `page` was the last: after a page
 * cut by its text, as many rows as it kept; after a whole one, as many as its rows' sizes say fit.
 */
function nextLimit(page: ExportPageRow, limit: number, size: TextPageSize): number | undefined {
  if (page.kept === page.walked && page.walked < limit) return undefined;
  const fitting = page.kept < page.walked ? page.kept : Math.floor((page.walked * size.bytes) / Math.max(1, page.size));
  return Math.min(size.rows, Math.max(size.min, fitting));
}

/**
 * Rows handed on at once, and the rows their D1 page walked (what the simple API's lists are charged): all of them on
 * the page's first slice, 0 on the others.
 */
export type ExportSlice<Row> = Row[] & { walked: number };

/** Statements to run in the same batch as the first page (a request's credential guard and path device). */
export interface FirstPageBatch {
  statements: D1PreparedStatement[];
  /** Runs the batch (to turn a guard's failure into its error). */
  run: (batch: () => Promise<void>) => Promise<void>;
}

async function* pagesOf(
  db: Database,
  user: string,
  query: Statement,
  options: { size?: TextPageSize; first?: FirstPageBatch; whole?: Statement },
): AsyncGenerator<ExportSlice<ExportPodcastRow>, void, undefined> {
  const size = options.size ?? EXPORT_PAGES;
  const bound = (after: ExportCursor, limit: number, whole = 0) =>
    query.bind(db, {
      userId: user,
      afterAt: after.subscribedAt,
      afterSeq: after.subscribedSeq,
      limit,
      bytes: size.bytes,
      whole,
    });
  let after = START;
  let limit: number | undefined = size.rows;
  // The first page: the whole list in one walk when it fits one page (`options.whole`), else the page statement.
  const firsts = [
    ...(options.whole ? [options.whole.bind(db, { userId: user, bytes: size.bytes })] : []),
    bound(after, limit, options.whole ? 1 : 0),
  ];
  const { first } = options;
  let results: D1Result[] = [];
  const statements = [...(first?.statements ?? []), ...firsts];
  const run = async () => {
    results = await call(() => db.batch(statements));
  };
  await (first ? first.run(run) : run());
  const answers = results.slice(-firsts.length).map((result) => result.results[0] as unknown as ExportPageRow);
  let page = options.whole && answers[0].fits ? answers[0] : answers[answers.length - 1];
  for (;;) {
    const rows = rowsOf(page);
    // Every row the D1 page walked (those past the cut too: the next page walks them again) goes with its first
    // slice, so a caller charging by `walked` charges a D1 page at once (one wait on the limiter per D1 call, not
    // one per slice: the simple list of 1 000 waited on it 9 times in turn, issue 39).
    let walked = page.walked;
    for (let i = 0; i < rows.length; i += OPML_EXPORT_PAGE_ROWS) {
      const slice = rows.slice(i, i + OPML_EXPORT_PAGE_ROWS);
      yield Object.assign(slice, { walked });
      walked = 0;
    }
    limit = nextLimit(page, limit, size);
    if (limit === undefined || rows.length === 0) return;
    const last = rows[rows.length - 1];
    after = { subscribedAt: last.subscribedAt, subscribedSeq: last.subscribedSeq };
    page = (await call(() => bound(after, limit as number).first())) as unknown as ExportPageRow;
  }
}

/**
 * The user's active feeds in list order, in slices of at most `OPML_EXPORT_PAGE_ROWS`, read a D1 page at a time as
 * they are asked for (one D1 call each: an account whose rows fit 1.5 MiB of text is one call, run in the batch of
 * `first` when given). Not one snapshot: a subscription made while the pages are read appears when it sorts after
 * the pages already read. `size`: other pages than the exports' (tests of the pages' seams).
 */
export function activeFeedPages(
  db: Database,
  user: string,
  options: { size?: TextPageSize; first?: FirstPageBatch } = {},
): AsyncGenerator<ExportSlice<ExportRow>, void, undefined> {
  return pagesOf(db, user, exportPageStatement, { ...options, whole: wholeExportStatement });
}

/** `activeFeedPages` with each feed's podcast title and site URL, for the OPML exports. */
export function activeFeedPagesWithPodcasts(
  db: Database,
  user: string,
  options: { size?: TextPageSize; first?: FirstPageBatch } = {},
): AsyncGenerator<ExportSlice<ExportPodcastRow>, void, undefined> {
  return pagesOf(db, user, exportWithPodcastsPageStatement, options);
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const opmlStatements: Record<string, Statement> = {
  activeFeedsPage: exportPageStatement,
  activeFeedsWithPodcastsPage: exportWithPodcastsPageStatement,
};
