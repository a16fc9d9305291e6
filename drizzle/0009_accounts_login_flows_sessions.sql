-- Account pages, Nextcloud Login Flow v2, and what outside testers broke (docs/API.md §14 to §17).
-- drizzle-kit generated the tables and indexes; WITHOUT ROWID and the data fixes (3, 5) are written by hand.
--
-- 1. Account page sessions (§16): one row per signed-in browser, in the user's database; only a hash of the
--    cookie's secret.
CREATE TABLE `account_sessions` (
	`session_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `account_sessions_user` ON `account_sessions` (`user_id`);--> statement-breakpoint
CREATE INDEX `account_sessions_expiry` ON `account_sessions` (`expires_at`);--> statement-breakpoint
-- 2. Login flows (§17): in the database of bucket 0, hashes of the poll token and the login id only.
CREATE TABLE `login_flows` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`login_hash` text NOT NULL,
	`app_name` text NOT NULL,
	`started_at` integer NOT NULL,
	`started_from` text NOT NULL,
	`expires_at` integer NOT NULL,
	`login_name` text,
	`sealed_password` text
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX `login_flows_login` ON `login_flows` (`login_hash`);--> statement-breakpoint
CREATE INDEX `login_flows_expiry` ON `login_flows` (`expires_at`);--> statement-breakpoint
-- 3. gpodder sessions end 30 days after their last use (§14): existing ones count as last used when opened.
DROP INDEX `gpodder_sessions_app_password`;--> statement-breakpoint
ALTER TABLE `gpodder_sessions` ADD `last_used_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `gpodder_sessions` SET `last_used_at` = `created_at`;--> statement-breakpoint
CREATE INDEX `gpodder_sessions_last_used` ON `gpodder_sessions` (`last_used_at`);--> statement-breakpoint
CREATE INDEX `gpodder_sessions_app_password` ON `gpodder_sessions` (`user_id`,`app_password_id`,`last_used_at`);--> statement-breakpoint
-- 4. One feed's live episode states: `podcast=` on the gpodder episode actions GET reads only them.
CREATE INDEX `episodes_feed` ON `episodes` (`user_id`,`feed_guid`,`change_seq`,`received_at`) WHERE "episodes"."deleted_at" is null;--> statement-breakpoint
-- 5. Device captions are at most 100 characters (§14): longer stored ones are cut (one account held 100 MB
--    of captions outside the storage budget). SQLite's substr and length count characters.
UPDATE `devices` SET `caption` = substr(`caption`, 1, 100) WHERE length(`caption`) > 100;
