-- Guid merges (docs/API.md §18: "Two feeds declaring the same podcast:guid are one podcast for a user subscribed to
-- both"; issue 37 point 3). drizzle-kit generated it after 0014. It adds exactly:
-- `subscriptions.merged_into`, on a tombstone the feed round merged away the guid of the subscription it joined (a
-- JSON:API add reviving it while that one is active is `409`); and the partial index `feeds_podcast_guid`, the
-- feeds declaring one podcast:guid, which the round's merge walks from a fetched feed.
ALTER TABLE `subscriptions` ADD `merged_into` text;--> statement-breakpoint
CREATE INDEX `feeds_podcast_guid` ON `feeds` (`podcast_guid`) WHERE "feeds"."podcast_guid" IS NOT NULL;