import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per (user, feed). Unsubscribing sets `unsubscribedAt` instead of deleting the row, so the
 * row stays as a tombstone that the change feed reports; subscribing again revives it.
 * Times are milliseconds since the Unix epoch (UTC).
 *
 * The table is `WITHOUT ROWID` (see the migration drizzle/0003_change_feed.sql; drizzle-kit cannot
 * declare it): the primary key is the table's own b-tree, so a write touches one b-tree fewer.
 */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    userId: text("user_id").notNull(),
    guid: text("guid").notNull(),
    feedUrl: text("feed_url").notNull(),
    subscribedAt: integer("subscribed_at").notNull(),
    unsubscribedAt: integer("unsubscribed_at"),
    /**
     * The user's change number of this row's last change (new, revived, unsubscribed, feed moved).
     * Assigned inside the writing statement from `user_stats.version`, so numbers never repeat and a
     * number is never visible before its row.
     */
    changeSeq: integer("change_seq").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.guid] }),
    // Serves the list order (subscribedAt, guid) per user over active rows only, and covers the columns
    // a page returns: a page of N costs N index entries, never a table lookup, and tombstones are never read.
    index("subscriptions_active_page")
      .on(table.userId, table.subscribedAt, table.guid, table.feedUrl)
      .where(sql`${table.unsubscribedAt} is null`),
    // Serves the change feed: a page of changes after a token costs its own entries however long the
    // history, and covers every column the feed returns (guid comes with the primary key).
    index("subscriptions_changes").on(
      table.userId,
      table.changeSeq,
      table.feedUrl,
      table.subscribedAt,
      table.unsubscribedAt,
    ),
  ],
);

/**
 * Per-user summary kept in step with `subscriptions` by triggers (also `WITHOUT ROWID`, see the migration) (see the custom migrations in drizzle/):
 * `activeCount` answers `meta.total` without a count scan; `storedCount` (active and tombstones) enforces
 * the per-user quota; `version` is the user's latest change number: the sync token and the ETag.
 */
export const userStats = sqliteTable("user_stats", {
  userId: text("user_id").primaryKey(),
  activeCount: integer("active_count").notNull().default(0),
  storedCount: integer("stored_count").notNull().default(0),
  version: integer("version").notNull().default(0),
});
