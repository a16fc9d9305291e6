-- URL text beyond a head in pieces (docs/CAPACITY.md, "Storage"). `subscriptions` and `episodes` are WITHOUT
-- ROWID tables, i.e. index b-trees, whose cells keep at most ~1002 bytes on a 4 KiB page: a longer row keeps ~489
-- bytes in place and the rest on an overflow page of its own (a whole page, however little it holds). Rows now
-- keep at most a head of their URL text in place (feed_url 800 bytes, media_url 600, item_guid 200, cut at a
-- UTF-8 character boundary) and triggers store the rest in `url_pieces`, in pieces of at most 850 bytes (the
-- last takes whatever remains), so every cell fits its page and pages pack. Reads put the text together with
-- `storedUrl` (src/db/url-pieces.ts); those constants must match the ones here.
-- drizzle-kit generated the table; this file is finished by hand (WITHOUT ROWID, triggers, existing rows).
--
-- A row at rest keeps at most its head, so a row whose URL column is longer than the head is one a trigger is
-- about to cut: the update triggers skip it (that is also the head-cutting UPDATE itself). user_stats.url_bytes
-- keeps counting each URL's full UTF-8 bytes: cutting moves bytes, it adds none; the stats triggers of 0004
-- count a row's change by its columns (OLD is a head), so removing the old pieces subtracts their bytes. The
-- delete triggers of 0004 are recreated with the pieces (one trigger per deleted row, as before).
CREATE TABLE `url_pieces` (
	`user_id` text NOT NULL,
	`owner` text NOT NULL,
	`field` integer NOT NULL,
	`n` integer NOT NULL,
	`piece` text NOT NULL,
	PRIMARY KEY(`user_id`, `owner`, `field`, `n`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_feed_url_pieces_insert` AFTER INSERT ON `subscriptions`
WHEN length(CAST(NEW.`feed_url` AS BLOB)) > 800
BEGIN
	DELETE FROM `url_pieces` WHERE `user_id` = NEW.`user_id` AND `owner` = NEW.`guid` AND `field` = 0;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 0, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (800 - CASE WHEN NOT (substr(b, 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`guid` AS o, CAST(NEW.`feed_url` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
	UPDATE `subscriptions` SET `feed_url` = CAST(substr(CAST(`feed_url` AS BLOB), 1, (800 - CASE WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `guid` = NEW.`guid`;
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_feed_url_pieces_update` AFTER UPDATE OF `feed_url` ON `subscriptions`
WHEN NEW.`feed_url` IS NOT OLD.`feed_url` AND coalesce(length(CAST(OLD.`feed_url` AS BLOB)), 0) <= 800
BEGIN
	UPDATE `user_stats` SET `url_bytes` = `url_bytes`
		- (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0)
	WHERE `user_id` = OLD.`user_id` AND NEW.`change_seq` IS NOT OLD.`change_seq`;
	DELETE FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 0, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (800 - CASE WHEN NOT (substr(b, 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`guid` AS o, CAST(NEW.`feed_url` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0 AND length(CAST(NEW.`feed_url` AS BLOB)) > 800;
	UPDATE `subscriptions` SET `feed_url` = CAST(substr(CAST(`feed_url` AS BLOB), 1, (800 - CASE WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `guid` = NEW.`guid` AND length(CAST(`feed_url` AS BLOB)) > 800;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_media_url_pieces_insert` AFTER INSERT ON `episodes`
WHEN length(CAST(NEW.`media_url` AS BLOB)) > 600
BEGIN
	DELETE FROM `url_pieces` WHERE `user_id` = NEW.`user_id` AND `owner` = NEW.`id` AND `field` = 1;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 1, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (600 - CASE WHEN NOT (substr(b, 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`id` AS o, CAST(NEW.`media_url` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
	UPDATE `episodes` SET `media_url` = CAST(substr(CAST(`media_url` AS BLOB), 1, (600 - CASE WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `id` = NEW.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_media_url_pieces_update` AFTER UPDATE OF `media_url` ON `episodes`
WHEN NEW.`media_url` IS NOT OLD.`media_url` AND coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) <= 600
BEGIN
	UPDATE `user_stats` SET `url_bytes` = `url_bytes`
		- (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` = 1)
	WHERE `user_id` = OLD.`user_id` AND NEW.`change_seq` IS NOT OLD.`change_seq`;
	DELETE FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` = 1;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 1, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (600 - CASE WHEN NOT (substr(b, 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`id` AS o, CAST(NEW.`media_url` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0 AND length(CAST(NEW.`media_url` AS BLOB)) > 600;
	UPDATE `episodes` SET `media_url` = CAST(substr(CAST(`media_url` AS BLOB), 1, (600 - CASE WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `id` = NEW.`id` AND length(CAST(`media_url` AS BLOB)) > 600;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_item_guid_pieces_insert` AFTER INSERT ON `episodes`
WHEN length(CAST(NEW.`item_guid` AS BLOB)) > 200
BEGIN
	DELETE FROM `url_pieces` WHERE `user_id` = NEW.`user_id` AND `owner` = NEW.`id` AND `field` = 2;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 2, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (200 - CASE WHEN NOT (substr(b, 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`id` AS o, CAST(NEW.`item_guid` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
	UPDATE `episodes` SET `item_guid` = CAST(substr(CAST(`item_guid` AS BLOB), 1, (200 - CASE WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `id` = NEW.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `episodes_item_guid_pieces_update` AFTER UPDATE OF `item_guid` ON `episodes`
WHEN NEW.`item_guid` IS NOT OLD.`item_guid` AND coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0) <= 200
BEGIN
	UPDATE `user_stats` SET `url_bytes` = `url_bytes`
		- (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` = 2)
	WHERE `user_id` = OLD.`user_id` AND NEW.`change_seq` IS NOT OLD.`change_seq`;
	DELETE FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` = 2;
	INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
	SELECT u, o, 2, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (200 - CASE WHEN NOT (substr(b, 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT NEW.`user_id` AS u, NEW.`id` AS o, CAST(NEW.`item_guid` AS BLOB) AS b)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0 AND length(CAST(NEW.`item_guid` AS BLOB)) > 200;
	UPDATE `episodes` SET `item_guid` = CAST(substr(CAST(`item_guid` AS BLOB), 1, (200 - CASE WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
	WHERE `user_id` = NEW.`user_id` AND `id` = NEW.`id` AND length(CAST(`item_guid` AS BLOB)) > 200;
END;
--> statement-breakpoint
-- Rows are deleted only when they leave the database (a bucket move, a purge, an erased account); their pieces
-- go with them, and url_bytes loses the pieces' bytes too. Only a head long enough to have been cut can have
-- pieces: any other row's delete does what it did before.
DROP TRIGGER `subscriptions_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_after_delete` AFTER DELETE ON `subscriptions`
BEGIN
	UPDATE `user_stats` SET
		`active_count` = `active_count` - (OLD.`unsubscribed_at` IS NULL),
		`stored_count` = `stored_count` - 1,
		`url_bytes` = `url_bytes` - length(CAST(OLD.`feed_url` AS BLOB)) - CASE WHEN length(CAST(OLD.`feed_url` AS BLOB)) >= 797 THEN (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0) ELSE 0 END
	WHERE `user_id` = OLD.`user_id`;
	DELETE FROM `url_pieces` WHERE length(CAST(OLD.`feed_url` AS BLOB)) >= 797 AND `user_id` = OLD.`user_id` AND `owner` = OLD.`guid` AND `field` = 0;
END;
--> statement-breakpoint
DROP TRIGGER `episodes_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `episodes_after_delete` AFTER DELETE ON `episodes`
BEGIN
	UPDATE `user_stats` SET
		`episode_count` = `episode_count` - 1,
		`url_bytes` = `url_bytes`
			- coalesce(length(CAST(OLD.`media_url` AS BLOB)), 0) - coalesce(length(CAST(OLD.`item_guid` AS BLOB)), 0)
			- CASE WHEN (length(CAST(OLD.`media_url` AS BLOB)) >= 597 OR length(CAST(OLD.`item_guid` AS BLOB)) >= 197) THEN (SELECT coalesce(sum(length(CAST(`piece` AS BLOB))), 0) FROM `url_pieces` WHERE `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` IN (1, 2)) ELSE 0 END
	WHERE `user_id` = OLD.`user_id`;
	DELETE FROM `url_pieces` WHERE (length(CAST(OLD.`media_url` AS BLOB)) >= 597 OR length(CAST(OLD.`item_guid` AS BLOB)) >= 197) AND `user_id` = OLD.`user_id` AND `owner` = OLD.`id` AND `field` IN (1, 2);
END;
--> statement-breakpoint
-- Rows stored before this migration: their text beyond the head moves to pieces (url_bytes is unchanged).
--> statement-breakpoint
INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
SELECT u, o, 0, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (800 - CASE WHEN NOT (substr(b, 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT `user_id` AS u, `guid` AS o, CAST(`feed_url` AS BLOB) AS b FROM `subscriptions` WHERE length(CAST(`feed_url` AS BLOB)) > 800)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
--> statement-breakpoint
UPDATE `subscriptions` SET `feed_url` = CAST(substr(CAST(`feed_url` AS BLOB), 1, (800 - CASE WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`feed_url` AS BLOB), 800 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
WHERE length(CAST(`feed_url` AS BLOB)) > 800;
--> statement-breakpoint
INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
SELECT u, o, 1, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (600 - CASE WHEN NOT (substr(b, 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT `user_id` AS u, `id` AS o, CAST(`media_url` AS BLOB) AS b FROM `episodes` WHERE length(CAST(`media_url` AS BLOB)) > 600)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
--> statement-breakpoint
UPDATE `episodes` SET `media_url` = CAST(substr(CAST(`media_url` AS BLOB), 1, (600 - CASE WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`media_url` AS BLOB), 600 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
WHERE length(CAST(`media_url` AS BLOB)) > 600;
--> statement-breakpoint
INSERT INTO `url_pieces` (`user_id`, `owner`, `field`, `n`, `piece`)
SELECT u, o, 2, n, piece FROM (SELECT u, o, n, CAST(CASE n WHEN 1 THEN substr(b, c0 + 1, c1 - c0) WHEN 2 THEN substr(b, c1 + 1, c2 - c1) ELSE substr(b, c2 + 1) END AS TEXT) AS piece
		FROM (SELECT u, o, b, c0, c1, (c1 + 850 - CASE WHEN NOT (substr(b, c1 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c1 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c1 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c2 FROM (SELECT u, o, b, c0, (c0 + 850 - CASE WHEN NOT (substr(b, c0 + 850 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, c0 + 850, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, c0 + 850 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c1 FROM (SELECT u, o, b, (200 - CASE WHEN NOT (substr(b, 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(b, 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(b, 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END) AS c0 FROM (SELECT `user_id` AS u, `id` AS o, CAST(`item_guid` AS BLOB) AS b FROM `episodes` WHERE length(CAST(`item_guid` AS BLOB)) > 200)))),
		(SELECT 1 AS n UNION ALL SELECT 2 AS n UNION ALL SELECT 3 AS n))
	WHERE length(piece) > 0;
--> statement-breakpoint
UPDATE `episodes` SET `item_guid` = CAST(substr(CAST(`item_guid` AS BLOB), 1, (200 - CASE WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 + 1, 1) BETWEEN x'80' AND x'BF') THEN 0 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200, 1) BETWEEN x'80' AND x'BF') THEN 1 WHEN NOT (substr(CAST(`item_guid` AS BLOB), 200 - 1, 1) BETWEEN x'80' AND x'BF') THEN 2 ELSE 3 END)) AS TEXT)
WHERE length(CAST(`item_guid` AS BLOB)) > 200;
