import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
import { subscriptions as s } from "./schema";
import { type Statement, statement } from "./statements";
import type { FeedItem } from "./subscriptions";

/**
 * Every active subscription of the user in list order (subscribedAt, then subscribedSeq), guid and feed URL
 * only: the OPML export. One statement, served by the partial covering index of the list
 * (`subscriptions_active_page`): no table scan, no sort, tombstones never read.
 */
const activeFeedsStatement = statement(sql`
  SELECT ${s.guid} AS guid, ${s.feedUrl} AS feedUrl FROM ${s}
  WHERE ${s.userId} = ${sql.placeholder("userId")} AND ${s.unsubscribedAt} IS NULL
  ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}`);

export async function listActiveFeeds(db: Database, user: string): Promise<FeedItem[]> {
  const { results } = await call(() => activeFeedsStatement.bind(db, { userId: user }).all<FeedItem>());
  return results;
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const opmlStatements: Record<string, Statement> = { activeFeeds: activeFeedsStatement };
