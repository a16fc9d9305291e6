-- Rows written before migration 0004 have no url_key (SQL cannot compute SHA-256): the retention cron gives them
-- one, a bounded slice per run (src/db/retention.ts), and finds them through this index, which holds only them.
-- Every subscribe or URL change since 0004 sets the key (an unsubscribe leaves the URL and its missing key
-- alone), so the index empties as the cron goes and then stays empty. drizzle-kit generated this file.
CREATE INDEX `subscriptions_url_key_missing` ON `subscriptions` (`user_id`,`guid`) WHERE "subscriptions"."url_key" is null;