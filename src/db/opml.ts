import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
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

/** Where the next page of the export starts: after this (subscribedAt, subscribedSeq), in list order. */
export interface ExportCursor {
  subscribedAt: number;
  subscribedSeq: number;
}

/** Before every row: subscribed_at is a non-negative millisecond time. */
const START: ExportCursor = { subscribedAt: -1, subscribedSeq: -1 };

type ExportRow = FeedItem & ExportCursor;

/**
 * One page of the user's active subscriptions in list order (subscribedAt, then subscribedSeq), after a cursor:
 * keyset paging, so every page costs its own rows however deep into the list it is. Served by the partial
 * index of the list (`subscriptions_active_page`): no table scan, no sort, tombstones never read.
 */
const activeFeedsPageStatement = statement(sql`
  SELECT ${s.guid} AS guid, ${storedUrl(FEED_URL, "subscriptions")} AS feedUrl, ${s.subscribedAt} AS subscribedAt,
    ${s.subscribedSeq} AS subscribedSeq FROM ${s}
  WHERE ${s.userId} = ${sql.placeholder("userId")} AND ${s.unsubscribedAt} IS NULL
    AND (${s.subscribedAt}, ${s.subscribedSeq}) > (${sql.placeholder("afterAt")}, ${sql.placeholder("afterSeq")})
  ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}
  LIMIT ${sql.placeholder("limit")}`);

/**
 * The user's active feeds, page by page (one D1 call each), in list order. Not one snapshot: a subscription
 * made while the export runs appears when it sorts after the pages already read.
 */
export async function* activeFeedPages(
  db: Database,
  user: string,
  pageRows = OPML_EXPORT_PAGE_ROWS,
): AsyncGenerator<FeedItem[], void, undefined> {
  let after = START;
  for (;;) {
    const { results } = await call(() =>
      activeFeedsPageStatement
        .bind(db, { userId: user, afterAt: after.subscribedAt, afterSeq: after.subscribedSeq, limit: pageRows })
        .all<ExportRow>(),
    );
    if (results.length > 0) yield results.map(({ guid, feedUrl }) => ({ guid, feedUrl }));
    if (results.length < pageRows) return;
    const last = results[results.length - 1];
    after = { subscribedAt: last.subscribedAt, subscribedSeq: last.subscribedSeq };
  }
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const opmlStatements: Record<string, Statement> = { activeFeedsPage: activeFeedsPageStatement };
