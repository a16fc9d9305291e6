-- A user's own renames are aliases (docs/API.md §18: "for one user, the URLs of their own renames (PATCH, bulk
-- `update`)"; issue 37 point 2). drizzle-kit generated the table and its index; the triggers are written by hand.
-- `subscription_renames`: per user, the `url_key` each of their subscriptions was renamed away from (the key alone:
-- it names that subscription for this user only), read with the learned moves (src/db/feed-aliases.ts,
-- `namedSubscriptionsSql`). Renames made before this migration were not recorded and are not aliases.
--
-- The rename trigger fires on a change of an active row's key that is no learned move (the feed round's moves set
-- `learned_move_seq` to a new change number; a user's PATCH or bulk `update` leaves it as it was): it records the
-- old key, forgets the new one (a rename back is no alias of itself), and keeps the 4 latest (RENAMES_KEPT). A
-- revival (the row was a tombstone) and the retention cron's key backfill (no old key) are no renames. The delete
-- trigger forgets a row's renames with it (a tombstone's purge, an erasure, a shard move's source rows).
CREATE TABLE `subscription_renames` (
	`user_id` text NOT NULL,
	`url_key` integer NOT NULL,
	`guid` text NOT NULL,
	`renamed_seq` integer NOT NULL,
	PRIMARY KEY(`user_id`, `url_key`, `guid`)
);
--> statement-breakpoint
CREATE INDEX `subscription_renames_guid` ON `subscription_renames` (`user_id`,`guid`,`renamed_seq`);
--> statement-breakpoint
CREATE TRIGGER `subscriptions_renamed` AFTER UPDATE OF `url_key` ON `subscriptions`
WHEN OLD.`unsubscribed_at` IS NULL AND NEW.`unsubscribed_at` IS NULL AND OLD.`url_key` IS NOT NULL
	AND OLD.`url_key` IS NOT NEW.`url_key` AND OLD.`learned_move_seq` IS NEW.`learned_move_seq`
BEGIN
	DELETE FROM `subscription_renames` WHERE `user_id` = NEW.`user_id` AND `url_key` = NEW.`url_key` AND `guid` = NEW.`guid`;
	INSERT INTO `subscription_renames` (`user_id`, `url_key`, `guid`, `renamed_seq`)
		VALUES (NEW.`user_id`, OLD.`url_key`, NEW.`guid`, NEW.`change_seq`)
		ON CONFLICT (`user_id`, `url_key`, `guid`) DO UPDATE SET `renamed_seq` = excluded.`renamed_seq`;
	DELETE FROM `subscription_renames` WHERE `user_id` = NEW.`user_id` AND `guid` = NEW.`guid` AND `url_key` IN (
		SELECT `url_key` FROM `subscription_renames` WHERE `user_id` = NEW.`user_id` AND `guid` = NEW.`guid`
		ORDER BY `renamed_seq` DESC LIMIT -1 OFFSET 4);
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_renames_delete` AFTER DELETE ON `subscriptions`
BEGIN
	DELETE FROM `subscription_renames` WHERE `user_id` = OLD.`user_id` AND `guid` = OLD.`guid`;
END;
