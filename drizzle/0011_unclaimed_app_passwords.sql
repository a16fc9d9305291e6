-- App passwords that a Login Flow grant minted and its app never collected (docs/API.md §17, amended December 2026):
-- `expires_at` (ms) is the flow's expiry, set at the grant and cleared by the poll that hands the password out.
-- Until then the password works nowhere; past it nobody can receive it, so it no longer counts, and the retention
-- cron deletes it (through the partial index: only such rows are in it). Every existing row is a held password.
-- drizzle-kit generated both statements; the index's condition is written unqualified by hand.
ALTER TABLE `app_passwords` ADD `expires_at` integer;--> statement-breakpoint
CREATE INDEX `app_passwords_uncollected` ON `app_passwords` (`expires_at`) WHERE `expires_at` IS NOT NULL;
