-- Feed aliases (docs/API.md §18, "One podcast across its URLs"): the moves the feed round learned from a feed's own
-- answer (a permanent redirect, or an `itunes:new-feed-url` to a live feed of the same podcast), one row per moved
-- URL in each database whose users name it (forgotten once none names either URL), its key the subscriptions'
-- `url_key` of that URL. Kept resolved (no canonical URL has a row
-- of its own), so a lookup reads one row. drizzle-kit generated it.
CREATE TABLE `feed_aliases` (
	`url_key` integer PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`canonical_url` text NOT NULL,
	`canonical_key` integer NOT NULL,
	`learned_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `feed_aliases_canonical` ON `feed_aliases` (`canonical_key`);