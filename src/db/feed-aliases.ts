import { type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { podcastGuidSync } from "../podcast-guid";
import { rowNextChange, rowNextEpisodeChange } from "./change-numbers";
import { call, type Database } from "./database";
import { feedAliases as a, episodes as e, feeds as f, subscriptionRenames as r, subscriptions as s } from "./schema";
import { type Statement, statement } from "./statements";
import { urlKey } from "./url-key";
import { FEED_URL, ITEM_GUID, MEDIA_URL, storedUrl } from "./url-pieces";

/**
 * The learned moves of feeds (docs/API.md §18, "One podcast across its URLs"): which URL a feed is stored under
 * once its own answer moved it. One rule below all API dialects: every API that takes a feed URL (a subscription,
 * an episode action's podcast) asks `canonicalFeedOf`, or embeds `canonicalUrlSql` in its own statement (same
 * round trip). Written only by the feed round (src/feeds/moves.ts decides, `learnMoveStatements` writes).
 *
 * The table is kept resolved: no canonical URL has a row of its own. So a lookup is one primary-key read (one
 * row, whatever the length of the chain of moves behind it), and there is no cycle to walk.
 */

/**
 * The URL `url` (whose key, `urlKey(url)`, is `key`) is stored under, as SQL: its canonical URL when it moved,
 * else itself. One primary-key read; a row whose key another URL shares is not this URL's (the text is compared).
 */
export function canonicalUrlSql(url: SQL, key: SQL): SQL {
  return sql`coalesce((SELECT ${a.canonicalUrl} FROM ${a} WHERE ${a.urlKey} = ${key} AND ${a.url} = ${url}), ${url})`;
}

/** The key of `canonicalUrlSql`'s URL: the canonical URL's, else `key` itself. */
function canonicalKeySql(url: SQL, key: SQL): SQL {
  return sql`coalesce((SELECT ${a.canonicalKey} FROM ${a} WHERE ${a.urlKey} = ${key} AND ${a.url} = ${url}), ${key})`;
}

// ---------------------------------------------------------------------------------------------
// Which subscription a URL names: the one rule every API applies (docs/API.md §18, "One podcast across its URLs").

/**
 * Whether the user has renamed any subscription: not correlated, so SQLite reads it once per statement (once per
 * run of a correlated subquery holding it: a read's lookup per tombstone), and a user who never renamed (most) pays
 * no probe of `subscription_renames` per URL of an upload (D1 counts a row read for each, found or not: the alias
 * lookups' rows read are bounded by tests).
 */
const hasRenamed = (userId: SQLWrapper) => sql`EXISTS (SELECT 1 FROM ${r} WHERE ${r.userId} = ${userId})`;

/**
 * A URL names the user's subscriptions stored under its canonical URL (the URL itself when it never moved) or under
 * any URL that moved to that one: the URLs before and after each learned move, in both directions (the table is
 * resolved: every URL that moved to C has a row pointing at C); the user's subscriptions that the canonical URL
 * was renamed away from (a PATCH or bulk `update` of the user's: `subscription_renames`, by key alone); and those
 * stored under the URL's other http/https and trailing-slash forms, found through the feeds the service knows
 * (`feeds.url_guid`, the podcast:guid every form of a URL shares: a feed row has it from the round's first attempt
 * at its URL). The gpodder paths also take the subscription whose guid is the URL's podcast:guid (db/gpodder.ts:
 * §14's rule, which holds before any round).
 *
 * As the CTEs `feed_canon`, `feed_names(i, url, url_key)` (each sent URL's names: its canonical URL, then the URLs
 * that moved there, then the stored URL of each subscription the canonical URL was renamed away from, then the URLs
 * of the other forms of the sent URL that a feed row holds: named through `feed_names`, which is read once, since
 * SQLite writes a CTE read twice to a table of its own, and D1 counts those rows too) and
 * `named_subscriptions(i, guid, unsubscribed_at, change_seq, merged_into)`, over the table
 * `sent(i, url, url_key, podcast_guid)` of the caller's WITH clause (`podcast_guid` the sent URL's, NULL where the
 * caller has none: no form is then looked up); every step a key lookup (the aliases by primary key, then by
 * their canonical key; the renames by their primary key, then the row they name by its own; the forms' feeds by
 * `feeds_url_guid`; the subscriptions by `subscriptions_url`), the text compared but a rename's (its key names the
 * subscription for this user alone). With `byText` false (`url` NULL: a statement bound without the URLs' text),
 * found by key alone: an estimate (a key two URLs share reads as either). Rows from before migration 0004 (no
 * url_key) are not found here: the callers that may meet them compare their text.
 */
export function namedSubscriptionsSql(userId: SQLWrapper, sent: string, byText = true, forms = true): SQL {
  const text = (condition: SQL) => (byText ? sql` AND ${condition}` : sql``);
  // Left out of the statement, not only unmatched, for a caller without the sent URLs' podcast:guid: D1 counts a row
  // read for the probe of an absent key too (the remove list makes one lookup per tombstone).
  const formNames = forms
    ? sql`
    UNION ALL
    SELECT canon.i, ${byText ? sql`form.url` : sql`NULL`}, form.url_key FROM feed_canon AS canon
      CROSS JOIN ${f} AS form INDEXED BY feeds_url_guid
      ON canon.podcast_guid IS NOT NULL AND form.url_guid = canon.podcast_guid AND form.url_key <> canon.sent_key`
    : sql``;
  return sql`feed_canon(i, url, url_key, podcast_guid, sent_key) AS (
    SELECT sent.i, coalesce(x.canonical_url, sent.url), coalesce(x.canonical_key, sent.url_key), sent.podcast_guid,
      sent.url_key
    FROM ${sql.raw(sent)} AS sent LEFT JOIN ${a} AS x ON x.url_key = sent.url_key${text(sql`x.url = sent.url`)}),
  feed_names(i, url, url_key) AS (
    SELECT i, url, url_key FROM feed_canon
    UNION ALL
    SELECT canon.i, y.url, y.url_key FROM feed_canon AS canon CROSS JOIN ${a} AS y INDEXED BY feed_aliases_canonical
      ON y.canonical_key = canon.url_key${text(sql`y.canonical_url = canon.url`)}
    UNION ALL
    SELECT canon.i, ${byText ? storedUrl(FEED_URL, "t") : sql`NULL`}, t.url_key FROM feed_canon AS canon
      CROSS JOIN ${r} ON ${hasRenamed(userId)} AND ${r.userId} = ${userId} AND ${r.urlKey} = canon.url_key
      CROSS JOIN ${s} AS t ON t.user_id = ${userId} AND t.guid = ${r.guid}${formNames}),
  named_subscriptions(i, guid, unsubscribed_at, change_seq, merged_into) AS (
    SELECT names.i, t.guid, t.unsubscribed_at, t.change_seq, t.merged_into
    FROM feed_names AS names CROSS JOIN ${s} AS t INDEXED BY subscriptions_url
      ON t.user_id = ${userId} AND t.url_key = names.url_key${text(sql`${storedUrl(FEED_URL, "t")} = names.url`)})`;
}

/**
 * The renames a subscription keeps as its aliases (docs/API.md §18, "the URLs of their own renames"): the latest,
 * by the trigger of migration 0016 (which spells this number out: SQL has no constant of ours). A device holding a
 * URL from before more renames than this is rare, and each kept one is a row of the user's outside the budget's
 * bytes (a key, no text: at most this many per subscription, so bounded by the count quota).
 */
export const RENAMES_KEPT = 4;

/**
 * The user's subscriptions (active or tombstones) that the URL `url` (key `key`, podcast:guid `podcastGuid`: its
 * forms are looked up only when it is given) names: `guid, unsubscribed_at, change_seq, merged_into`.
 */
export function subscriptionsNamedBySql(
  userId: SQLWrapper,
  url: SQLWrapper,
  key: SQLWrapper,
  podcastGuid?: SQLWrapper,
): SQL {
  return sql`WITH named_url(i, url, url_key, podcast_guid) AS (SELECT 0, ${url}, ${key}, ${podcastGuid ?? sql`NULL`}),
    ${namedSubscriptionsSql(userId, "named_url", true, podcastGuid !== undefined)}
    SELECT guid, unsubscribed_at, change_seq, merged_into FROM named_subscriptions`;
}

/**
 * The active subscription of the user that subscription row `row` (its columns `merged_into` and `unsubscribed_at`)
 * joined when the feed round merged it away (`mergeSubscriptionsSql` below), as SQL: its guid, or NULL when the row
 * is active, was never merged, or the one it joined is gone too. The one rule every API follows from a merged-away
 * subscription to the kept one (docs/decisions.md, "The merged-away tombstone records what it joined"): a JSON:API
 * revival of it is `409` with that one (db/subscriptions.ts), and a gpodder or Nextcloud URL naming the tombstone
 * names that one (db/gpodder.ts, `feedGuidOf`: its episode actions reach the kept podcast's states, an add of it
 * writes nothing). One primary-key read when the row was merged away, none otherwise (NULL finds no key).
 */
export function joinedActiveSql(userId: SQLWrapper, row: string): SQL {
  const at = (column: string) => sql.raw(`${row}.${column}`);
  return sql`(SELECT joined.guid FROM ${s} AS joined
    WHERE joined.user_id = ${userId} AND joined.guid = ${at("merged_into")} AND ${at("unsubscribed_at")} IS NOT NULL
      AND joined.unsubscribed_at IS NULL)`;
}

// ---------------------------------------------------------------------------------------------
// The URLs a moved subscription was stored under (docs/decisions.md, "Episode reads under every alias").

/**
 * The aliases a subscription's episode states are answered under beside its stored URL, at most: a podcast moves
 * rarely (a URL a user held, then one more move of it), and each alias answered is an action more in every
 * episode read of that podcast's states, so the read's cost per state stays bounded whatever a feed host makes
 * move to one feed.
 */
export const ANSWERED_ALIASES = 4;

/**
 * The URLs the learned moves may have moved subscription row `row` (of the subscriptions) from, as rows `(url,
 * canonical_url)`: nothing unless the row's URL was changed by a learned move (`learned_move_seq`; no other write
 * clears it: a row moved once keeps it), else the first ANSWERED_ALIASES aliases of its URL's key, in key order
 * (an index walk of that many rows, no sort). The table keeps no user's old URL, only each URL's move: the row
 * was stored under one of these, and which one is not recorded. By key alone: the caller compares
 * `canonical_url` with the row's URL where it needs this row's own aliases, not an estimate.
 */
export function movedFromSql(row: string): SQL {
  const at = (column: string) => sql.raw(`"${row}"."${column}"`);
  return sql`SELECT y.url AS url, y.canonical_url AS canonical_url
    FROM ${a} AS y INDEXED BY feed_aliases_canonical
    WHERE ${at("learned_move_seq")} IS NOT NULL AND y.canonical_key = ${at("url_key")}
    ORDER BY y.canonical_key, y.url_key LIMIT ${sql.raw(String(ANSWERED_ALIASES))}`;
}

/**
 * Keys per statement: one JSON text parameter each (D1 binds at most 100 parameters, strings of at most 2 MB; a key
 * takes at most 16 characters), so the 10 000 URLs of a gpodder upload are one statement.
 */
export const KEYS_PER_STATEMENT = 10_000;

/**
 * The aliases among a chunk of keys: each key a primary-key lookup (`CROSS JOIN` keeps the sent keys outside, so
 * SQLite never walks the table), at most one row per key read and returned.
 */
const aliasesStatement = statement(sql`
  SELECT ${a.url} AS url, ${a.canonicalUrl} AS canonicalUrl
  FROM json_each(${sql.placeholder("keys")}) AS sent CROSS JOIN ${a} ON ${a.urlKey} = sent.value`);

/**
 * The URL each of `urls` is stored under, in their order: the canonical URL of a learned move, else the URL itself.
 * One D1 call (one statement, or one batch of them past KEYS_PER_STATEMENT distinct URLs); D1 counts two rows read
 * per distinct URL (the sent key and its primary-key probe), whatever the table holds.
 */
export async function canonicalFeedOf(db: Database, urls: readonly string[]): Promise<string[]> {
  const distinct = [...new Set(urls)];
  if (distinct.length === 0) return [];
  const chunks: number[][] = [];
  for (let start = 0; start < distinct.length; start += KEYS_PER_STATEMENT) {
    chunks.push(distinct.slice(start, start + KEYS_PER_STATEMENT).map(urlKey));
  }
  const statements = chunks.map((keys) => aliasesStatement.bind(db, { keys: JSON.stringify(keys) }));
  const results = await call(() =>
    statements.length === 1 ? statements[0].all().then((result) => [result]) : db.batch(statements),
  );
  const canonical = new Map<string, string>();
  for (const { results: rows } of results) {
    for (const row of rows as { url: string; canonicalUrl: string }[]) canonical.set(row.url, row.canonicalUrl);
  }
  return urls.map((url) => canonical.get(url) ?? url);
}

/**
 * A move the feed round learned: `from` (the URL whose answer moved) is now `to`, or where `to`'s alias leads when
 * it has one (aliases are kept: `to` answering a feed does not undo what it answered before). When that alias leads
 * back to `from` (`to` had moved to `from`, and now `from` says it moved to `to`: the publisher moved back), `final`
 * decides: when `to`'s own answer in the same round named no URL beyond itself, `to`'s alias is dropped and `from`
 * moves to it; otherwise nothing moves.
 */
export interface LearnedMove {
  from: string;
  to: string;
  final: boolean;
}

const to = sql.placeholder("to");
const toKey = sql.placeholder("toKey");
const from = sql.placeholder("from");
const fromKey = sql.placeholder("fromKey");
const now = sql.placeholder("now");
const target = canonicalUrlSql(sql`${to}`, sql`${toKey}`);
const targetKey = canonicalKeySql(sql`${to}`, sql`${toKey}`);
/**
 * The podcast:guid of the target's URL (`canonical_url_guid`). The isolate computes `to`'s (`toGuid`); when `to` had
 * moved on, the target is `to`'s canonical URL, whose guid `to`'s own alias row holds (the table is resolved: that
 * row names the final URL, and learning it wrote that URL's guid), null for a row from before migration 0014.
 */
const targetGuid = sql`CASE WHEN ${target} = ${to} THEN ${sql.placeholder("toGuid")} ELSE (
  SELECT ${a.canonicalUrlGuid} FROM ${a} WHERE ${a.urlKey} = ${toKey} AND ${a.url} = ${to}) END`;

/**
 * The URLs one podcast may have moved to it, at most. Every lookup of a URL reads its podcast's aliases
 * (`namedSubscriptionsSql`: each URL that moved there, then the user's subscriptions under it), and a URL becomes an
 * alias of B whenever its own answer redirects permanently to B: anyone can publish such URLs and subscribe to them.
 * The bound keeps the rows a lookup reads at about twice this, whatever others publish; a move that would take a
 * podcast past it is not learned (its subscriptions stay on their URL, fetched as a feed of their own: nothing is
 * lost, the URLs are then two podcasts). Real feeds have a handful of URLs.
 */
export const ALIASES_PER_PODCAST = 100;

/** The aliases whose canonical key is `key` (a key two URLs share counts both: the bound errs to refusing). */
const aliasesOf = (key: SQL) =>
  sql`(SELECT count(*) FROM ${a} AS counted INDEXED BY feed_aliases_canonical WHERE counted.canonical_key = ${key})`;
/**
 * Whether the move leaves the target within ALIASES_PER_PODCAST: its aliases, `from`'s (they move on with it) and
 * `from` itself. The same sum before and after `moveAliasesOnStatement` moves `from`'s aliases to the target, so the
 * two statements that write the move agree.
 */
const roomForMove = sql`${aliasesOf(targetKey)} + ${aliasesOf(sql`${fromKey}`)} < ${ALIASES_PER_PODCAST}`;

/**
 * A move back: `to`, which had moved to `from`, answers as itself; it is canonical again (and has no row). Within the
 * bound as the statements after it see it (`from`'s aliases, one fewer, and none of `to`'s: the table is resolved).
 */
const dropTargetAliasStatement = statement(sql`
  DELETE FROM ${a} WHERE ${a.urlKey} = ${toKey} AND ${a.url} = ${to} AND ${sql.placeholder("final")}
    AND ${a.canonicalKey} = ${fromKey} AND ${a.canonicalUrl} = ${from}
    AND ${aliasesOf(sql`${fromKey}`)} <= ${ALIASES_PER_PODCAST}`);
/** The URLs that had moved to `from` move on with it (the table stays resolved). */
const moveAliasesOnStatement = statement(sql`
  UPDATE ${a} SET canonical_url = ${target}, canonical_key = ${targetKey}, canonical_url_guid = ${targetGuid},
    learned_at = ${now}, moving = 1
  WHERE ${a.canonicalKey} = ${fromKey} AND ${a.canonicalUrl} = ${from} AND ${target} <> ${from} AND ${roomForMove}`);
/**
 * `from`'s alias, made or moved. A key another URL already holds keeps its row (the first URL keeps it): a URL
 * made to collide with a popular feed's key cannot take that feed's alias away.
 */
const aliasStatement = statement(sql`
  INSERT INTO ${a} (url_key, url, canonical_url, canonical_key, canonical_url_guid, learned_at)
  SELECT ${fromKey}, ${from}, target.url, target.url_key, target.guid, ${now}
  FROM (SELECT ${target} AS url, ${targetKey} AS url_key, ${targetGuid} AS guid) AS target
  WHERE target.url <> ${from} AND ${roomForMove}
  ON CONFLICT (url_key) DO UPDATE SET canonical_url = excluded.canonical_url, canonical_key = excluded.canonical_key,
    canonical_url_guid = excluded.canonical_url_guid, learned_at = excluded.learned_at, moving = 1
  WHERE ${a.url} = excluded.url`);

/** The statements that store `move` (in this order, in one batch: the table is resolved before and after). */
export function learnMoveStatements(db: Database, move: LearnedMove, at: number): D1PreparedStatement[] {
  const values = {
    from: move.from,
    fromKey: urlKey(move.from),
    to: move.to,
    toKey: urlKey(move.to),
    toGuid: podcastGuidSync(move.to),
    final: move.final ? 1 : 0,
    now: at,
  };
  return [dropTargetAliasStatement, moveAliasesOnStatement, aliasStatement].map((each) => each.bind(db, values));
}

// ---------------------------------------------------------------------------------------------
// Applying a learned move to the subscriptions (docs/API.md §18: "A learned move A -> B changes each active
// subscription whose feedUrl is A to B as a PATCH does").

/**
 * The active subscriptions the move of alias row `m` still has to change: those whose URL is exactly `m.url`,
 * except a user's who is already actively subscribed to the new URL itself (two subscriptions become one podcast:
 * `mergeStatements` merges them first, and the kept one, when it is A's, moves here).
 * Found through the active subscriptions' key index, each URL compared as stored.
 */
function movableOf(m: string): SQL {
  return sql`${activeAt(m, "t")}
      AND NOT EXISTS (SELECT 1 FROM ${s} AS b INDEXED BY subscriptions_url WHERE ${sameUserActiveAtTarget(m, "t", "b")})`;
}

/**
 * Subscription row `t` is active at row `m`'s URL (`m` has `url_key` and `url`: an alias, or a feed), found by its key,
 * the URL compared as stored.
 */
function activeAt(m: string, t: string): SQL {
  const raw = (row: string, column: string) => sql.raw(`${row}.${column}`);
  return sql`${raw(t, "url_key")} = ${raw(m, "url_key")} AND ${raw(t, "unsubscribed_at")} IS NULL
    AND ${storedUrl(FEED_URL, t)} = ${raw(m, "url")}`;
}

/** Subscription row `b` is row `t`'s user's, active at alias row `m`'s target (its canonical URL). */
function sameUserActiveAtTarget(m: string, t: string, b: string): SQL {
  const raw = (row: string, column: string) => sql.raw(`${row}.${column}`);
  return sql`${raw(b, "user_id")} = ${raw(t, "user_id")} AND ${raw(b, "url_key")} = ${raw(m, "canonical_key")}
    AND ${raw(b, "unsubscribed_at")} IS NULL AND ${storedUrl(FEED_URL, b)} = ${raw(m, "canonical_url")}`;
}

/**
 * Subscriptions a learned move changes per statement: a move of a feed with 10 000 subscribers in one database
 * takes several scheduled runs, each statement a bounded write (every row fires the subscription triggers: the
 * user's version and URL bytes, the URL's pieces, the new URL's feed row), so no run holds the database long.
 * The round runs it at most twice a run and database (`applyMovesStatements`).
 */
export const MOVED_SUBSCRIPTIONS_PER_STATEMENT = 500;

/**
 * Up to `limit` of the subscriptions the moving aliases still have to change, each with its target (`url`,
 * `url_key`, `url_guid`: the alias's canonical URL, key and that URL's podcast:guid): one walk, the same text in
 * `applyMovesStatement` and in `strayPairsSql` before it in the batch, so both find the same slice (the statements
 * between them write episode states only).
 */
const movableSql = sql`SELECT t.user_id AS user_id, t.guid AS guid, m.canonical_url AS url, m.canonical_key AS url_key,
      m.canonical_url_guid AS url_guid
    FROM ${a} AS m INDEXED BY feed_aliases_moving CROSS JOIN ${s} AS t INDEXED BY subscriptions_feed_active
    WHERE m.moving = 1 AND ${movableOf("m")} LIMIT ${sql.placeholder("limit")}`;

// ---------------------------------------------------------------------------------------------
// Merging a user's two subscriptions a learned move makes one podcast (docs/API.md §18, "they become one").

/**
 * Users whose subscriptions one merge statement merges (per statement, each a whole user: the merge of one user is
 * one batch). With its episode states a merge writes more than a move (every state of the merged-away feed is merged,
 * forgotten or re-homed), so fewer per statement than MOVED_SUBSCRIPTIONS_PER_STATEMENT.
 */
export const MERGED_SUBSCRIPTIONS_PER_STATEMENT = 100;

/**
 * The pairs to merge: a moving alias's active subscription of A whose user is actively subscribed to B too, the older
 * kept (`kept`), the other merged away (`away`). Every merge statement of a batch starts with this same CTE over the
 * same walk (aliases, subscriptions, neither changed before the last one tombstones `away`), so each finds the same
 * pairs. Older: subscribed earlier, then by subscription change number, then guid.
 */
const pairsSql = sql`pairs(user_id, away, kept) AS MATERIALIZED (
  SELECT t.user_id, CASE WHEN t.older THEN t.b_guid ELSE t.guid END, CASE WHEN t.older THEN t.guid ELSE t.b_guid END
  FROM (SELECT t.user_id AS user_id, t.guid AS guid, b.guid AS b_guid,
      (t.subscribed_at, t.subscribed_seq, t.guid) < (b.subscribed_at, b.subscribed_seq, b.guid) AS older
    FROM ${a} AS m INDEXED BY feed_aliases_moving CROSS JOIN ${s} AS t INDEXED BY subscriptions_feed_active
      CROSS JOIN ${s} AS b INDEXED BY subscriptions_url
    WHERE m.moving = 1 AND ${activeAt("m", "t")} AND ${sameUserActiveAtTarget("m", "t", "b")}
    LIMIT ${sql.placeholder("limit")}) AS t)`;

/**
 * The live states of the merged-away feeds (`away_states`) and the kept episode each joins (`kid`, null when none):
 * one of the same kept podcast with the same item guid, else (either has none) the same media URL, by the stored
 * text. Over the CTE `pairs(user_id, away, kept)` that `pairs` defines: a user's duplicate subscriptions
 * (`pairsSql`), a user's subscriptions of feeds declaring one podcast:guid (`guidPairsSql`), or the states a user
 * sent under a move's target (`strayPairsSql`). Only the pairs with live states
 * to merge read their kept podcast's states.
 */
function matchedSql(pairs: SQL): SQL {
  return sql`${pairs},
  away_rows(user_id, kept, id, item, media, position, pct, played, plct, duration) AS MATERIALIZED (
    SELECT pairs.user_id, pairs.kept, y.id, ${storedUrl(ITEM_GUID, "y")}, ${storedUrl(MEDIA_URL, "y")}, y.position,
      y.position_changed_at, y.played, y.played_changed_at, y.duration
    FROM pairs CROSS JOIN ${e} AS y INDEXED BY episodes_feed
    WHERE y.user_id = pairs.user_id AND y.feed_guid = pairs.away AND y.deleted_at IS NULL),
  kept_states(user_id, kept, id, item, media) AS MATERIALIZED (
    SELECT owners.user_id, owners.kept, k.id, ${storedUrl(ITEM_GUID, "k")}, ${storedUrl(MEDIA_URL, "k")}
    FROM (SELECT DISTINCT user_id, kept FROM away_rows) AS owners CROSS JOIN ${e} AS k INDEXED BY episodes_feed
    WHERE k.user_id = owners.user_id AND k.feed_guid = owners.kept AND k.deleted_at IS NULL),
  away_states(user_id, kept, id, kid, position, pct, played, plct, duration) AS MATERIALIZED (
    SELECT away_row.user_id, away_row.kept, away_row.id, coalesce(
        (SELECT min(k.id) FROM kept_states AS k
          WHERE k.user_id = away_row.user_id AND k.kept = away_row.kept AND k.item = away_row.item),
        (SELECT min(k.id) FROM kept_states AS k
          WHERE k.user_id = away_row.user_id AND k.kept = away_row.kept AND k.media = away_row.media
            AND (k.item IS NULL OR away_row.item IS NULL))),
      away_row.position, away_row.pct, away_row.played, away_row.plct, away_row.duration
    FROM away_rows AS away_row)`;
}

/**
 * Each kept episode takes what the merged-away states it joins say, by section 13's rules: `position` and `played`
 * each from the latest change on a device, only when strictly later than the kept one's (equal keeps it); of the
 * facts, a `duration` the kept state lacks (its media URL and item guid stay: they name it). A state that changes
 * nothing takes no change number.
 */
const best = (column: string) =>
  sql`(SELECT ${sql.raw(`best.${column}`)} FROM best WHERE best.user_id = ${e.userId} AND best.kid = ${e.id})`;
function mergeEpisodesStatement(pairs: SQL): Statement {
  return statement(sql`
  WITH ${matchedSql(pairs)},
  best(user_id, kid, position, pct, played, plct, duration) AS MATERIALIZED (
    SELECT user_id, kid,
      (SELECT other.position FROM away_states AS other WHERE other.user_id = away.user_id AND other.kid = away.kid
        AND other.pct IS NOT NULL ORDER BY other.pct DESC LIMIT 1), max(pct),
      (SELECT other.played FROM away_states AS other WHERE other.user_id = away.user_id AND other.kid = away.kid
        AND other.plct IS NOT NULL ORDER BY other.plct DESC LIMIT 1), max(plct), max(duration)
    FROM away_states AS away WHERE kid IS NOT NULL GROUP BY user_id, kid)
  UPDATE ${e} SET
    position = CASE WHEN ${best("pct")} > coalesce(${e.positionChangedAt}, -1) THEN ${best("position")} ELSE ${e.position} END,
    position_changed_at = CASE WHEN ${best("pct")} > coalesce(${e.positionChangedAt}, -1) THEN ${best("pct")}
      ELSE ${e.positionChangedAt} END,
    played = CASE WHEN ${best("plct")} > coalesce(${e.playedChangedAt}, -1) THEN ${best("played")} ELSE ${e.played} END,
    played_changed_at = CASE WHEN ${best("plct")} > coalesce(${e.playedChangedAt}, -1) THEN ${best("plct")}
      ELSE ${e.playedChangedAt} END,
    duration = coalesce(${e.duration}, ${best("duration")}),
    change_seq = ${rowNextEpisodeChange}, received_at = unixepoch()
  WHERE (${e.userId}, ${e.id}) IN (SELECT user_id, kid FROM best) AND (${best("pct")} > coalesce(${e.positionChangedAt}, -1)
    OR ${best("plct")} > coalesce(${e.playedChangedAt}, -1) OR (${e.duration} IS NULL AND ${best("duration")} IS NOT NULL))`);
}

/**
 * A merged-away state no kept episode matches joins the kept podcast as it is: its feed is the kept guid (a change);
 * its id stays (§13: an id is never recomputed).
 */
function rehomeEpisodesStatement(pairs: SQL): Statement {
  return statement(sql`
  WITH ${matchedSql(pairs)}
  UPDATE ${e} SET change_seq = ${rowNextEpisodeChange}, received_at = unixepoch(),
    feed_guid = (SELECT away.kept FROM away_states AS away WHERE away.user_id = ${e.userId} AND away.id = ${e.id})
  WHERE (${e.userId}, ${e.id}) IN (SELECT user_id, id FROM away_states WHERE kid IS NULL)`);
}

/** The merged-away states left (each joined a kept one) are forgotten as a DELETE forgets: a tombstone each. */
function forgetMergedStatement(pairs: SQL): Statement {
  return statement(sql`
  WITH ${pairs}
  UPDATE ${e} SET media_url = NULL, item_guid = NULL, position = 0, duration = NULL, played = 0,
    position_changed_at = NULL, played_changed_at = NULL, deleted_at = ${now},
    change_seq = ${rowNextEpisodeChange}, received_at = unixepoch()
  WHERE (${e.userId}, ${e.feedGuid}) IN (SELECT user_id, away FROM pairs) AND ${e.deletedAt} IS NULL`);
}

/**
 * The statements that merge the live states of each pair's `away` feed into its `kept` one (in this order, in one
 * batch): matched episodes merged, the others re-homed, the matched ones left forgotten.
 */
function episodeMergeStatements(pairs: SQL): Statement[] {
  return [mergeEpisodesStatement(pairs), rehomeEpisodesStatement(pairs), forgetMergedStatement(pairs)];
}

/**
 * The states a user sent under a move's target before the round learned the move (docs/decisions.md, "States sent
 * under B before the move is learned"): gPodder follows a permanent redirect itself and uploads its plays under B,
 * which then names no subscription of the user's, so they are stored under B's podcast:guid (db/gpodder.ts,
 * `feedGuidOf`) where no read of the subscription finds them. As pairs `(user_id, away, kept)`: each subscription
 * the move changes now (`movableSql`, the slice `applyMovesStatement` moves after these in the batch) with its
 * target URL's podcast:guid, unless an active subscription of the user's has that guid (those states are its own).
 * Only that guid: an upload under B names B's guid when B names no subscription (the http/https and trailing-slash
 * forms of B share it), and A's forms named the subscription itself. At most `limit` pairs (one per user and guid).
 */
const strayPairsSql = sql`pairs(user_id, away, kept) AS MATERIALIZED (
  SELECT moved.user_id, moved.url_guid, min(moved.guid)
  FROM (${movableSql}) AS moved
  WHERE moved.url_guid <> moved.guid AND NOT EXISTS (SELECT 1 FROM ${s} AS g
    WHERE g.user_id = moved.user_id AND g.guid = moved.url_guid AND g.unsubscribed_at IS NULL)
  GROUP BY moved.user_id, moved.url_guid)`;

const joinedStrays = episodeMergeStatements(strayPairsSql);

/**
 * The merged-away subscription becomes a tombstone (a change) that records the guid it joined (`merged_into`: a
 * JSON:API add reviving it is `409` while that one is active, db/subscriptions.ts). Its URL stays what it was. After
 * a learned move, A's names the kept B (an alias), and B's is the kept A's once A moves (the move statement after it
 * in the batch), so neither is a gpodder or Nextcloud `remove` (db/gpodder.ts: a tombstone whose URL an active
 * subscription has or names). After a shared podcast:guid, the merged-away URL is no alias of the kept one (§18's
 * aliases are moves, http/https and slash forms, renames), so the same rule answers it as a `remove` unless an active
 * subscription has it, and a later `remove` of it names only this tombstone.
 */
const mergeSubscriptionsSql = (pairs: SQL) => sql`
  WITH ${pairs}
  UPDATE ${s} SET unsubscribed_at = ${now}, change_seq = ${rowNextChange}, received_at = unixepoch(),
    merged_into = (SELECT pairs.kept FROM pairs WHERE pairs.user_id = ${s.userId} AND pairs.away = ${s.guid})
  WHERE (${s.userId}, ${s.guid}) IN (SELECT user_id, away FROM pairs) AND ${s.unsubscribedAt} IS NULL
  RETURNING 1 AS merged`;

/**
 * The four statements of a merge (in this order, in one batch) over one way of finding the pairs: each opens with
 * the same CTE over the same walk, and nothing it reads changes before the last tombstones the merged-away rows.
 */
const mergeSetOf = (pairs: SQL): Statement[] => [
  ...episodeMergeStatements(pairs),
  statement(mergeSubscriptionsSql(pairs)),
];

/** The merges of a learned move: a moving alias's subscription and its user's at the target. */
const moveMerges = mergeSetOf(pairsSql);

/**
 * The statements that merge up to `limit` users' duplicate subscriptions (MERGED_SUBSCRIPTIONS_PER_STATEMENT unless
 * set), then join the states sent under the targets to the subscriptions the moves change next (as many as
 * `applyMovesStatements` moves: `limit`, MOVED_SUBSCRIPTIONS_PER_STATEMENT unless set). In this order, in one batch,
 * just before `applyMovesStatements`: a kept A then moves to B in the same batch. The fourth returns a row per
 * subscription merged away.
 */
export function mergeStatements(db: Database, at: number, limit?: number): D1PreparedStatement[] {
  const merging = { limit: limit ?? MERGED_SUBSCRIPTIONS_PER_STATEMENT, now: at };
  const joining = { limit: limit ?? MOVED_SUBSCRIPTIONS_PER_STATEMENT, now: at };
  return [...moveMerges.map((each) => each.bind(db, merging)), ...joinedStrays.map((each) => each.bind(db, joining))];
}

/**
 * Up to `limit` of the subscriptions the moving aliases still have to change, changed as a PATCH of feedUrl changes
 * one (a change in the user's change feed, the guid and `userSubscribedAt` kept), each marked as a learned move
 * (`learned_move_seq` = its new change number) for the gpodder.net and Nextcloud reads. Not the user's write, so not
 * checked against the storage budget (§18: "applied whatever the user's storage budget"; the triggers count the new
 * URL's bytes from then on). The moving aliases are found through their partial index: the ones done are cleared
 * by `doneMovingStatement`.
 */
const applyMovesStatement = statement(sql`
  UPDATE ${s} SET feed_url = moved.url, url_key = moved.url_key, change_seq = ${rowNextChange},
    learned_move_seq = ${rowNextChange}, received_at = unixepoch()
  FROM (${movableSql}) AS moved
  WHERE ${s.userId} = moved.user_id AND ${s.guid} = moved.guid
  RETURNING 1 AS moved`);

/**
 * A moving alias's target that no fetch has recorded yet (its feed row made by the move's own subscription changes,
 * `url` NULL) shows what the moved feed's last fetch said until its own first fetch (still due: `next_fetch_at`
 * untouched): the podcast keeps its name through the move instead of reading `pending` for a round. Here, after the
 * subscriptions are moved, so every run that applies a move carries (the run that learned it, a later one after a
 * frozen bucket, each slice past the first): the same podcast by the rule that learned the move.
 */
const carryToTargetStatement = statement(sql`
  UPDATE ${f} SET url = known.target_url, url_guid = known.target_guid, status = known.status, title = known.title,
    author = known.author, description = known.description, image_url = known.image_url, site_url = known.site_url,
    language = known.language, podcast_guid = known.podcast_guid, fetched_at = known.fetched_at
  FROM (SELECT m.canonical_key AS target_key, m.canonical_url AS target_url, m.canonical_url_guid AS target_guid,
      x.status, x.title, x.author,
      x.description, x.image_url, x.site_url, x.language, x.podcast_guid, x.fetched_at
    FROM ${a} AS m INDEXED BY feed_aliases_moving CROSS JOIN ${f} AS x ON x.url_key = m.url_key AND x.url = m.url
    WHERE m.moving = 1 AND x.status = 'ok') AS known
  WHERE ${f.urlKey} = known.target_key AND ${f.url} IS NULL`);

/**
 * The moving aliases with nothing left to change are done (the next runs read them no more): no active subscription
 * of their URL is left, to move or to merge.
 */
const doneMovingStatement = statement(sql`
  UPDATE ${a} SET moving = 0 WHERE ${a.urlKey} IN (
    SELECT m.url_key FROM ${a} AS m INDEXED BY feed_aliases_moving
    WHERE m.moving = 1 AND NOT EXISTS (SELECT 1 FROM ${s} AS t INDEXED BY subscriptions_feed_active
      WHERE ${activeAt("m", "t")}))`);

/**
 * The statements that move up to `limit` subscriptions of the learned moves not yet applied in this database, then
 * carry the moved feeds' facts to their targets' new rows and clear the aliases done, for a batch the round sends anyway (no D1 call of its own). The first statement returns a
 * row per subscription it moved (D1's `meta.changes` counts the triggers' writes too).
 */
export function applyMovesStatements(db: Database, limit = MOVED_SUBSCRIPTIONS_PER_STATEMENT): D1PreparedStatement[] {
  return [
    applyMovesStatement.bind(db, { limit }),
    carryToTargetStatement.bind(db, {}),
    doneMovingStatement.bind(db, {}),
  ];
}

/** Whether an active subscription of any user names the key (the feed round's index: a key shared errs to yes). */
const named = (key: SQL) =>
  sql`EXISTS (SELECT 1 FROM ${s} INDEXED BY subscriptions_feed_active WHERE ${s.urlKey} = ${key} AND ${s.unsubscribedAt} IS NULL)`;
const forgottenKey = sql`${sql.placeholder("urlKey")}`;

/**
 * When the round forgets a feed no active subscription names (src/db/feeds.ts), the aliases it ends that no one
 * needs any more go with it: an alias is kept while an active subscription names either of its URLs (a client
 * may still send the old one), so the table is bounded by what is subscribed, not by every move ever learned.
 */
const forgetAliasesToStatement = statement(sql`
  DELETE FROM ${a} WHERE ${a.canonicalKey} = ${forgottenKey} AND NOT ${named(forgottenKey)} AND NOT ${named(sql`${a.urlKey}`)}`);
const forgetAliasOfStatement = statement(sql`
  DELETE FROM ${a} WHERE ${a.urlKey} = ${forgottenKey} AND NOT ${named(forgottenKey)} AND NOT ${named(sql`${a.canonicalKey}`)}`);

/** The statements that forget the aliases of the forgotten feed `urlKey` that nothing names (in its batch). */
export function forgetAliasStatements(db: Database, urlKey: number): D1PreparedStatement[] {
  return [forgetAliasesToStatement, forgetAliasOfStatement].map((each) => each.bind(db, { urlKey }));
}

// ---------------------------------------------------------------------------------------------
// Merging a user's two subscriptions of feeds that declare one podcast:guid (docs/API.md §18: "Two feeds declaring
// the same `podcast:guid` are one podcast for a user subscribed to both").

/**
 * The other feeds declaring a fetched feed's podcast:guid that a merge looks at, at most: anyone can publish feeds
 * declaring a popular podcast's guid, and each one looked at walks its subscribers; a real podcast has a handful of
 * URLs (old and new host, http and https).
 */
export const FEEDS_PER_PODCAST_GUID = 16;

/**
 * The round's fetched feeds (`keys`, a JSON array of their keys) whose podcast:guid is known, each with every user
 * actively subscribed to it (`t`) and to another feed declaring the same guid (`b`), at most `limit` such pairs: from
 * each fetched feed, the first FEEDS_PER_PODCAST_GUID other feeds of its guid (`feeds_podcast_guid`), their active
 * subscribers (`subscriptions_feed_active`), and for each, that user's active subscription of the fetched feed (a
 * probe of `subscriptions_url`), every URL compared as stored. A feed whose guid no other feed declares costs one
 * index probe. Only the users subscribed to both: a feed declaring another's guid moves nobody else.
 */
const guidBothSql = sql`guid_both(feed_key, user_id, podcast_guid, t_guid, t_at, t_seq, b_guid, b_at, b_seq) AS MATERIALIZED (
  SELECT r.url_key, b.user_id, r.podcast_guid, t.guid, t.subscribed_at, t.subscribed_seq, b.guid, b.subscribed_at,
    b.subscribed_seq
  FROM json_each(${sql.placeholder("keys")}) AS fetched CROSS JOIN ${f} AS r ON r.url_key = fetched.value
    CROSS JOIN ${f} AS o ON o.url_key IN (SELECT x.url_key FROM ${f} AS x INDEXED BY feeds_podcast_guid
      WHERE x.podcast_guid = r.podcast_guid AND x.url_key <> r.url_key LIMIT ${sql.raw(String(FEEDS_PER_PODCAST_GUID))})
    CROSS JOIN ${s} AS b INDEXED BY subscriptions_feed_active
    CROSS JOIN ${s} AS t INDEXED BY subscriptions_url
  WHERE r.podcast_guid IS NOT NULL AND ${activeAt("o", "b")} AND t.user_id = b.user_id AND ${activeAt("r", "t")}
    AND t.guid <> b.guid
  LIMIT ${sql.placeholder("limit")})`;

/**
 * The pairs to merge (as `pairsSql`, the same columns): of each user's subscriptions found together
 * (`guid_members`, one podcast:guid), the older is kept (subscribed earlier, then by change number, then guid), every
 * other merged away into it. A subscription is one feed's, so it is in one group: merged away at most once.
 */
const guidPairsSql = sql`${guidBothSql},
  guid_members(user_id, podcast_guid, guid, subscribed_at, subscribed_seq) AS MATERIALIZED (
    SELECT user_id, podcast_guid, t_guid, t_at, t_seq FROM guid_both
    UNION SELECT user_id, podcast_guid, b_guid, b_at, b_seq FROM guid_both),
  pairs(user_id, away, kept) AS MATERIALIZED (
    SELECT user_id, guid, kept FROM (SELECT member.user_id AS user_id, member.guid AS guid,
        (SELECT oldest.guid FROM guid_members AS oldest
          WHERE oldest.user_id = member.user_id AND oldest.podcast_guid = member.podcast_guid
          ORDER BY oldest.subscribed_at, oldest.subscribed_seq, oldest.guid LIMIT 1) AS kept
      FROM guid_members AS member)
    WHERE guid <> kept)`;

/** The merges of a shared podcast:guid. */
const guidMerges = mergeSetOf(guidPairsSql);

/**
 * A fetched feed with pairs left past the statements' bound is due again at once (the next run fetches it, a `304`
 * as well, and merges the next ones): a guid merge has no marker of its own to go on from, as a move's `moving` has.
 */
const guidMergesLeftStatement = statement(sql`
  WITH ${guidBothSql}
  UPDATE ${f} SET next_fetch_at = ${now} WHERE ${f.urlKey} IN (SELECT feed_key FROM guid_both)`);

/**
 * The statements that merge, for up to `limit` pairs, the subscriptions of each user subscribed to one of the
 * round's fetched feeds `urlKeys` (whose rows the statements before them in the batch wrote) and to another feed
 * declaring its podcast:guid; then the feeds with pairs left are due again. For the outcomes' batch the round sends
 * anyway (no D1 call of its own); nothing when no feed was fetched.
 */
export function guidMergeStatements(
  db: Database,
  urlKeys: readonly number[],
  at: number,
  limit = MERGED_SUBSCRIPTIONS_PER_STATEMENT,
): D1PreparedStatement[] {
  if (urlKeys.length === 0) return [];
  const values = { keys: JSON.stringify(urlKeys), limit, now: at };
  // The pairs left are looked for up to the usual bound even when none may be merged now (a frozen bucket: 0).
  const left = { ...values, limit: MERGED_SUBSCRIPTIONS_PER_STATEMENT };
  return [...guidMerges.map((each) => each.bind(db, values)), guidMergesLeftStatement.bind(db, left)];
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const allStatements: Record<string, Statement> = {
  aliases: aliasesStatement,
  dropTargetAlias: dropTargetAliasStatement,
  moveAliasesOn: moveAliasesOnStatement,
  alias: aliasStatement,
  forgetAliasesTo: forgetAliasesToStatement,
  forgetAliasOf: forgetAliasOfStatement,
  applyMoves: applyMovesStatement,
  carryToTarget: carryToTargetStatement,
  doneMoving: doneMovingStatement,
  mergeEpisodes: moveMerges[0],
  rehomeEpisodes: moveMerges[1],
  forgetMerged: moveMerges[2],
  mergeSubscriptions: moveMerges[3],
  joinStrayEpisodes: joinedStrays[0],
  rehomeStrayEpisodes: joinedStrays[1],
  forgetJoinedStrays: joinedStrays[2],
  guidMergeEpisodes: guidMerges[0],
  guidRehomeEpisodes: guidMerges[1],
  guidForgetMerged: guidMerges[2],
  guidMergeSubscriptions: guidMerges[3],
  guidMergesLeft: guidMergesLeftStatement,
};
