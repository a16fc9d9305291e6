-- The list's page index carries `guid` and `unsubscribed_at` (always NULL in it, one byte an entry), so a walk
-- of it needs no table lookup: SQLite checks a partial index's `unsubscribed_at IS NULL` against the table
-- row otherwise, and a list page's OFFSET looked every skipped row up (34-46 ms for the deepest page at the
-- budget). The order is unchanged: (subscribed_at, subscribed_seq), then guid as before (the primary key's
-- tail of every entry).
DROP INDEX `subscriptions_active_page`;
--> statement-breakpoint
CREATE INDEX `subscriptions_active_page` ON `subscriptions` (`user_id`,`subscribed_at`,`subscribed_seq`,`guid`,`unsubscribed_at`) WHERE "subscriptions"."unsubscribed_at" is null;
