-- The http/https and trailing-slash forms of a URL are aliases of one podcast (docs/API.md §18; issue 37). A URL names
-- the user's subscriptions stored under its other forms through the feeds the service knows: `url_guid` is the
-- podcast:guid of a feed row's URL (UUIDv5 of the URL without its scheme and trailing slashes, §11), which every form
-- shares; the feed round sets it at each attempt (src/db/feeds.ts) and a learned move's target takes the alias's
-- (src/db/feed-aliases.ts). Rows from before this migration have none until their next attempt (within a day).
ALTER TABLE `feeds` ADD `url_guid` text;--> statement-breakpoint
CREATE INDEX `feeds_url_guid` ON `feeds` (`url_guid`) WHERE "feeds"."url_guid" IS NOT NULL;