-- Episode states (docs/API.md §13), app passwords, gpodder sessions and devices (§14), and subscriptions
-- with narrow indexes (no URL text in any index: every URL is stored once), the subscription order, the
-- database's receive time and a URL key. drizzle-kit generated the columns and indexes; this file is
-- finished by hand because drizzle-kit cannot declare WITHOUT ROWID, triggers or data changes.
--
-- 1. New per-user tables, WITHOUT ROWID: the primary key is the table's b-tree (one b-tree fewer per write).
CREATE TABLE `episodes` (
	`user_id` text NOT NULL,
	`id` text NOT NULL,
	`feed_guid` text NOT NULL,
	`media_url` text,
	`item_guid` text,
	`position` integer DEFAULT 0 NOT NULL,
	`duration` integer,
	`played` integer DEFAULT false NOT NULL,
	`position_changed_at` integer,
	`played_changed_at` integer,
	`change_seq` integer NOT NULL,
	`received_at` integer NOT NULL,
	`deleted_at` integer,
	PRIMARY KEY(`user_id`, `id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `episodes_changes` ON `episodes` (`user_id`,`change_seq`,`received_at`);
--> statement-breakpoint
CREATE TABLE `app_passwords` (
	`user_id` text NOT NULL,
	`id` text NOT NULL,
	`username` text NOT NULL,
	`label` text NOT NULL,
	`password_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	PRIMARY KEY(`user_id`, `id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `app_passwords_username` ON `app_passwords` (`username`);
--> statement-breakpoint
CREATE TABLE `gpodder_sessions` (
	`session_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`app_password_id` text NOT NULL,
	`created_at` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `gpodder_sessions_app_password` ON `gpodder_sessions` (`user_id`,`app_password_id`);
--> statement-breakpoint
CREATE TABLE `devices` (
	`user_id` text NOT NULL,
	`device_id` text NOT NULL,
	`caption` text DEFAULT '' NOT NULL,
	`type` text DEFAULT 'other' NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`user_id`, `device_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- 2. Subscriptions. The old indexes copied feed_url (a 2 KB URL was stored three times); the new ones hold
--    none. Existing rows: subscribed_seq = their change number (the order they were numbered in, list
--    order), received_at = 0 (before any gpodder `since` could be handed out), url_key NULL (SQL cannot
--    compute SHA-256; lookups by URL also check these rows by their URL).
DROP INDEX `subscriptions_active_page`;
--> statement-breakpoint
DROP INDEX `subscriptions_changes`;
--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `subscribed_seq` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `received_at` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `url_key` integer;
--> statement-breakpoint
UPDATE `subscriptions` SET `subscribed_seq` = `change_seq`;
--> statement-breakpoint
CREATE INDEX `subscriptions_active_page` ON `subscriptions` (`user_id`,`subscribed_at`,`subscribed_seq`) WHERE "subscriptions"."unsubscribed_at" is null;
--> statement-breakpoint
CREATE INDEX `subscriptions_changes` ON `subscriptions` (`user_id`,`change_seq`,`received_at`);
--> statement-breakpoint
CREATE INDEX `subscriptions_url` ON `subscriptions` (`user_id`,`url_key`);
--> statement-breakpoint
-- 3. user_stats: the episode counters and the stored URL bytes (the storage budget), filled from the rows.
ALTER TABLE `user_stats` ADD `episode_count` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `user_stats` ADD `episode_version` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `user_stats` ADD `url_bytes` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
UPDATE `user_stats` SET `url_bytes` = coalesce(
	(SELECT sum(length(CAST(`feed_url` AS BLOB))) FROM `subscriptions` WHERE `subscriptions`.`user_id` = `user_stats`.`user_id`), 0);
--> statement-breakpoint
-- 4. Triggers keep user_stats in step inside the writing statement (one D1 round trip per write). A write
--    that changes a row sets its change_seq to the next number; the trigger records it as the user's
--    version of that kind. An UPDATE that leaves change_seq alone changes nothing a feed reports.
--    `length(CAST(x AS BLOB))` is the UTF-8 byte length of text x.
DROP TRIGGER `subscriptions_after_insert`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_update`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_insert` AFTER INSERT ON `subscriptions`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `active_count`, `stored_count`, `version`, `url_bytes`)
	VALUES (NEW.`user_id`, NEW.`unsubscribed_at` IS NULL, 1, NEW.`change_seq`, length(CAST(NEW.`feed_url` AS BLOB)))
	ON CONFLICT (`user_id`) DO UPDATE SET
		`active_count` = `active_count` + excluded.`active_count`,
		`stored_count` = `stored_count` + 1,
		`version` = excluded.`version`,
		`url_bytes` = `url_bytes` + excluded.`url_bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_update` AFTER UPDATE OF `change_seq` ON `subscriptions`
WHEN NEW.`change_seq` IS NOT OLD.`change_seq`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` + (NEW.`unsubscribed_at` IS NULL) - (OLD.`unsubscribed_at` IS NULL),
		`version` = NEW.`change_seq`,
		`url_bytes` = `url_bytes` + length(CAST(NEW.`feed_url` AS BLOB)) - length(CAST(OLD.`feed_url` AS BLOB))
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
-- Rows are deleted only when they leave the database (a bucket move, a purge, an erased account); the
-- change number stays.
CREATE TRIGGER `subscriptions_after_delete` AFTER DELETE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` - (OLD.`unsubscribed_at` IS NULL),
		`stored_count` = `stored_count` - 1,
		`url_bytes` = `url_bytes` - length(CAST(OLD.`feed_url` AS BLOB))
	WHERE `user_id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_insert` AFTER INSERT ON `episodes`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `episode_count`, `episode_version`, `url_bytes`)
	VALUES (NEW.`user_id`, 1, NEW.`change_seq`,
		coalesce(length(CAST(NEW.`media_url` AS BLOB)), 0) + coalesce(length(CAST(NEW.`item_guid` AS BLOB)), 0))
	ON CONFLICT (`user_id`) DO UPDATE SET
		`episode_count` = `episode_count` + 1,
		`episode_version` = excluded.`episode_version`,
		`url_bytes` = `url_bytes` + excluded.`url_bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_update` AFTER UPDATE OF `change_seq` ON `episodes`
WHEN NEW.`change_seq` IS NOT OLD.`change_seq`
BEGIN
	UPDATE `user_stats` SET
		`episode_version` = NEW.`change_seq`,
		`url_bytes` = `url_bytes`
			+ coalesce(length(CAST(NEW.`media_url` AS BLOB)), 0) + coalesce(length(CAST(NEW.`item_guid` AS BLOB)), 0)
			- coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) - coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0)
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_delete` AFTER DELETE ON `episodes`
BEGIN
	UPDATE `user_stats` SET
		`episode_count` = `episode_count` - 1,
		`url_bytes` = `url_bytes`
			- coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) - coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0)
	WHERE `user_id` = OLD.`user_id`;
END;
