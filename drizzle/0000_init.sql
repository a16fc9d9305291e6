CREATE TABLE `subscriptions` (
	`user_id` text NOT NULL,
	`guid` text NOT NULL,
	`feed_url` text NOT NULL,
	`subscribed_at` integer NOT NULL,
	`unsubscribed_at` integer,
	PRIMARY KEY(`user_id`, `guid`)
);
--> statement-breakpoint
CREATE INDEX `subscriptions_active_by_user` ON `subscriptions` (`user_id`,`subscribed_at`,`guid`) WHERE "subscriptions"."unsubscribed_at" is null;--> statement-breakpoint
CREATE TABLE `user_stats` (
	`user_id` text PRIMARY KEY NOT NULL,
	`active_count` integer DEFAULT 0 NOT NULL,
	`version` integer DEFAULT 0 NOT NULL
);
