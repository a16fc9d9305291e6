-- Storage, retention and erasure (docs/API.md §15). drizzle-kit generated the columns and indexes; the
-- triggers are written by hand (drizzle-kit cannot declare them).
--
-- 1. The horizons: per user and resource, the highest change number of any purged tombstone. A sync token
--    below it (other than 0) answers 410; existing users have purged nothing, so 0.
ALTER TABLE `user_stats` ADD `subscription_horizon` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `user_stats` ADD `episode_horizon` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- 2. Tombstones only, no URL text: a user's oldest tombstones in change order (a purge), and tombstones by
--    age across users (the retention cron), both found without walking live rows.
CREATE INDEX `episodes_tombstones` ON `episodes` (`user_id`,`change_seq`) WHERE "episodes"."deleted_at" is not null;
--> statement-breakpoint
CREATE INDEX `episodes_tombstone_age` ON `episodes` (`deleted_at`) WHERE "episodes"."deleted_at" is not null;
--> statement-breakpoint
CREATE INDEX `subscriptions_tombstones` ON `subscriptions` (`user_id`,`change_seq`) WHERE "subscriptions"."unsubscribed_at" is not null;
--> statement-breakpoint
CREATE INDEX `subscriptions_tombstone_age` ON `subscriptions` (`unsubscribed_at`) WHERE "subscriptions"."unsubscribed_at" is not null;
--> statement-breakpoint
-- 3. Raising a horizon is the purge, written once here for every writer (quota, budget, cron): the live rows
--    whose change number lies below it take fresh numbers (in change order, one by one: the subquery reads
--    the version the previous row's trigger wrote), so a walk from 0 is never handed a token below it; then
--    the tombstones at or below it are deleted (the delete triggers keep the counts and URL bytes).
CREATE TRIGGER `user_stats_subscription_horizon` AFTER UPDATE OF `subscription_horizon` ON `user_stats`
WHEN NEW.`subscription_horizon` > OLD.`subscription_horizon`
BEGIN
	UPDATE `subscriptions` SET
		`change_seq` = (SELECT `version` + 1 FROM `user_stats` WHERE `user_stats`.`user_id` = `subscriptions`.`user_id`),
		`received_at` = unixepoch()
	WHERE `user_id` = NEW.`user_id` AND `unsubscribed_at` IS NULL AND `change_seq` < NEW.`subscription_horizon`;
	DELETE FROM `subscriptions`
	WHERE `user_id` = NEW.`user_id` AND `unsubscribed_at` IS NOT NULL AND `change_seq` <= NEW.`subscription_horizon`;
END;
--> statement-breakpoint
CREATE TRIGGER `user_stats_episode_horizon` AFTER UPDATE OF `episode_horizon` ON `user_stats`
WHEN NEW.`episode_horizon` > OLD.`episode_horizon`
BEGIN
	UPDATE `episodes` SET
		`change_seq` = (SELECT `episode_version` + 1 FROM `user_stats` WHERE `user_stats`.`user_id` = `episodes`.`user_id`),
		`received_at` = unixepoch()
	WHERE `user_id` = NEW.`user_id` AND `deleted_at` IS NULL AND `change_seq` < NEW.`episode_horizon`;
	DELETE FROM `episodes`
	WHERE `user_id` = NEW.`user_id` AND `deleted_at` IS NOT NULL AND `change_seq` <= NEW.`episode_horizon`;
END;
