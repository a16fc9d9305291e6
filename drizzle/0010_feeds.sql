-- Feeds (docs/API.md §18): what the service knows about each feed an active subscription names, one row per feed
-- URL in each database, filled by the feed round (src/feeds/round.ts). drizzle-kit generated the table and indexes;
-- the triggers and the first rows are written by hand.
--
-- A feed row is made `pending` by a trigger whenever a subscription becomes active with a key: a subscribe, a
-- revival, a feed move, and the retention cron's key backfill of rows from before 0004. The triggers know only the
-- key (a row's `feed_url` may be a cut head, drizzle/0007): the round reads the whole URL from a subscription. They
-- insert only a key not there yet rather than `INSERT OR IGNORE`: a statement's own conflict clause (the subscribe's
-- upsert) overrides the one of a statement its triggers run.
CREATE TABLE `feeds` (
	`url_key` integer PRIMARY KEY NOT NULL,
	`url` text,
	`final_url` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`last_error` text,
	`title` text,
	`author` text,
	`description` text,
	`image_url` text,
	`site_url` text,
	`language` text,
	`podcast_guid` text,
	`new_feed_url` text,
	`fetched_at` integer,
	`failing_since` integer,
	`failures` integer DEFAULT 0 NOT NULL,
	`next_fetch_at` integer DEFAULT 0 NOT NULL,
	`etag` text,
	`last_modified` text
);
--> statement-breakpoint
CREATE INDEX `feeds_due` ON `feeds` (`next_fetch_at`);--> statement-breakpoint
CREATE INDEX `subscriptions_feed_active` ON `subscriptions` (`url_key`) WHERE "subscriptions"."unsubscribed_at" is null;--> statement-breakpoint
CREATE TRIGGER `subscriptions_feed_insert` AFTER INSERT ON `subscriptions`
WHEN NEW.`unsubscribed_at` IS NULL AND NEW.`url_key` IS NOT NULL
BEGIN
	INSERT INTO `feeds` (`url_key`) SELECT NEW.`url_key` WHERE NOT EXISTS (SELECT 1 FROM `feeds` WHERE `url_key` = NEW.`url_key`);
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_feed_update` AFTER UPDATE OF `url_key`, `unsubscribed_at` ON `subscriptions`
WHEN NEW.`unsubscribed_at` IS NULL AND NEW.`url_key` IS NOT NULL
	AND (OLD.`unsubscribed_at` IS NOT NULL OR NEW.`url_key` IS NOT OLD.`url_key`)
BEGIN
	INSERT INTO `feeds` (`url_key`) SELECT NEW.`url_key` WHERE NOT EXISTS (SELECT 1 FROM `feeds` WHERE `url_key` = NEW.`url_key`);
END;
--> statement-breakpoint
INSERT OR IGNORE INTO `feeds` (`url_key`)
SELECT DISTINCT `url_key` FROM `subscriptions` WHERE `unsubscribed_at` IS NULL AND `url_key` IS NOT NULL;
