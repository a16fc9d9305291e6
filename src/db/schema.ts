import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per (user, feed). Unsubscribing sets `unsubscribedAt` instead of deleting the row, so the
 * row stays as a tombstone that a later incremental sync can report; subscribing again revives it.
 * Times are milliseconds since the Unix epoch (UTC).
 */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    userId: text("user_id").notNull(),
    guid: text("guid").notNull(),
    feedUrl: text("feed_url").notNull(),
    subscribedAt: integer("subscribed_at").notNull(),
    unsubscribedAt: integer("unsubscribed_at"),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.guid] }),
    // Serves the list order (subscribedAt, guid) per user over active rows only, and covers the columns
    // a page returns: a page of N costs N index entries, never a table lookup, and tombstones are never read.
    index("subscriptions_active_page")
      .on(table.userId, table.subscribedAt, table.guid, table.feedUrl)
      .where(sql`${table.unsubscribedAt} is null`),
  ],
);

/**
 * Per-user summary kept in step with `subscriptions` by triggers (see the custom migration in drizzle/):
 * `activeCount` answers `meta.total` without a count scan; `version` grows with every write and makes the ETag.
 */
export const userStats = sqliteTable("user_stats", {
  userId: text("user_id").primaryKey(),
  activeCount: integer("active_count").notNull().default(0),
  version: integer("version").notNull().default(0),
});

export type SubscriptionRow = typeof subscriptions.$inferSelect;
