import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The tables are `WITHOUT ROWID` (see the custom migrations in drizzle/; drizzle-kit cannot declare it): the
 * primary key is the table's own b-tree, so a write touches one b-tree fewer. Indexes hold no URL text: D1
 * counts only the rows a query's cursor walks (a table lookup from an index entry is free), so a narrow index
 * costs nothing in rows read and keeps every URL stored once (docs/CAPACITY.md, "Storage").
 *
 * Times named `...At` are milliseconds since the Unix epoch (UTC) from the worker's clock, except
 * `receivedAt`: Unix seconds from the database's own clock (`unixepoch()`), written inside the statement that
 * records the change, so it never decreases along a user's change numbers (one primary, one clock). The
 * gpodder API's `since` reads by it.
 */

/**
 * One row per (user, feed). Unsubscribing sets `unsubscribedAt` instead of deleting the row, so the
 * row stays as a tombstone that the change feed reports; subscribing again revives it.
 */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    userId: text("user_id").notNull(),
    guid: text("guid").notNull(),
    feedUrl: text("feed_url").notNull(),
    subscribedAt: integer("subscribed_at").notNull(),
    unsubscribedAt: integer("unsubscribed_at"),
    /**
     * The user's change number of this row's last change (new, revived, unsubscribed, feed moved).
     * Assigned inside the writing statement from `user_stats.version`, so numbers never repeat and a
     * number is never visible before its row.
     */
    changeSeq: integer("change_seq").notNull(),
    /**
     * The change number of the (re)subscription: breaks ties of `subscribedAt` in the order the feeds were
     * subscribed, so the feeds of one bulk request or OPML import keep their order (docs/API.md §4).
     */
    subscribedSeq: integer("subscribed_seq").notNull().default(0),
    /** When the last change reached the database (Unix seconds, the database's clock; 0 before migration 0004). */
    receivedAt: integer("received_at").notNull().default(0),
    /**
     * The first 48 bits of SHA-256(feedUrl) as an integer: finds a feed by its exact URL (the gpodder API names
     * feeds by URL) through a narrow index instead of comparing long URLs. NULL on rows written before
     * migration 0004 until the retention cron fills it (src/db/retention.ts); lookups also check those rows by URL.
     */
    urlKey: integer("url_key"),
    /**
     * The change number of the feed round's last learned move of this row (docs/API.md §18): while it equals
     * `changeSeq`, the row's last change is that move, which the gpodder.net and Nextcloud incremental reads
     * leave out (neither a `remove` of the old URL nor an `add` of the new one). Any other write gives the row a
     * new change number, so no writer has to clear it.
     */
    learnedMoveSeq: integer("learned_move_seq"),
    /**
     * On a tombstone the feed round merged away (docs/API.md §18: two subscriptions of the user became one podcast),
     * the guid of the subscription it joined: a JSON:API add reviving this guid while that one is active is `409
     * Already Subscribed` with it. A revival clears it.
     */
    mergedInto: text("merged_into"),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.guid] }),
    // The list order (subscribedAt, subscribedSeq, guid) per user over active rows only: a page of N walks N
    // entries, and tombstones are never read. `unsubscribedAt` rides along (always null here) so a walk of
    // the index alone needs no table lookup to check the index's own condition (a list page's OFFSET).
    index("subscriptions_active_page")
      .on(table.userId, table.subscribedAt, table.subscribedSeq, table.guid, table.unsubscribedAt)
      .where(sql`${table.unsubscribedAt} is null`),
    // The change feed: a page of changes after a token walks its own entries however long the history.
    // `receivedAt` rides along so the gpodder `since` boundary is found from the index alone.
    index("subscriptions_changes").on(table.userId, table.changeSeq, table.receivedAt),
    index("subscriptions_url").on(table.userId, table.urlKey),
    // Whether a feed has an active subscriber, of any user: the feed round fetches only those (src/feeds/round.ts).
    index("subscriptions_feed_active").on(table.urlKey).where(sql`${table.unsubscribedAt} is null`),
    // The rows from before migration 0004 still waiting for their key: the retention cron finds a slice of them
    // without a scan. Every subscribe or URL change since 0004 sets the key, so once the cron has been through
    // them the index stays empty.
    index("subscriptions_url_key_missing").on(table.userId, table.guid).where(sql`${table.urlKey} is null`),
    // Tombstones only, no URL text: a purge finds the user's oldest tombstones in change order without walking
    // live rows, and the retention cron finds tombstones past their age without a scan (docs/API.md §15).
    index("subscriptions_tombstones").on(table.userId, table.changeSeq).where(sql`${table.unsubscribedAt} is not null`),
    index("subscriptions_tombstone_age").on(table.unsubscribedAt).where(sql`${table.unsubscribedAt} is not null`),
    // The rows a learned move ever changed (few): whether a user has any is one seek (a full episode list told
    // under the moves' old URLs too is read in pages, src/db/gpodder.ts).
    index("subscriptions_learned_moves").on(table.userId).where(sql`${table.learnedMoveSeq} is not null`),
  ],
);

/**
 * The URLs a user's own renames moved a subscription from (docs/API.md §18: "for one user, the URLs of their own
 * renames (PATCH, bulk `update`)" are aliases of the podcast): each by its `url_key` alone (48 bits of SHA-256, no
 * text: a key another URL shares names the subscription for this user only, who chose both). Written and trimmed by
 * the trigger of migration 0016 on a user's change of an active subscription's URL (not a learned move: those are
 * every user's, in `feed_aliases`), at most RENAMES_KEPT (src/db/feed-aliases.ts) per subscription, the latest
 * kept; deleted with the subscription row. Read below all API dialects with the learned moves (`namedSubscriptionsSql`).
 */
export const subscriptionRenames = sqliteTable(
  "subscription_renames",
  {
    userId: text("user_id").notNull(),
    /** The `url_key` the subscription had before the rename. */
    urlKey: integer("url_key").notNull(),
    /** The subscription (its guid) the URL was renamed away from. */
    guid: text("guid").notNull(),
    /** The rename's change number (the row's `change_seq` after it): the trim keeps the latest. */
    renamedSeq: integer("renamed_seq").notNull(),
  },
  (table) => [
    // A lookup finds a sent URL's key among the user's renames: one probe per URL.
    primaryKey({ columns: [table.userId, table.urlKey, table.guid] }),
    // A subscription's renames, for the trigger's trim and the delete with the row.
    index("subscription_renames_guid").on(table.userId, table.guid, table.renamedSeq),
  ],
);

/**
 * Listening state per (user, episode), merged field by field by when each change happened on the device
 * (docs/API.md §13). Deleting forgets the state and keeps a tombstone (`deletedAt`, no URL text) for the
 * change feed; writing the id again starts a fresh state.
 */
export const episodes = sqliteTable(
  "episodes",
  {
    userId: text("user_id").notNull(),
    /** The episode's UUID, chosen by the client (UUIDv5 of the item's guid in the namespace of the feed's). */
    id: text("id").notNull(),
    /** The feed's guid: `relationships.subscription`. The feed need not be a subscription of the user. */
    feedGuid: text("feed_guid").notNull(),
    /** NULL only in a tombstone. */
    mediaUrl: text("media_url"),
    itemGuid: text("item_guid"),
    position: integer("position").notNull().default(0),
    duration: integer("duration"),
    played: integer("played", { mode: "boolean" }).notNull().default(false),
    /** The device's time of the change that set `position` (last writer wins by it). */
    positionChangedAt: integer("position_changed_at"),
    playedChangedAt: integer("played_changed_at"),
    /** The user's episode change number of this row's last change (its own sequence, not the subscriptions'). */
    changeSeq: integer("change_seq").notNull(),
    receivedAt: integer("received_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.id] }),
    index("episodes_changes").on(table.userId, table.changeSeq, table.receivedAt),
    // One feed's live states in change order: the gpodder episode actions GET with `podcast=` reads only them.
    index("episodes_feed")
      .on(table.userId, table.feedGuid, table.changeSeq, table.receivedAt)
      .where(sql`${table.deletedAt} is null`),
    index("episodes_tombstones").on(table.userId, table.changeSeq).where(sql`${table.deletedAt} is not null`),
    index("episodes_tombstone_age").on(table.deletedAt).where(sql`${table.deletedAt} is not null`),
  ],
);

/**
 * The live episode states a merge re-homed to the kept podcast with the id of the feed they came from (docs/API.md
 * §18; src/db/episode-rehomes.ts): each waits here until the feed round gives it the id the kept podcast names the
 * episode by (UUIDv5 in its guid's namespace, computed in the isolate: SQLite has no SHA-1). Written by a trigger
 * (drizzle/0017), deleted with its state and when the round has renamed it.
 */
export const episodeRehomes = sqliteTable(
  "episode_rehomes",
  {
    userId: text("user_id").notNull(),
    /** The re-homed state's id (`episodes.id`). */
    id: text("id").notNull(),
  },
  (table) => [primaryKey({ columns: [table.userId, table.id] })],
);

/**
 * The URL text beyond a row's head (docs/CAPACITY.md, "Storage"): a row's cell in a `WITHOUT ROWID` b-tree keeps
 * at most ~1002 bytes on a 4 KiB page, and a longer one spills to an overflow page of its own, so `feed_url`,
 * `media_url` and `item_guid` keep at most a head in the row and triggers (drizzle/0007) store the rest here in
 * pieces that fit a cell, written and removed with their row. `field`: 0 `subscriptions.feed_url` (owner: the
 * guid), 1 `episodes.media_url`, 2 `episodes.item_guid` (owner: the episode id). Read through `storedUrl`
 * (src/db/url-pieces.ts), never the columns alone.
 */
export const urlPieces = sqliteTable(
  "url_pieces",
  {
    userId: text("user_id").notNull(),
    owner: text("owner").notNull(),
    field: integer("field").notNull(),
    n: integer("n").notNull(),
    piece: text("piece").notNull(),
  },
  (table) => [primaryKey({ columns: [table.userId, table.owner, table.field, table.n] })],
);

/**
 * Per-user summary kept in step by triggers (see the custom migrations in drizzle/): `activeCount` answers
 * `meta.total` without a count scan; `storedCount` (active and tombstones) enforces the subscription quota;
 * `version` is the user's latest subscription change number (sync token and ETag); `episodeCount`,
 * `episodeVersion` the same for episode states; `urlBytes` the UTF-8 bytes of URL text the user stores
 * (every stored feedUrl, tombstones included, every stored mediaUrl and itemGuid), for the storage budget.
 * `subscriptionHorizon`, `episodeHorizon`: the highest change number of any purged tombstone of that kind
 * (docs/API.md §15). A sync token below it (other than 0) may have missed a deletion and answers 410; no row
 * keeps a change number below it (raising it renumbers the live rows below and deletes the tombstones at or
 * below it, in a trigger), so a walk from 0 is never handed a refused token.
 */
export const userStats = sqliteTable("user_stats", {
  userId: text("user_id").primaryKey(),
  activeCount: integer("active_count").notNull().default(0),
  storedCount: integer("stored_count").notNull().default(0),
  version: integer("version").notNull().default(0),
  episodeCount: integer("episode_count").notNull().default(0),
  episodeVersion: integer("episode_version").notNull().default(0),
  urlBytes: integer("url_bytes").notNull().default(0),
  /**
   * The bytes the user's stored feed URLs take in a gpodder list (each as a JSON string and a comma: the `size` of
   * src/db/gpodder.ts's pages), an upper bound: a URL whose head was cut counts the most any URL takes. Kept by the
   * subscription stats triggers (drizzle/0019): a full list that fits one page is read without its running sum.
   */
  feedListBytes: integer("feed_list_bytes").notNull().default(0),
  /**
   * The bytes the user's stored episode states take in a gpodder action beyond its feed's URL (each its media URL's
   * and guid's JSON strings: the `own` size of src/db/gpodder.ts's pages, without the members every action has), an
   * upper bound like `feedListBytes`. Kept by the episode stats triggers (drizzle/0020).
   */
  episodeListBytes: integer("episode_list_bytes").notNull().default(0),
  /**
   * The most bytes a feed URL the user ever stored takes as a JSON string (never lowered: an upper bound of every
   * stored feed's). With `episodeListBytes`, a full episode list that fits one page is read without its running sum.
   */
  feedUrlMaxBytes: integer("feed_url_max_bytes").notNull().default(0),
  subscriptionHorizon: integer("subscription_horizon").notNull().default(0),
  episodeHorizon: integer("episode_horizon").notNull().default(0),
});

/**
 * App passwords: what apps that speak the gpodder.net API send with HTTP Basic (docs/API.md §14). Only a
 * SHA-256 hash of the password is stored (it holds at least 128 random bits, so no slow hash is needed).
 * `username` is the user's gpodder username, the same on every row of the user. `expiresAt` (ms) is set only on
 * a password a Login Flow grant minted that its app has not collected yet (docs/API.md §17): until the poll
 * collects it (which clears it), it works nowhere, and once that time passes nobody can receive it, so it no longer
 * counts and the retention cron deletes it.
 */
export const appPasswords = sqliteTable(
  "app_passwords",
  {
    userId: text("user_id").notNull(),
    id: text("id").notNull(),
    username: text("username").notNull(),
    label: text("label").notNull(),
    passwordHash: text("password_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    expiresAt: integer("expires_at"),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.id] }),
    index("app_passwords_username").on(table.username),
    index("app_passwords_uncollected").on(table.expiresAt).where(sql`${table.expiresAt} IS NOT NULL`),
  ],
);

/**
 * gpodder sessions (the `sessionid` cookie): only a hash of the session id is stored. A session ends 30 days
 * after `lastUsedAt` (ms, recorded at most once a day); at most 10 live ones per app password, the least
 * recently used giving way (docs/API.md §14).
 */
export const gpodderSessions = sqliteTable(
  "gpodder_sessions",
  {
    sessionHash: text("session_hash").primaryKey(),
    userId: text("user_id").notNull(),
    appPasswordId: text("app_password_id").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at").notNull().default(0),
  },
  (table) => [
    // An app password's sessions by last use: the least recently used gives way to an 11th.
    index("gpodder_sessions_app_password").on(table.userId, table.appPasswordId, table.lastUsedAt),
    // Sessions past 30 days of disuse, for the retention cron, without a scan.
    index("gpodder_sessions_last_used").on(table.lastUsedAt),
  ],
);

/**
 * Account page sessions (docs/API.md §16): a signed-in browser. Only a SHA-256 of the cookie's secret is
 * stored; the row lives in the user's database (the cookie names the user's gpodder username, which fixes
 * the bucket). `name` is who the page says is signed in (the ID token's name, preferred_username, email or
 * sub). Sign-out and erasure delete the row; `expiresAt` (ms) is 7 days after sign-in.
 */
export const accountSessions = sqliteTable(
  "account_sessions",
  {
    sessionHash: text("session_hash").primaryKey(),
    userId: text("user_id").notNull(),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [index("account_sessions_user").on(table.userId), index("account_sessions_expiry").on(table.expiresAt)],
);

/**
 * Nextcloud Login Flow v2 (docs/API.md §17): one row per flow an app started, in the database that holds
 * bucket 0 (nobody is signed in when a flow starts, so no user picks the database). Only SHA-256 hashes of
 * the poll token (`tokenHash`) and of the login id in the browser's URL (`loginHash`) are stored. A granted
 * flow holds the minted app password sealed with a key derived from the poll token (`sealedPassword`), so
 * the row alone never reveals it; the first poll after the grant deletes the row, as do `Deny` and the
 * retention cron once `expiresAt` (ms, 20 minutes after the start) has passed.
 */
export const loginFlows = sqliteTable(
  "login_flows",
  {
    tokenHash: text("token_hash").primaryKey(),
    loginHash: text("login_hash").notNull(),
    appName: text("app_name").notNull(),
    startedAt: integer("started_at").notNull(),
    startedFrom: text("started_from").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /**
     * Set by `Grant access`: the user's gpodder username and the sealed app password. Before the grant,
     * `sealedPassword` holds the key the password will be sealed with, itself sealed under a key derived from
     * the login id (src/nextcloud/login-flow.ts): the grant knows the login id, the poll the token.
     */
    loginName: text("login_name"),
    sealedPassword: text("sealed_password"),
  },
  (table) => [uniqueIndex("login_flows_login").on(table.loginHash), index("login_flows_expiry").on(table.expiresAt)],
);

/** gpodder devices: all devices of a user form one sync group (one subscription list per user). */
export const devices = sqliteTable(
  "devices",
  {
    userId: text("user_id").notNull(),
    deviceId: text("device_id").notNull(),
    caption: text("caption").notNull().default(""),
    type: text("type").notNull().default("other"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.userId, table.deviceId] })],
);

/**
 * What the service knows about each feed an active subscription names (docs/API.md §18), one row per feed URL in
 * each database (the podcasts a page shows are read beside the user's subscriptions, in one round trip), kept
 * in no user's storage budget. Rows are made by triggers on `subscriptions` (drizzle/0010) as `pending`, filled by
 * the feed round (src/feeds/round.ts) and forgotten when a round finds no active subscriber left. `urlKey` is the
 * subscriptions' `url_key` of `url` (a read joins by it and checks the URL itself). Times are ms since the epoch.
 */
export const feeds = sqliteTable(
  "feeds",
  {
    urlKey: integer("url_key").primaryKey(),
    /** The feed URL as subscriptions store it, set by the round's first attempt (a trigger knows the key only). */
    url: text("url"),
    /**
     * The podcast:guid of `url` (docs/API.md §11: UUIDv5 of the URL without its scheme and trailing slashes), set with
     * it: the http/https and trailing-slash forms of one URL share it, so a URL finds the feeds of its other forms
     * by it (src/db/feed-aliases.ts, `namedSubscriptionsSql`). Not what the feed declares (`podcastGuid`).
     */
    urlGuid: text("url_guid"),
    /** Where the last successful fetch ended after redirects (NULL before one). */
    finalUrl: text("final_url"),
    /** `pending`, `ok`, `failing` or `gone`. */
    status: text("status").notNull().default("pending"),
    lastError: text("last_error"),
    title: text("title"),
    author: text("author"),
    description: text("description"),
    imageUrl: text("image_url"),
    siteUrl: text("site_url"),
    language: text("language"),
    podcastGuid: text("podcast_guid"),
    /** `<itunes:new-feed-url>`, kept for the moves of "One podcast across its URLs". */
    newFeedUrl: text("new_feed_url"),
    /** The last successful fetch (a `304` included). */
    fetchedAt: integer("fetched_at"),
    /** The first failure since the last success: 30 days of failures make the feed `gone`. */
    failingSince: integer("failing_since"),
    /** Failures in a row: the next retry waits 1 hour doubled per failure, at most 7 days. */
    failures: integer("failures").notNull().default(0),
    /** When the feed is next due; 0 for a feed never tried (first in line). */
    nextFetchAt: integer("next_fetch_at").notNull().default(0),
    /** The validators of the last `200`, sent back as `If-None-Match` / `If-Modified-Since`. */
    etag: text("etag"),
    lastModified: text("last_modified"),
  },
  (table) => [
    index("feeds_due").on(table.nextFetchAt),
    // The feeds declaring one podcast:guid: the round merges a user's subscriptions of two of them (feed-aliases.ts).
    index("feeds_podcast_guid").on(table.podcastGuid).where(sql`${table.podcastGuid} IS NOT NULL`),
    // The feeds of one URL's forms: a URL names the user's subscriptions of its other forms through them.
    index("feeds_url_guid").on(table.urlGuid).where(sql`${table.urlGuid} IS NOT NULL`),
  ],
);

/**
 * The learned moves of feeds (docs/API.md §18, "One podcast across its URLs"): feed URL `url`, whose own answer
 * moved it (a permanent redirect, or an `<itunes:new-feed-url>` to a live feed of the same podcast), is now
 * `canonicalUrl`. Written only by the feed round (src/feeds/moves.ts) into each database holding the feed, and
 * forgotten with the feeds once no active subscription names either URL; read below all API dialects
 * (`canonicalFeedOf`, src/db/feed-aliases.ts). Kept resolved: no canonical URL has a row of its own, so a lookup is
 * one primary-key read, never a walk of a chain. `urlKey` is the subscriptions' `url_key` of `url` (a read checks
 * the URL itself too); `canonicalKey` finds the aliases of a feed that moves on, or is forgotten.
 */
export const feedAliases = sqliteTable(
  "feed_aliases",
  {
    urlKey: integer("url_key").primaryKey(),
    url: text("url").notNull(),
    canonicalUrl: text("canonical_url").notNull(),
    canonicalKey: integer("canonical_key").notNull(),
    /**
     * The podcast:guid of `canonicalUrl` (src/podcast-guid.ts, computed from the URL in the isolate: SQLite has no
     * SHA-1): the guid a gpodder upload under the canonical URL stored its states under while that URL named no
     * subscription of the user's, which the move then joins to the moved subscription. Null for aliases learned
     * before migration 0014.
     */
    canonicalUrlGuid: text("canonical_url_guid"),
    /** When the round last learned the move (ms since the epoch). */
    learnedAt: integer("learned_at").notNull(),
    /**
     * 1 while active subscriptions of `url` may be left to move to `canonicalUrl`: the round moves a bounded
     * number a run (src/db/feed-aliases.ts, `applyMovesStatements`) and clears it once none is left.
     */
    moving: integer("moving").notNull().default(1),
  },
  (table) => [
    index("feed_aliases_canonical").on(table.canonicalKey),
    index("feed_aliases_moving").on(table.urlKey).where(sql`${table.moving} = 1`),
  ],
);
