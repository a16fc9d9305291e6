import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
import { podcastJson, podcastOf } from "./feeds";
import { keysetPages } from "./keyset-pages";
import { subscriptions as s } from "./schema";
import { type Statement, statement } from "./statements";
import type { FeedItem } from "./subscriptions";
import { FEED_URL, storedUrl } from "./url-pieces";

/**
 * Rows per read of the OPML export. A row holds at most a 2 KB URL, and its outline at most twice that
 * URL escaped (`&quot;` is 6 bytes for 1): ~25 KB, so a page's text stays under ~3 MB whatever the
 * account holds, and each read holds the database for a few hundred index entries only.
 */
export const OPML_EXPORT_PAGE_ROWS = 100;

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

/**
 * One page of the user's active subscriptions in list order (subscribedAt, then subscribedSeq), after a cursor:
 * keyset paging, so every page costs its own rows however deep into the list it is. Served by the partial
 * index of the list (`subscriptions_active_page`): no table scan, no sort, tombstones never read. With the
 * podcasts (the OPML export), each row's feed is looked up by primary key in the same statement.
 */
function activeFeedsPageStatementOf(podcasts: boolean): Statement {
  const podcast = podcasts ? sql`, ${podcastJson("subscriptions")} AS podcast` : sql``;
  return statement(sql`
  SELECT ${s.guid} AS guid, ${storedUrl(FEED_URL, "subscriptions")} AS feedUrl, ${s.subscribedAt} AS subscribedAt,
    ${s.subscribedSeq} AS subscribedSeq${podcast} FROM ${s}
  WHERE ${s.userId} = ${sql.placeholder("userId")} AND ${s.unsubscribedAt} IS NULL
    AND (${s.subscribedAt}, ${s.subscribedSeq}) > (${sql.placeholder("afterAt")}, ${sql.placeholder("afterSeq")})
  ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}
  LIMIT ${sql.placeholder("limit")}`);
}

const activeFeedsPageStatement = activeFeedsPageStatementOf(false);
const activeFeedsWithPodcastsPageStatement = activeFeedsPageStatementOf(true);

function pagesOf<Row extends ExportRow>(
  db: Database,
  user: string,
  query: Statement,
  pageRows: number,
  toRow: (row: Record<string, unknown>) => Row,
): AsyncGenerator<Row[], void, undefined> {
  return keysetPages(
    async (after: ExportCursor, limit) =>
      (
        await call(() =>
          query
            .bind(db, { userId: user, afterAt: after.subscribedAt, afterSeq: after.subscribedSeq, limit })
            .all<Record<string, unknown>>(),
        )
      ).results.map(toRow),
    START,
    (last) => ({ subscribedAt: last.subscribedAt, subscribedSeq: last.subscribedSeq }),
    pageRows,
  );
}

/**
 * The user's active feeds, page by page (one D1 call each), in list order (keyset-pages.ts). Not one
 * snapshot: a subscription made while the pages are read appears when it sorts after the pages already read.
 */
export function activeFeedPages(
  db: Database,
  user: string,
  pageRows = OPML_EXPORT_PAGE_ROWS,
): AsyncGenerator<ExportRow[], void, undefined> {
  return pagesOf(db, user, activeFeedsPageStatement, pageRows, (row) => row as unknown as ExportRow);
}

/** `activeFeedPages` with each feed's podcast title and site URL, for the OPML exports. */
export function activeFeedPagesWithPodcasts(
  db: Database,
  user: string,
  pageRows = OPML_EXPORT_PAGE_ROWS,
): AsyncGenerator<ExportPodcastRow[], void, undefined> {
  return pagesOf(db, user, activeFeedsWithPodcastsPageStatement, pageRows, ({ podcast, ...row }) => {
    const known = podcast === null ? undefined : podcastOf(podcast as string);
    return { ...(row as unknown as ExportRow), title: known?.title ?? null, siteUrl: known?.siteUrl ?? null };
  });
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const opmlStatements: Record<string, Statement> = {
  activeFeedsPage: activeFeedsPageStatement,
  activeFeedsWithPodcastsPage: activeFeedsWithPodcastsPageStatement,
};
