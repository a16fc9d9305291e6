-- Keeps user_stats in step with subscriptions inside the statement that writes, so a write stays one
-- statement (one D1 round trip) and `meta.total` never needs a count scan.
-- active_count: number of rows with unsubscribed_at IS NULL. version: grows by one on every write.
CREATE TRIGGER `subscriptions_after_insert` AFTER INSERT ON `subscriptions`
BEGIN
	INSERT INTO `user_stats` (`user_id`, `active_count`, `version`)
	VALUES (NEW.`user_id`, NEW.`unsubscribed_at` IS NULL, 1)
	ON CONFLICT (`user_id`) DO UPDATE SET
		`active_count` = `active_count` + excluded.`active_count`,
		`version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_update` AFTER UPDATE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` + (NEW.`unsubscribed_at` IS NULL) - (OLD.`unsubscribed_at` IS NULL),
		`version` = `version` + 1
	WHERE `user_id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_delete` AFTER DELETE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` - (OLD.`unsubscribed_at` IS NULL),
		`version` = `version` + 1
	WHERE `user_id` = OLD.`user_id`;
END;
