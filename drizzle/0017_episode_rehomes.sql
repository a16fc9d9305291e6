-- A merged-away state takes the id the kept podcast names its episode by (docs/API.md §18; issue 37: "episode actions
-- under any alias reach the same episode states"). drizzle-kit generated the table; `WITHOUT ROWID` and the trigger
-- are written by hand.
-- `episode_rehomes`: the live states a merge re-homed (their `feed_guid` changed to the kept podcast's, their id still
-- UUIDv5 in the namespace of the feed they came from). The feed round reads them, computes each one's id in the kept
-- podcast's namespace in the isolate (SQLite has no SHA-1) and moves the state there (src/db/episode-rehomes.ts), so a
-- later play of that episode under the kept podcast reaches it instead of making a second state.
--
-- The trigger fires when a live state's feed changes while it stays live: only the merges' re-home does that (a
-- revived tombstone takes a new feed through the upsert, and it was no live state). A state deleted or purged before
-- the round reads it is dropped by the round; an erasure deletes the user's rows here (src/db/account.ts).
CREATE TABLE `episode_rehomes` (
	`user_id` text NOT NULL,
	`id` text NOT NULL,
	PRIMARY KEY(`user_id`, `id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `episodes_rehomed` AFTER UPDATE OF `feed_guid` ON `episodes`
WHEN OLD.`deleted_at` IS NULL AND NEW.`deleted_at` IS NULL AND OLD.`feed_guid` IS NOT NEW.`feed_guid`
BEGIN
	INSERT INTO `episode_rehomes` (`user_id`, `id`) VALUES (NEW.`user_id`, NEW.`id`) ON CONFLICT DO NOTHING;
END;
