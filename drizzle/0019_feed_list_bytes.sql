-- user_stats.feed_list_bytes: the bytes the user's stored feed URLs take in a gpodder list (src/db/gpodder.ts), each
-- row counted as a page counts it (`quotedBytesAtMost` + 1: its UTF-8 bytes, a byte more for each quote or backslash
-- JSON escapes, the quotes and a comma; a URL of at least 797 bytes, whose head may have been cut, 4 099: the most a
-- 2 048-byte URL takes). The same for a URL and its head, so the head-cutting UPDATE (drizzle/0007) changes nothing.
-- The subscription stats triggers keep it (those of 0004, the delete trigger of 0007, each with the new column):
-- a full list whose bound fits one page is read without the running sum a cut needs (D1 counts two rows per row).
ALTER TABLE `user_stats` ADD `feed_list_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
DROP TRIGGER `subscriptions_after_insert`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_update`;
--> statement-breakpoint
DROP TRIGGER `subscriptions_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_insert` AFTER INSERT ON `subscriptions`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `active_count`, `stored_count`, `version`, `url_bytes`, `feed_list_bytes`)
	VALUES (NEW.`user_id`, NEW.`unsubscribed_at` IS NULL, 1, NEW.`change_seq`, length(CAST(NEW.`feed_url` AS BLOB)),
		CASE WHEN length(CAST(NEW.`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(NEW.`feed_url` AS BLOB))
			+ length(NEW.`feed_url`) - length(replace(replace(NEW.`feed_url`, '"', ''), '\', '')) + 3 END)
	ON CONFLICT (`user_id`) DO UPDATE SET
		`active_count` = `active_count` + excluded.`active_count`,
		`stored_count` = `stored_count` + 1,
		`version` = excluded.`version`,
		`url_bytes` = `url_bytes` + excluded.`url_bytes`,
		`feed_list_bytes` = `feed_list_bytes` + excluded.`feed_list_bytes`;
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
				+ length(OLD.`feed_url`) - length(replace(replace(OLD.`feed_url`, '"', ''), '\', '')) + 3 END
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_delete` AFTER DELETE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` - (OLD.`unsubscribed_at` IS NULL),
		`stored_count` = `stored_count` - 1,
		`url_bytes` = `url_bytes` - length(CAST(OLD.`feed_url` AS BLOB)) - CASE WHEN length(CAST(OLD.`feed_url` AS BLOB)) >= 797 THEN (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0) ELSE 0 END,
		`feed_list_bytes` = `feed_list_bytes`
			- CASE WHEN length(CAST(OLD.`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(OLD.`feed_url` AS BLOB))
				+ length(OLD.`feed_url`) - length(replace(replace(OLD.`feed_url`, '"', ''), '\', '')) + 3 END
	WHERE `user_id` = OLD.`user_id`;
	DELETE FROM `url_pieces` WHERE length(CAST(OLD.`feed_url` AS BLOB)) >= 797 AND `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0;
END;
--> statement-breakpoint
-- The rows stored before this migration (their heads: the same bound).
UPDATE `user_stats` SET `feed_list_bytes` = (
	SELECT coalesce(sum(CASE WHEN length(CAST(`feed_url` AS BLOB)) >= 797 THEN 4099 ELSE length(CAST(`feed_url` AS BLOB))
		+ length(`feed_url`) - length(replace(replace(`feed_url`, '"', ''), '\', '')) + 3 END), 0)
	FROM `subscriptions` WHERE `subscriptions`.`user_id` = `user_stats`.`user_id`);
