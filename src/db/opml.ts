import { and, eq, isNull } from "drizzle-orm";
import { subscriptions } from "./schema";
import { call, type Database } from "./subscriptions";

/**
 * Every active subscription of the user in list order (subscribedAt, then guid), guid and feed URL
 * only: the OPML export. One statement, served by the partial covering index of the list
 * (`subscriptions_active_page`): no table scan, no sort, tombstones never read.
 */
export async function listActiveFeeds(db: Database, userId: string): Promise<{ guid: string; feedUrl: string }[]> {
  return call(() =>
    db
      .select({ guid: subscriptions.guid, feedUrl: subscriptions.feedUrl })
      .from(subscriptions)
      .where(and(eq(subscriptions.userId, userId), isNull(subscriptions.unsubscribedAt)))
      .orderBy(subscriptions.subscribedAt, subscriptions.guid),
  );
}
