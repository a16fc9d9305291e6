-- The change feed (incremental sync). drizzle-kit generated the column and index changes; this file is
-- written by hand because SQLite cannot add a NOT NULL column without a default, drizzle-kit cannot
-- declare WITHOUT ROWID, and existing rows need change numbers.
--
-- 1. Rebuild `subscriptions` WITHOUT ROWID with `change_seq`. Existing rows get their user's change
--    numbers in list order (subscribed_at, guid), tombstones included, so a first sync from 0 returns
--    everything a device could know about.
CREATE TABLE `subscriptions_change_feed` (
	`user_id` text NOT NULL,
	`guid` text NOT NULL,
	`feed_url` text NOT NULL,
	`subscribed_at` integer NOT NULL,
	`unsubscribed_at` integer,
	`change_seq` integer NOT NULL,
	PRIMARY KEY(`user_id`, `guid`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `subscriptions_change_feed` (`user_id`, `guid`, `feed_url`, `subscribed_at`, `unsubscribed_at`, `change_seq`)
SELECT `user_id`, `guid`, `feed_url`, `subscribed_at`, `unsubscribed_at`,
	row_number() OVER (PARTITION BY `user_id` ORDER BY `subscribed_at`, `guid`)
FROM `subscriptions`;
--> statement-breakpoint
-- Drops the old triggers and indexes with the table.
DROP TABLE `subscriptions`;
--> statement-breakpoint
ALTER TABLE `subscriptions_change_feed` RENAME TO `subscriptions`;
--> statement-breakpoint
CREATE INDEX `subscriptions_active_page` ON `subscriptions` (`user_id`,`subscribed_at`,`guid`,`feed_url`) WHERE "subscriptions"."unsubscribed_at" is null;
--> statement-breakpoint
CREATE INDEX `subscriptions_changes` ON `subscriptions` (`user_id`,`change_seq`,`feed_url`,`subscribed_at`,`unsubscribed_at`);
--> statement-breakpoint
-- 2. Rebuild `user_stats` WITHOUT ROWID (its text primary key is then its only b-tree: a user's first
--    write inserts one row, not two) with `stored_count` (active and tombstones, for the per-user quota).
--    `version` becomes the user's latest change number (it counted every write before; now it is
--    exactly max(change_seq)).
CREATE TABLE `user_stats_change_feed` (
	`user_id` text PRIMARY KEY NOT NULL,
	`active_count` integer DEFAULT 0 NOT NULL,
	`stored_count` integer DEFAULT 0 NOT NULL,
	`version` integer DEFAULT 0 NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `user_stats_change_feed` (`user_id`, `active_count`, `stored_count`, `version`)
SELECT `user_stats`.`user_id`, coalesce(counts.active, 0), coalesce(counts.stored, 0), coalesce(counts.latest, 0)
FROM `user_stats` LEFT JOIN (
	SELECT `user_id`, sum(`unsubscribed_at` IS NULL) AS active, count(*) AS stored, max(`change_seq`) AS latest
	FROM `subscriptions` GROUP BY `user_id`
) AS counts ON counts.`user_id` = `user_stats`.`user_id`;
--> statement-breakpoint
DROP TABLE `user_stats`;
--> statement-breakpoint
ALTER TABLE `user_stats_change_feed` RENAME TO `user_stats`;
--> statement-breakpoint
-- 3. Triggers keep user_stats in step inside the writing statement (one D1 round trip per write). A
--    write that changes a subscription sets its change_seq to version + 1; the trigger then records it
--    as the user's version. An UPDATE that leaves change_seq alone changes nothing the feed reports.
CREATE TRIGGER `subscriptions_after_insert` AFTER INSERT ON `subscriptions`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `active_count`, `stored_count`, `version`)
	VALUES (NEW.`user_id`, NEW.`unsubscribed_at` IS NULL, 1, NEW.`change_seq`)
	ON CONFLICT (`user_id`) DO UPDATE SET
		`active_count` = `active_count` + excluded.`active_count`,
		`stored_count` = `stored_count` + 1,
		`version` = excluded.`version`;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_update` AFTER UPDATE OF `change_seq` ON `subscriptions`
WHEN NEW.`change_seq` IS NOT OLD.`change_seq`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` + (NEW.`unsubscribed_at` IS NULL) - (OLD.`unsubscribed_at` IS NULL),
		`version` = NEW.`change_seq`
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
-- Rows are deleted only when a user's rows leave a database (a bucket move); the change number stays.
CREATE TRIGGER `subscriptions_after_delete` AFTER DELETE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` - (OLD.`unsubscribed_at` IS NULL),
		`stored_count` = `stored_count` - 1
	WHERE `user_id` = OLD.`user_id`;
END;
