-- user_stats.episode_list_bytes and feed_url_max_bytes: with episode_count, a bound of what the user's episode states
-- take as gpodder actions (src/db/gpodder.ts, `episodeListFits`): each state's media URL and guid as JSON strings
-- (`quotedBytesAtMost`: a head long enough to have been cut counts the most its field takes, so a value and its head
-- count the same and the head-cutting UPDATEs of 0007 change nothing), and per state the members every action has
-- and the longest feed URL the user ever stored (never lowered: a bound of each state's feed). Tombstones count too.
-- A full list whose bound fits one page is read in one walk without the running sum a cut needs (D1 counts two rows
-- read per row for it). The episode stats triggers (0004's insert and update, 0007's delete) and the subscription
-- stats triggers of 0019 (insert, update) are written again with the new columns; the rows stored before are counted.
-- `subscriptions_learned_moves`: whether a user has a learned move (whose states a gpodder read tells under the old
-- URLs too, past that bound) is one seek.
ALTER TABLE `user_stats` ADD `episode_list_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `user_stats` ADD `feed_url_max_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `subscriptions_learned_moves` ON `subscriptions` (`user_id`) WHERE "subscriptions"."learned_move_seq" is not null;--> statement-breakpoint
DROP TRIGGER `episodes_after_insert`;
--> statement-breakpoint
DROP TRIGGER `episodes_after_update`;
--> statement-breakpoint
DROP TRIGGER `episodes_after_delete`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_insert`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_update`;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_insert` AFTER INSERT ON `episodes`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `episode_count`, `episode_version`, `url_bytes`, `episode_list_bytes`)
	VALUES (NEW.`user_id`, 1, NEW.`change_seq`,
		coalesce(length(CAST(NEW.`media_url` AS BLOB)), 0) + coalesce(length(CAST(NEW.`item_guid` AS BLOB)), 0),
		(CASE WHEN NEW.`media_url` IS NULL THEN 0 WHEN length(CAST(NEW.`media_url` AS BLOB)) >= 597 THEN 4098 ELSE length(CAST(NEW.`media_url` AS BLOB)) + length(NEW.`media_url`) - length(replace(replace(NEW.`media_url`, '"', ''), '\', '')) + 2 END)
			+ (CASE WHEN NEW.`item_guid` IS NULL THEN 0 WHEN length(CAST(NEW.`item_guid` AS BLOB)) >= 197 THEN 2050 ELSE length(CAST(NEW.`item_guid` AS BLOB)) + length(NEW.`item_guid`) - length(replace(replace(NEW.`item_guid`, '"', ''), '\', '')) + 2 END))
	ON CONFLICT (`user_id`) DO UPDATE SET
		`episode_count` = `episode_count` + 1,
		`episode_version` = excluded.`episode_version`,
		`url_bytes` = `url_bytes` + excluded.`url_bytes`,
		`episode_list_bytes` = `episode_list_bytes` + excluded.`episode_list_bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_update` AFTER UPDATE OF `change_seq` ON `episodes`
WHEN NEW.`change_seq` IS NOT OLD.`change_seq`
BEGIN
	UPDATE `user_stats` SET
		`episode_version` = NEW.`change_seq`,
		`url_bytes` = `url_bytes`
			+ coalesce(length(CAST(NEW.`media_url` AS BLOB)), 0) + coalesce(length(CAST(NEW.`item_guid` AS BLOB)), 0)
			- coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) - coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0),
		`episode_list_bytes` = `episode_list_bytes`
			+ (CASE WHEN NEW.`media_url` IS NULL THEN 0 WHEN length(CAST(NEW.`media_url` AS BLOB)) >= 597 THEN 4098 ELSE length(CAST(NEW.`media_url` AS BLOB)) + length(NEW.`media_url`) - length(replace(replace(NEW.`media_url`, '"', ''), '\', '')) + 2 END)
			+ (CASE WHEN NEW.`item_guid` IS NULL THEN 0 WHEN length(CAST(NEW.`item_guid` AS BLOB)) >= 197 THEN 2050 ELSE length(CAST(NEW.`item_guid` AS BLOB)) + length(NEW.`item_guid`) - length(replace(replace(NEW.`item_guid`, '"', ''), '\', '')) + 2 END)
			- ((CASE WHEN OLD.`media_url` IS NULL THEN 0 WHEN length(CAST(OLD.`media_url` AS BLOB)) >= 597 THEN 4098 ELSE length(CAST(OLD.`media_url` AS BLOB)) + length(OLD.`media_url`) - length(replace(replace(OLD.`media_url`, '"', ''), '\', '')) + 2 END)
			+ (CASE WHEN OLD.`item_guid` IS NULL THEN 0 WHEN length(CAST(OLD.`item_guid` AS BLOB)) >= 197 THEN 2050 ELSE length(CAST(OLD.`item_guid` AS BLOB)) + length(OLD.`item_guid`) - length(replace(replace(OLD.`item_guid`, '"', ''), '\', '')) + 2 END))
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_delete` AFTER DELETE ON `episodes`
BEGIN
	UPDATE `user_stats` SET
		`episode_count` = `episode_count` - 1,
		`url_bytes` = `url_bytes`
			- coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) - coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0)
			- CASE WHEN (length(CAST(OLD.`media_url` AS BLOB)) >= 597 OR length(CAST(OLD.`item_guid` AS BLOB)) >= 197) THEN (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` IN (1, 2)) ELSE 0 END,
		`episode_list_bytes` = `episode_list_bytes`
			- ((CASE WHEN OLD.`media_url` IS NULL THEN 0 WHEN length(CAST(OLD.`media_url` AS BLOB)) >= 597 THEN 4098 ELSE length(CAST(OLD.`media_url` AS BLOB)) + length(OLD.`media_url`) - length(replace(replace(OLD.`media_url`, '"', ''), '\', '')) + 2 END)
			+ (CASE WHEN OLD.`item_guid` IS NULL THEN 0 WHEN length(CAST(OLD.`item_guid` AS BLOB)) >= 197 THEN 2050 ELSE length(CAST(OLD.`item_guid` AS BLOB)) + length(OLD.`item_guid`) - length(replace(replace(OLD.`item_guid`, '"', ''), '\', '')) + 2 END))
	WHERE `user_id` = OLD.`user_id`;
	DELETE FROM `url_pieces` WHERE (length(CAST(OLD.`media_url` AS BLOB)) >= 597 OR length(CAST(OLD.`item_guid` AS BLOB)) >= 197) AND `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` IN (1, 2);
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_insert` AFTER INSERT ON `subscriptions`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `active_count`, `stored_count`, `version`, `url_bytes`, `feed_list_bytes`, `feed_url_max_bytes`)
	VALUES (NEW.`user_id`, NEW.`unsubscribed_at` IS NULL, 1, NEW.`change_seq`, length(CAST(NEW.`feed_url` AS BLOB)),
		CASE WHEN length(CAST(NEW.`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(NEW.`feed_url` AS BLOB))
			+ length(NEW.`feed_url`) - length(replace(replace(NEW.`feed_url`, '"', ''), '\', '')) + 3 END,
		CASE WHEN NEW.`feed_url` IS NULL THEN 0 WHEN length(CAST(NEW.`feed_url` AS BLOB)) >= 797 THEN 4098 ELSE length(CAST(NEW.`feed_url` AS BLOB)) + length(NEW.`feed_url`) - length(replace(replace(NEW.`feed_url`, '"', ''), '\', '')) + 2 END)
	ON CONFLICT (`user_id`) DO UPDATE SET
		`active_count` = `active_count` + excluded.`active_count`,
		`stored_count` = `stored_count` + 1,
		`version` = excluded.`version`,
		`url_bytes` = `url_bytes` + excluded.`url_bytes`,
		`feed_list_bytes` = `feed_list_bytes` + excluded.`feed_list_bytes`,
		`feed_url_max_bytes` = max(`feed_url_max_bytes`, excluded.`feed_url_max_bytes`);
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_update` AFTER UPDATE OF `change_seq` ON `subscriptions`
WHEN NEW.`change_seq` IS NOT OLD.`change_seq`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` + (NEW.`unsubscribed_at` IS NULL) - (OLD.`unsubscribed_at` IS NULL),
		`version` = NEW.`change_seq`,
		`url_bytes` = `url_bytes` + length(CAST(NEW.`feed_url` AS BLOB)) - length(CAST(OLD.`feed_url` AS BLOB)),
		`feed_list_bytes` = `feed_list_bytes`
			+ CASE WHEN length(CAST(NEW.`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(NEW.`feed_url` AS BLOB))
			+ length(NEW.`feed_url`) - length(replace(replace(NEW.`feed_url`, '"', ''), '\', '')) + 3 END
			- CASE WHEN length(CAST(OLD.`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(OLD.`feed_url` AS BLOB))
			+ length(OLD.`feed_url`) - length(replace(replace(OLD.`feed_url`, '"', ''), '\', '')) + 3 END,
		`feed_url_max_bytes` = max(`feed_url_max_bytes`, CASE WHEN NEW.`feed_url` IS NULL THEN 0 WHEN length(CAST(NEW.`feed_url` AS BLOB)) >= 797 THEN 4098 ELSE length(CAST(NEW.`feed_url` AS BLOB)) + length(NEW.`feed_url`) - length(replace(replace(NEW.`feed_url`, '"', ''), '\', '')) + 2 END)
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
-- The rows stored before this migration (their heads: the same bound).
UPDATE `user_stats` SET
	`episode_list_bytes` = (SELECT coalesce(sum((CASE WHEN `episodes`.`media_url` IS NULL THEN 0 WHEN length(CAST(`episodes`.`media_url` AS BLOB)) >= 597 THEN 4098 ELSE length(CAST(`episodes`.`media_url` AS BLOB)) + length(`episodes`.`media_url`) - length(replace(replace(`episodes`.`media_url`, '"', ''), '\', '')) + 2 END)
			+ (CASE WHEN `episodes`.`item_guid` IS NULL THEN 0 WHEN length(CAST(`episodes`.`item_guid` AS BLOB)) >= 197 THEN 2050 ELSE length(CAST(`episodes`.`item_guid` AS BLOB)) + length(`episodes`.`item_guid`) - length(replace(replace(`episodes`.`item_guid`, '"', ''), '\', '')) + 2 END)), 0)
		FROM `episodes` WHERE `episodes`.`user_id` = `user_stats`.`user_id`),
	`feed_url_max_bytes` = (SELECT coalesce(max(CASE WHEN `subscriptions`.`feed_url` IS NULL THEN 0 WHEN length(CAST(`subscriptions`.`feed_url` AS BLOB)) >= 797 THEN 4098 ELSE length(CAST(`subscriptions`.`feed_url` AS BLOB)) + length(`subscriptions`.`feed_url`) - length(replace(replace(`subscriptions`.`feed_url`, '"', ''), '\', '')) + 2 END), 0)
		FROM `subscriptions` WHERE `subscriptions`.`user_id` = `user_stats`.`user_id`);
