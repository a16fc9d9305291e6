-- Aliases in every API (docs/API.md §18, "One podcast across its URLs"; issue 37 point 2). drizzle-kit generated it.
-- `feed_aliases.moving`: the round still has active subscriptions of the moved URL to move (a bounded number a
-- run); the aliases learned before this migration start so. `subscriptions.learned_move_seq`: the change number of
-- the row's last learned move, which the gpodder.net and Nextcloud incremental reads leave out.
ALTER TABLE `feed_aliases` ADD `moving` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `feed_aliases_moving` ON `feed_aliases` (`url_key`) WHERE "feed_aliases"."moving" = 1;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `learned_move_seq` integer;