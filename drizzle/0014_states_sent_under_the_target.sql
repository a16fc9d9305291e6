-- States sent under a move's target before the move was learned (docs/API.md §18, "One podcast across its URLs";
-- issue 37 points 3 and 4). drizzle-kit generated it. `feed_aliases.canonical_url_guid`: the podcast:guid of the
-- canonical URL (computed in the isolate: SQLite has no SHA-1), the guid a gpodder upload under that URL stored its
-- states under while it named no subscription of the user's; the round joins them to the moved subscription. The
-- aliases learned before this migration have none (null): their moves join no such states.
ALTER TABLE `feed_aliases` ADD `canonical_url_guid` text;
