import { type SQL, sql } from "drizzle-orm";
import { credentialGuard, runGuarded, type WriteCredential } from "./app-passwords";
import { type Row, WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { deviceStatement, pathDeviceStatements, runNamingDevice } from "./devices";
import {
  type CreatingWrite,
  refusalsOf,
  type StoredEpisode,
  sentUrlBytes,
  setWriteRow,
  setWriteStatements,
} from "./episodes";
import { joinedActiveSql, movedFromSql, namedSubscriptionsSql, subscriptionsNamedBySql } from "./feed-aliases";
import { episodes as e, subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { MAX_URL_BYTES, roomsStatement, statOf, subscriptionTombstones } from "./storage";
import { feedListFitsSql, MAX_STORED_SUBSCRIPTIONS, unsubscribeSql } from "./subscriptions";
import { type TextPage, type TextPageRow, type TextPageSize, textPageSelect, textPages } from "./text-pages";
import { urlKey } from "./url-key";
import { FEED_URL, ITEM_GUID, MEDIA_URL, quotedBytesAtMost, storedUrl, storedUrlBytes } from "./url-pieces";

/**
 * What the gpodder.net API needs beyond the JSON:API's reads: changes since a Unix second (by `received_at`,
 * the database's clock) and feeds named by their exact URL (by `url_key`), resolved to guids in SQL inside
 * the writing batch, so every upload is one round trip. Subscription writes are built from the same SQL as
 * the JSON:API's (db/subscriptions.ts); episode writes go through its episode writer (db/episodes.ts).
 */

const userId = sql.placeholder("userId");

/**
 * The change number before the first change received at or after `since`: the change index
 * (user, change_seq, received_at) is walked from the newest change down while `received_at` >= since (it
 * never decreases along the change numbers), so the walk reads the changes it returns plus one.
 */
function sinceBoundary(table: typeof s | typeof e) {
  return sql`coalesce((
    SELECT ${table.changeSeq} FROM ${table} WHERE ${table.userId} = ${userId} AND ${table.receivedAt} < ${sql.placeholder("since")}
    ORDER BY ${table.changeSeq} DESC LIMIT 1), 0)`;
}

const urlOf = (row: string) => storedUrl(FEED_URL, row);

/**
 * A feed or media URL as a JSON string is at most twice its 2 048 bytes (JSON escapes an ASCII character in two),
 * and its quotes; an item guid twice its 1 024 bytes.
 */
const MAX_QUOTED_URL = 2 * 2048 + 2;

/**
 * A subscription `a` of the user with exactly row `t`'s URL and matching `where` (`whereUnkeyed` for rows from
 * before 0004, which have no url_key: each is walked, its stored head compared first, since the whole text
 * is read from its pieces). `INDEXED BY`: left to itself, SQLite walks the user's primary key instead (every
 * row of the user). The unkeyed rows are searched only in a `frozen` walk: any other walk reads nothing while the
 * user has such rows left (`unkeyedLeft`), so a search for them would find none, and D1 counts a row read for it.
 */
function withSameUrl(where: SQL, whereUnkeyed = where): SQL {
  return sql`(
  EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key = t.url_key AND ${urlOf("a")} = ${urlOf("t")}
    AND ${where})
  OR ${sql.placeholder("frozen")} AND EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL
    AND a.feed_url = t.feed_url AND ${urlOf("a")} = ${urlOf("t")} AND ${whereUnkeyed}))`;
}

/**
 * The subscription changes GET's pages: a whole account's rows (at most 10 000 stored) in one walk, cut at 1.75 MiB
 * of URL text escaped for JSON. A URL is at most 2 KB (4 KB escaped): an account of long URLs is read in pages of
 * about 450, one of short URLs in one call. The first call carries both lists' first pages, and holds at most 14 MiB:
 * D1's answer escapes the text again (at most twice its bytes), and the text parsed from it takes at most twice its
 * bytes (UTF-16); a later call holds one page, beside the first `remove` page.
 */
export const GPODDER_SUBSCRIPTION_PAGES: TextPageSize = {
  rows: MAX_STORED_SUBSCRIPTIONS + 1,
  min: 100,
  bytes: 1.75 * 1024 * 1024,
};

/**
 * While the user's bucket is frozen for a move, its rows from before migration 0004 cannot be given their url_key:
 * each such row is then compared by text with the other unkeyed rows, so pages stay at 100 rows.
 */
export const GPODDER_FROZEN_SUBSCRIPTION_PAGES: TextPageSize = { rows: 100, min: 100, bytes: 1.75 * 1024 * 1024 };

/**
 * The change number the changes since `since` start after: `floor` once the first page found it (`since` 0 is
 * every change: no walk). Not correlated, so SQLite reads it once per statement however often it is named.
 */
const changesFloor = sql`coalesce(${sql.placeholder("floor")},
  CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE ${sinceBoundary(s)} END)`;
const inRange = sql`a.change_seq > ${changesFloor}`;

/**
 * Whether the user has rows from before migration 0004 (no url_key) left. While they have, a walk that is not
 * `frozen` reads nothing: such a row is compared by its text with every other one (an account of 10 000 read 100
 * million rows), so they are keyed first (retention.ts, `keyUserUrls`) and the walk read again.
 */
const unkeyedLeft = sql`EXISTS (SELECT 1 FROM ${s} AS u INDEXED BY subscriptions_url_key_missing
  WHERE u.user_id = ${userId} AND u.url_key IS NULL)`;

/**
 * A row of the same kind (`kind`) and URL as `t` that names the URL instead of `t`: the first changed in the
 * range. A row without url_key cannot find keyed rows by their URL, so when both kinds are in the range the
 * first row without one names it (a keyed row gives way to any of them).
 */
function namedBefore(kind: SQL): SQL {
  return withSameUrl(
    sql`${kind} AND ${inRange} AND a.change_seq < t.change_seq`,
    sql`${kind} AND ${inRange} AND (t.url_key IS NOT NULL OR a.change_seq < t.change_seq)`,
  );
}

/**
 * One page of the user's changes after change number `after` (null: from the start of `since`), each row that
 * names its URL in the list it is read for (`named`: a URL is named by one row only, the first changed in the range
 * of its kind) written as the URL's JSON string. The walk reads the rows' heads and the lookups `named` makes; the
 * text is built for the rows kept from the heads the walk carried (at most 800 bytes each: a walk holds at most
 * ~8 MB of them in SQLite), a long URL's pieces looked up by key: reading each kept row again by its key cost a row
 * read per row. With the database's clock, the change number the range starts after, and whether unkeyed rows
 * stopped the walk (`unkeyedLeft`).
 */
function changesPageStatement(named: SQL, walk: { index: string; where: SQL; limit?: SQL }): Statement {
  return statement(
    textPageSelect(
      sql`unixepoch() AS now, ${changesFloor} AS floor, ${unkeyedLeft} AS unkeyed`,
      sql`SELECT t.change_seq AS seq, t.user_id AS user_id, t.guid AS guid, t.feed_url AS feed_url,
      CASE WHEN ${named} THEN ${quotedBytesAtMost(FEED_URL, "t", MAX_QUOTED_URL)} + 1 ELSE 0 END AS size
    FROM ${s} AS t INDEXED BY ${sql.raw(walk.index)}
    WHERE t.user_id = ${userId} AND ${walk.where} AND t.change_seq > coalesce(${sql.placeholder("after")}, ${changesFloor})
      AND (${sql.placeholder("frozen")} OR NOT ${unkeyedLeft})
    ORDER BY t.change_seq LIMIT ${walk.limit ?? sql.placeholder("limit")}`,
      sql`json_quote(${urlOf("cut")})`,
    ),
  );
}

/**
 * Whether row `t`'s last change is a learned move (the feed round's, docs/API.md §18) of a subscription the client
 * holds already: an incremental read (`since` > 0) leaves it out, as neither an `add` of the new URL nor a `remove`
 * of the old one (apps delete a removed podcast with its downloads and add a duplicate for an `add`; each moves on
 * its own or keeps the old URL, which stays an alias). The client holds it when it was subscribed before
 * `knownBefore` (ms): the row keeps no time of its earlier changes, and the caller allows for the upload timestamps
 * 10 minutes back (a client's own upload of A comes back inside that margin). A full list (`since` 0) has it.
 */
const learnedMoveKnown = sql`(${sql.placeholder("since")} <> 0 AND t.learned_move_seq IS t.change_seq
  AND t.subscribed_at < ${sql.placeholder("knownBefore")})`;

/**
 * Whether the user's stored feed URLs fit one page by their bound (`user_stats.feed_list_bytes`, drizzle/0019): then
 * a full list is one walk without a cut (`wholeAddedStatement`). Not correlated: read once per statement.
 */
const feedListFits = feedListFitsSql(userId, sql.placeholder("bytes"));

/**
 * `add`: active rows, each URL once, but a learned move the client knew the subscription of. The walk reads every
 * change of the range (its rows are charged for). With `whole` (the first page of a full list), it reads nothing
 * when the list fits a page: `wholeAddedStatement` beside it in the batch answers then.
 */
const addedPageStatement = changesPageStatement(
  sql`t.unsubscribed_at IS NULL AND NOT ${learnedMoveKnown} AND NOT ${namedBefore(sql`a.unsubscribed_at IS NULL`)}`,
  {
    index: "subscriptions_changes",
    where: sql`1`,
    // A LIMIT of 0 ends the walk before its first row; a condition of no row in WHERE is tested at each row walked.
    limit: sql`CASE WHEN ${sql.placeholder("whole")} AND ${feedListFits} THEN 0 ELSE ${sql.placeholder("limit")} END`,
  },
);

/**
 * The full `add` list (`since` 0) of an account whose URLs fit one page (`feedListFits`), in one walk of the user's
 * rows by URL key: D1 counts a row read per row walked (a walk in change order cut by its running sum read three, and
 * two more per row to find an earlier row of its URL). Rows of one key are one group: a key that several active rows
 * share (the same URL twice, until the feed round merges them, or two URLs of one key) makes `shared`, and the caller
 * reads the list by the changes instead (`addedPageStatement`), which tells them apart by their text. The URLs come in
 * key order with their change numbers; `itemsText` puts them in change order. Nothing is walked when the list does not
 * fit (`fits` 0: the page statement beside it answers), nor while rows without url_key are left (`unkeyed`).
 */
const wholeAddedStatement = statement(sql`SELECT unixepoch() AS now, 0 AS floor, ${unkeyedLeft} AS unkeyed,
    ${feedListFits} AS fits, coalesce(sum(keyed.shared), 0) AS shared,
    count(*) AS walked, count(*) AS kept, max(keyed.seq) AS last, coalesce(sum(keyed.size), 0) AS size,
    coalesce(group_concat(keyed.seq, ','), '') || ' ' || coalesce(group_concat(keyed.item, ','), '') AS items
  FROM (SELECT t.change_seq AS seq, count(*) > 1 AS shared, json_quote(${urlOf("t")}) AS item,
      ${quotedBytesAtMost(FEED_URL, "t", MAX_QUOTED_URL)} + 1 AS size
    FROM ${s} AS t INDEXED BY subscriptions_url
    WHERE t.user_id = ${userId} AND t.unsubscribed_at IS NULL
    GROUP BY t.url_key LIMIT CASE WHEN ${feedListFits} AND NOT ${unkeyedLeft} THEN -1 ELSE 0 END) AS keyed`);

type WholeAddedRow = ChangesPageRow & { fits: number; shared: number };

/**
 * Whether the URL `url` (key `key`) names an active subscription of the user by the rule of src/db/feed-aliases.ts:
 * a tombstone of A is no `remove` once the active subscription A named has moved to B (§18: after a learned move
 * neither URL is a remove).
 */
const namesActive = (url: SQL, key: SQL) =>
  sql`EXISTS (SELECT 1 FROM (${subscriptionsNamedBySql(userId, url, key)}) AS n WHERE n.unsubscribed_at IS NULL)`;

/**
 * `remove`: tombstones whose URL no active subscription has nor names (an alias of it), each URL once. As before streaming, a tombstone
 * without url_key is not matched against an active row written since 0004 (finding that one by its URL alone
 * would walk every keyed row). The walk reads the tombstones of the range alone (their partial index, which also
 * serves the purges): the active rows, which say nothing here, cost no row read.
 */
const removedPageStatement = changesPageStatement(
  sql`t.unsubscribed_at IS NOT NULL AND NOT ${withSameUrl(sql`a.unsubscribed_at IS NULL`)}
    AND NOT ${namesActive(urlOf("t"), sql`t.url_key`)}
    AND NOT ${namedBefore(sql`a.unsubscribed_at IS NOT NULL`)}`,
  { index: "subscriptions_tombstones", where: sql`t.unsubscribed_at IS NOT NULL` },
);

type ChangesPageRow = TextPageRow & { now: number; floor: number; unkeyed: number };

/** The subscription changes since a time (`readSubscriptionChanges`). */
export interface SubscriptionChanges {
  /** The database's clock at the first pages. */
  now: number;
  /** Rows without url_key stopped the walks (nothing was read): key them, then read again. */
  unkeyed: boolean;
  /** The two lists' pages: each page's URLs as JSON strings, comma-separated. */
  add: AsyncGenerator<TextPage, void, undefined>;
  remove: AsyncGenerator<TextPage, void, undefined>;
}

/** The device a request's path names, for its own batch to create or keep (db/devices.ts, `pathDeviceStatements`). */
export interface NamedDevice {
  id: string;
  at: number;
}

/**
 * Subscriptions whose last change reached the database at or after Unix second `since`: URLs added, and URLs no
 * active subscription has any more, each in the order of its first change in the range. One batch reads both
 * lists' first pages (with `device`, after the caller's credential guard, the device is created or kept first:
 * DeviceLimitError past the limit): for an account whose URLs fit a page each, that is the whole answer in one round
 * trip. The later pages, one D1 call each, are read as they are asked for. `now`: the database's clock at the first
 * pages (a `since` that misses nothing received while the pages are read, as the episode changes' is). `size`: other
 * pages than the API's (tests of the pages' seams). `knownBefore` (ms): the client holds the subscriptions made
 * before it, so their learned moves are neither `add` nor `remove` (`learnedMoveKnown`).
 */
export async function readSubscriptionChanges(
  db: Database,
  caller: WriteCredential,
  since: number,
  options: { frozen: boolean; device?: NamedDevice; size?: TextPageSize; knownBefore: number },
): Promise<SubscriptionChanges> {
  const user = caller.userId;
  const size = options.size ?? (options.frozen ? GPODDER_FROZEN_SUBSCRIPTION_PAGES : GPODDER_SUBSCRIPTION_PAGES);
  const values = {
    userId: user,
    since,
    floor: null,
    after: null,
    limit: size.rows,
    bytes: size.bytes,
    frozen: options.frozen ? 1 : 0,
    knownBefore: options.knownBefore,
    whole: 0,
  };
  // A full list of an account that fits one page is one walk without a cut (`wholeAddedStatement`); a frozen
  // bucket's unkeyed rows are compared by their text, which only the page statement does.
  const whole = since === 0 && !options.frozen;
  const batch = new WriteBatch();
  const { device } = options;
  if (device) batch.push(credentialGuard(db, caller), ...pathDeviceStatements(db, user, device.id, device.at));
  const wholeAdded = whole ? batch.push(wholeAddedStatement.bind(db, values)) : undefined;
  const firsts = batch.push(
    addedPageStatement.bind(db, { ...values, whole: whole ? 1 : 0 }),
    removedPageStatement.bind(db, values),
  );
  await (device ? runGuarded(() => runNamingDevice(() => batch.run(db)), caller) : batch.run(db));
  const [paged, removed] = firsts.results().map((result) => result.results[0] as unknown as ChangesPageRow);
  const wholeRow = wholeAdded?.results()[0].results[0] as unknown as WholeAddedRow | undefined;
  let added = wholeRow?.fits ? wholeRow : paged;
  if (wholeRow?.fits && wholeRow.shared > 0) {
    added = (await call(() => addedPageStatement.bind(db, values).first())) as unknown as ChangesPageRow;
  }
  const floor = added.floor;
  const walk = (pageStatement: Statement, first: ChangesPageRow) =>
    textPages(
      first,
      size.rows,
      async (after, limit) =>
        (await call(() =>
          pageStatement.bind(db, { ...values, floor, after, limit }).first(),
        )) as unknown as ChangesPageRow,
      size,
      '"',
    );
  return {
    now: added.now,
    unkeyed: !options.frozen && added.unkeyed === 1,
    add: walk(addedPageStatement, added),
    remove: walk(removedPageStatement, removed),
  };
}

const clockStatement = statement(sql`SELECT unixepoch() AS now`);

// ---------------------------------------------------------------------------------------------
// Feeds named by URL. gpodder names a feed by its URL; the service by its guid. Every gpodder write
// resolves a URL to a guid in SQL, inside the batch that writes (one round trip), by one rule.

const feedUrl = sql`${sql.placeholder("feedUrl")}`;
const feedUrlKey = sql`${sql.placeholder("urlKey")}`;
const feeds = sql.placeholder("feeds");

/**
 * The user's subscriptions (active or tombstones) that the URL `url` names (src/db/feed-aliases.ts, the one rule:
 * the URL, its canonical one and every URL that moved there), and rows from before 0004 (no url_key) with exactly
 * that URL, by the text alone. `INDEXED BY`: left to itself, SQLite walks the user's primary key (every row of the
 * user) for `url_key IS NULL`.
 */
function withUrl(url: SQL, key: SQL, podcastGuid?: SQL): SQL {
  return sql`
    SELECT * FROM (${subscriptionsNamedBySql(userId, url, key, podcastGuid)})
    UNION ALL
    SELECT a.guid, a.unsubscribed_at, a.change_seq, a.merged_into
    FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL AND ${urlOf("a")} = ${url}`;
}

/**
 * The guid the subscription row `row` that a URL named stands for: the active subscription the feed round merged
 * it into (src/db/feed-aliases.ts, `joinedActiveSql`: a device that still holds the merged-away URL of a guid merge
 * uploads under it, and its plays belong to the kept podcast, where every other device reads them), else its own
 * (NULL for none). Once the kept one is gone too, the tombstone's own again.
 */
const keptGuidOf = (row: string) => sql`coalesce(${joinedActiveSql(userId, row)}, ${sql.raw(row)}.guid)`;

/**
 * The guid of the feed a gpodder URL names (docs/API.md §14, §18): the user's subscription that URL names,
 * the active one (the one changed last if several), else the one changed last, else the URL's podcast:guid
 * (computed in the isolate and bound; without it, no form of the URL is looked up and none is the answer); a
 * tombstone the feed round merged into an active subscription names that
 * one (`keptGuidOf`). An add subscribes under it (with no active subscription of the URL it is the tombstone's
 * guid, else the podcast:guid; a merged-away URL's is active: nothing is written), and an episode action names its
 * feed by it. `max()` picks the row (SQLite takes bare columns from the row of the maximum): active rows rank above
 * every tombstone (change numbers stay far below 2^53), without a sort.
 */
function feedGuidOf(url: SQL, key: SQL, podcastGuid?: SQL): SQL {
  return sql`coalesce((SELECT ${keptGuidOf("best")} FROM (
    SELECT guid, unsubscribed_at, merged_into, max((unsubscribed_at IS NULL) * 9007199254740992 + change_seq)
    FROM (${withUrl(url, key, podcastGuid)})) AS best), ${podcastGuid ?? sql`NULL`})`;
}

// ---------------------------------------------------------------------------------------------
// Subscription uploads of up to 10 000 URLs (docs/API.md §14: gPodder sends every queued change in one request
// and cannot split it). Each statement takes a chunk of the URLs as one JSON text (D1 binds at most 100
// parameters, and strings of at most 2 MB), and handles them as a set: a statement per URL was 39 KB of SQL
// text sent to D1 per add (its room and its subscribe).

/**
 * A chunk's feeds, keyed by their place in the chunk, the user's rows with each URL, and the guid each URL names
 * as `feedGuidOf` resolves it, with whether a row with that URL is active and the URL's bytes. By text, the chunk
 * is `[url, urlKey, podcastGuid]` each (`feeds`): rows are found by key and compared by their text, and the rows
 * from before 0004 (no url_key) are read once and joined by their text instead of walked once per URL. By key
 * (`byText` false), it is `[urlKey, podcastGuid, bytes]` each (`keys`): rows are found by key alone, and rows
 * without one are not found; what the room statement needs, bound without the URLs (the D1 request holds every
 * statement's parameters, and the chunk's text in three statements made an upload of 16 MiB hold as much again
 * three times over). `CROSS JOIN` keeps the sent URLs outside: left to itself, SQLite walks every row of the user
 * and looks each up among them.
 */
function resolvedFeeds(byText: boolean): SQL {
  const sent = byText
    ? sql`SELECT key, value ->> 0, value ->> 1, value ->> 2, length(CAST(value ->> 0 AS BLOB)) FROM json_each(${feeds})`
    : sql`SELECT key, NULL, value ->> 0, value ->> 1, value ->> 2 FROM json_each(${sql.placeholder("keys")})`;
  const unkeyed = byText
    ? sql`
    UNION ALL
    SELECT sent.i, u.guid, u.rank, u.unsubscribed_at, u.merged_into FROM sent CROSS JOIN unkeyed AS u ON u.url = sent.url`
    : sql``;
  return sql`sent(i, url, url_key, podcast_guid, bytes) AS (${sent}),
  unkeyed AS MATERIALIZED (
    SELECT a.guid AS guid, ${urlOf("a")} AS url, (a.unsubscribed_at IS NULL) * 9007199254740992 + a.change_seq AS rank,
      a.unsubscribed_at AS unsubscribed_at, a.merged_into AS merged_into
    FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL AND ${byText}),
  ${namedSubscriptionsSql(userId, "sent", byText)},
  matches(i, guid, rank, unsubscribed_at, merged_into) AS (
    SELECT i, guid, (unsubscribed_at IS NULL) * 9007199254740992 + change_seq, unsubscribed_at, merged_into
    FROM named_subscriptions${unkeyed}),
  resolved(i, url, url_key, guid, url_active, bytes) AS (
    SELECT sent.i, sent.url, sent.url_key, coalesce(${keptGuidOf("best")}, sent.podcast_guid),
      coalesce(best.rank >= 9007199254740992, 0), sent.bytes
    FROM sent LEFT JOIN (SELECT i, guid, unsubscribed_at, merged_into, max(rank) AS rank FROM matches GROUP BY i) AS best
      ON best.i = sent.i)`;
}

/**
 * The adds a chunk would write, in order, as a sequence of single adds would (`subscribeSql`): not one whose
 * URL an active subscription has, nor one whose guid is active (under another URL), nor a second of one guid
 * (the http and https forms of one feed); `is_new` (no row with the guid: a slot of the quota) and `growth` (the
 * URL bytes it adds over its tombstone's).
 */
function writableAdds(byText: boolean): SQL {
  return sql`${resolvedFeeds(byText)},
  candidates AS (
    SELECT r.i AS i, r.url AS url, r.url_key AS url_key, r.guid AS guid, t.guid IS NULL AS is_new,
      t.guid IS NOT NULL AND t.unsubscribed_at IS NULL AS guid_active,
      r.bytes - CASE WHEN t.guid IS NULL THEN 0 ELSE ${storedUrlBytes(FEED_URL, "t")} END AS growth,
      row_number() OVER (PARTITION BY r.guid ORDER BY r.i) AS nth
    FROM resolved AS r LEFT JOIN ${s} AS t ON t.user_id = ${userId} AND t.guid = r.guid
    WHERE NOT r.url_active),
  writable AS (SELECT * FROM candidates WHERE nth = 1 AND NOT guid_active)`;
}

const storedCount = statOf(stats.storedCount);
const storedBytes = statOf(stats.urlBytes);

/**
 * Before each chunk's adds: the room they need, made as a single add's is (storage.ts), for the chunk at once: the
 * user's oldest tombstones purged, as many as the new rows and the bytes need, never one the chunk revives. Unlike
 * a single add's, it purges what there is even when that is not enough (`partial`): the adds are then admitted
 * in order while they fit. A chunk that fits whatever its URLs resolve to (its count and bytes, bound) needs no
 * look at them. Bound by key (`resolvedFeeds`): a URL stored before 0004 and not keyed yet counts as new here,
 * which may purge a tombstone more than needed, and no row without a key is purged (it may be one the chunk
 * revives); the adds themselves are checked by text.
 */
const uploadFits = sql`(coalesce(${storedCount}, 0) + json_array_length(${sql.placeholder("keys")}) <= ${MAX_STORED_SUBSCRIPTIONS}
  AND coalesce(${storedBytes}, 0) + ${sql.placeholder("sentBytes")} <= ${MAX_URL_BYTES})`;
const roomAdds = writableAdds(false);
const uploadRoomStatement = roomsStatement([
  {
    table: subscriptionTombstones,
    partial: true,
    need: {
      count: sql`(CASE WHEN ${uploadFits} THEN 0 ELSE (WITH ${roomAdds}
        SELECT coalesce(sum(is_new), 0) FROM writable) + coalesce(${storedCount}, 0) - ${MAX_STORED_SUBSCRIPTIONS} END)`,
      bytes: sql`(CASE WHEN ${uploadFits} THEN 0 ELSE (WITH ${roomAdds}
        SELECT coalesce(sum(max(growth, 0)), 0) FROM writable) + coalesce(${storedBytes}, 0) - ${MAX_URL_BYTES} END)`,
      exclude: sql`NULL`,
      // Rows without a key are not found by key: none of them is purged here, one of them may be revived.
      excludeAll: sql`WITH ${roomAdds} SELECT guid FROM writable WHERE NOT is_new
        UNION ALL SELECT m.guid FROM ${s} AS m INDEXED BY subscriptions_url_key_missing
        WHERE m.user_id = ${userId} AND m.url_key IS NULL`,
    },
  },
]);

/**
 * A chunk's adds: each writable one in order while it fits the quota (the new rows so far) and the budget (the
 * bytes the growing ones add so far), subscribed as `subscribeSql` does (a new row, or its tombstone revived with
 * the new URL and a fresh time), each under the next change number in order. SQLite reads the whole SELECT
 * before it inserts (the table has triggers), so the quota and budget are checked here, for the set, against
 * the counts before it; the triggers then count what it wrote. Once one does not fit, no later one that needs
 * that room is written: the upload is admitted in order.
 */
const uploadStatement = statement(sql`
  WITH ${writableAdds(true)},
  admitted AS (
    SELECT *, sum(is_new) OVER (ORDER BY i) AS new_so_far, sum(max(growth, 0)) OVER (ORDER BY i) AS bytes_so_far
    FROM writable),
  written AS (
    SELECT *, row_number() OVER (ORDER BY i) AS n FROM admitted
    WHERE (NOT is_new OR coalesce(${storedCount}, 0) + new_so_far <= ${MAX_STORED_SUBSCRIPTIONS})
      AND (growth <= 0 OR coalesce(${storedBytes}, 0) + bytes_so_far <= ${MAX_URL_BYTES}))
  INSERT INTO ${s} (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, received_at, url_key)
  SELECT ${userId}, guid, url, ${sql.placeholder("now")}, NULL, coalesce(${statOf(stats.version)}, 0) + n,
    coalesce(${statOf(stats.version)}, 0) + n, unixepoch(), url_key
  FROM written WHERE true ORDER BY n
  ON CONFLICT (user_id, guid) DO UPDATE SET
    feed_url = excluded.feed_url, subscribed_at = excluded.subscribed_at, unsubscribed_at = NULL,
    change_seq = excluded.change_seq, subscribed_seq = excluded.subscribed_seq, received_at = excluded.received_at,
    url_key = excluded.url_key, merged_into = NULL
  WHERE ${s.unsubscribedAt} IS NOT NULL`);

/**
 * A chunk's removes (`[url, urlKey, podcastGuid]` each): every active subscription one of its URLs names (§18: a
 * remove of any alias unsubscribes the podcast), and the one whose guid is the URL's section 14 podcast:guid, which
 * its http/https and trailing-slash forms share (the same rule that makes an add of another form write nothing).
 */
const removeUrlsStatement = statement(
  unsubscribeSql(sql`${s.userId} = ${userId} AND ${s.guid} IN (
    WITH sent(i, url, url_key, podcast_guid) AS (SELECT key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(${feeds})),
    ${namedSubscriptionsSql(userId, "sent")}
    SELECT guid FROM named_subscriptions
    UNION ALL
    SELECT value ->> 2 FROM json_each(${feeds})
    UNION ALL
    SELECT a.guid FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL
      AND ${urlOf("a")} IN (SELECT url FROM sent))`),
);

/**
 * The simple API's PUT: unsubscribes every active subscription whose URL is not among the adds, bound as the add
 * chunks (`feeds0`, `feeds1`, ...: one statement per number of chunks). The rows are found through the index of
 * active rows: left to itself, SQLite walks the user's primary key (every tombstone too).
 */
const removeUnlistedStatements = new Map<number, Statement>();
function removeUnlistedStatement(chunks: number): Statement {
  let made = removeUnlistedStatements.get(chunks);
  if (!made) {
    // One NOT IN per chunk (each a lookup in its own list, built once): D1 allows few terms in a compound SELECT.
    // A row a listed URL names (§18: an alias of it) is listed too, and so is one a listed URL's tombstone was
    // merged into (`keptGuidOf`: the row is active, so its guid in `merged_into` is the rule; no NULL in the list,
    // which would make every NOT IN unknown), and so is the one whose guid is a listed URL's section 14
    // podcast:guid (its http/https and trailing-slash forms: the add of it writes nothing).
    const unlisted = sql.join(
      Array.from({ length: Math.max(1, chunks) }, (_, index) => {
        const listed = sql.placeholder(`feeds${index}`);
        return sql`a.url NOT IN (SELECT value ->> 0 FROM json_each(${listed})) AND a.guid NOT IN (
          WITH sent(i, url, url_key, podcast_guid) AS (
            SELECT key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(${listed})),
          ${namedSubscriptionsSql(userId, "sent")} SELECT guid FROM named_subscriptions
          UNION ALL SELECT merged_into FROM named_subscriptions WHERE merged_into IS NOT NULL AND unsubscribed_at IS NOT NULL
          UNION ALL SELECT value ->> 2 FROM json_each(${listed}))`;
      }),
      sql` AND `,
    );
    made = statement(
      unsubscribeSql(sql`${s.userId} = ${userId} AND ${s.guid} IN (
        SELECT a.guid FROM (SELECT b.guid AS guid, ${urlOf("b")} AS url FROM ${s} AS b INDEXED BY subscriptions_active_page
          WHERE b.user_id = ${userId} AND b.unsubscribed_at IS NULL) AS a
        WHERE ${unlisted})`),
    );
    removeUnlistedStatements.set(chunks, made);
  }
  return made;
}

/**
 * Each sent feed's guid as it now resolves, and the URL that guid is active under (null when it is not
 * active). After an add: the add's own URL when it is subscribed, another URL when its guid is active under
 * that one (nothing written), null when the quota or the budget refused it.
 */
const resolvedStatement = statement(sql`
  WITH ${resolvedFeeds(true)}
  SELECT r.i AS i, r.guid AS guid,
    (SELECT ${urlOf("x")} FROM ${s} AS x WHERE x.user_id = ${userId} AND x.guid = r.guid AND x.unsubscribed_at IS NULL) AS activeUrl
  FROM resolved AS r`);

/** A feed a gpodder request names: its URL as stored, and the URL's podcast:guid. */
export interface NamedFeed {
  url: string;
  podcastGuid: string;
}

/** A named feed's guid as it resolves, and the URL that guid is active under (null: not active). */
export interface ResolvedFeed {
  guid: string;
  activeUrl: string | null;
}

function feedsValue(named: readonly NamedFeed[], keys: readonly number[]): string {
  return JSON.stringify(named.map((feed, i) => [feed.url, keys[i], feed.podcastGuid]));
}

function readResolved(rows: readonly Row[], count: number): ResolvedFeed[] {
  const resolved: ResolvedFeed[] = new Array(count);
  for (const row of rows) {
    resolved[row.i as number] = { guid: row.guid as string, activeUrl: row.activeUrl as string | null };
  }
  return resolved;
}

/** The most UTF-8 bytes of JSON text one statement binds (D1 takes strings of at most 2 MB). */
const CHUNK_BYTES = 1_000_000;

const encoder = new TextEncoder();
const utf8Length = (text: string) => encoder.encode(text).byteLength;

/**
 * A chunk of an upload's feeds: their JSON text (`[url, urlKey, podcastGuid]` each),
 * the same without the URLs (`[urlKey, podcastGuid, bytes]` each, for the room), where it starts in the upload,
 * and their URLs' bytes.
 */
interface FeedChunk {
  feeds: string;
  keys: string;
  first: number;
  sentBytes: number;
}

/** Feeds in chunks of at most CHUNK_BYTES of JSON text (none for none). */
function chunked(items: readonly NamedFeed[]): FeedChunk[] {
  const chunks: FeedChunk[] = [];
  let texts: string[] = [];
  let keys: string[] = [];
  let first = 0;
  let bytes = 2;
  let sentBytes = 0;
  const close = () => {
    chunks.push({ feeds: `[${texts.join(",")}]`, keys: `[${keys.join(",")}]`, first, sentBytes });
    first += texts.length;
    texts = [];
    keys = [];
    bytes = 2;
    sentBytes = 0;
  };
  for (const { url, podcastGuid } of items) {
    const key = urlKey(url);
    const text = JSON.stringify([url, key, podcastGuid]);
    const textBytes = utf8Length(text) + 1;
    if (texts.length > 0 && bytes + textBytes > CHUNK_BYTES) close();
    const urlBytes = utf8Length(url);
    texts.push(text);
    keys.push(JSON.stringify([key, podcastGuid, urlBytes]));
    bytes += textBytes;
    sentBytes += urlBytes;
  }
  if (texts.length > 0) close();
  return chunks;
}

/**
 * A gpodder subscription upload of up to 10 000 URLs in one batch (one round trip, one transaction), after the
 * caller's credential guard and, with `device`, the device the path names (created or kept: DeviceLimitError, nothing
 * written, past the limit): the removes, or with `replaceAll` (the simple API's PUT) every active subscription
 * whose URL is not among the adds; then the adds in order, chunk by chunk (each chunk's room, then its adds);
 * then what each add's URL resolves to, and the database's clock. `add` holds each URL once. The batch may be
 * the caller's (it then reads the purges' renumbering from it).
 */
export async function writeGpodderSubscriptions(
  db: Database,
  caller: WriteCredential,
  changes: { remove: readonly NamedFeed[]; add: readonly NamedFeed[]; replaceAll?: boolean; device?: string },
  at: number,
  batch = new WriteBatch(),
): Promise<{ now: number; added: ResolvedFeed[] }> {
  const user = caller.userId;
  batch.push(credentialGuard(db, caller));
  if (changes.device !== undefined) batch.push(...pathDeviceStatements(db, user, changes.device, at));
  const bound = (statement: Statement, values: Record<string, unknown>) =>
    statement.bind(db, { userId: user, now: at, ...values });
  for (const chunk of chunked(changes.remove)) {
    batch.push(bound(removeUrlsStatement, { feeds: chunk.feeds }));
  }
  const adds = chunked(changes.add);
  if (changes.replaceAll) {
    const listed = Object.fromEntries(adds.map((chunk, index) => [`feeds${index}`, chunk.feeds]));
    batch.push(bound(removeUnlistedStatement(adds.length), adds.length === 0 ? { feeds0: "[]" } : listed));
  }
  for (const chunk of adds) {
    batch.push(
      bound(uploadRoomStatement, { keys: chunk.keys, sentBytes: chunk.sentBytes }),
      bound(uploadStatement, { feeds: chunk.feeds }),
    );
  }
  const resolved = adds.map((chunk) => ({ chunk, slot: batch.push(bound(resolvedStatement, { feeds: chunk.feeds })) }));
  const clock = batch.push(clockStatement.bind(db, {}));
  await runGuarded(() => runNamingDevice(() => batch.run(db)), caller);
  const added: ResolvedFeed[] = new Array(changes.add.length);
  for (const { chunk, slot } of resolved) {
    for (const row of slot.results()[0].results) {
      added[chunk.first + (row.i as number)] = { guid: row.guid as string, activeUrl: row.activeUrl as string | null };
    }
  }
  return { now: clock.results()[0].results[0].now as number, added };
}

/**
 * The episode actions GET's pages: up to a quarter of the episode quota's rows (12 500) in one walk, cut at 3.75 MiB
 * of action text. An action is its feed's URL, its media URL and its guid escaped for JSON (up to ~10 KB) and at most
 * 144 bytes more: an account of long URLs is read in pages of about 400, one of 10 000 short ones (about 3.3 MB) in
 * one call. What a page holds is at most 15 MiB: D1's answer escapes the text again (at most twice its bytes), and
 * the text parsed from it takes at most twice its bytes (UTF-16).
 */
export const GPODDER_EPISODE_PAGES: TextPageSize = { rows: 12_500, min: 100, bytes: 3.75 * 1024 * 1024 };

/** An episode state as the gpodder API tells it (no ids: gpodder names episodes by URL). */
export type EpisodeState = Omit<StoredEpisode, "id" | "feedGuid">;

/** Whether a live state of row `t` has anything to tell (`actionText` is not NULL for it, its feed subscribed). */
const tellsSomething = sql`(t.played OR (t.position > 0 AND t.duration IS NOT NULL) OR t.played_changed_at IS NOT NULL)`;

/**
 * The action that tells a gpodder client the state of episode row `row`, as `toEpisodeAction` (gpodder/episode-actions.ts)
 * writes it, member for member (docs/API.md §14, the replay mapping included), after `podcast`, its feed's URL as a
 * JSON string; NULL when there is nothing to tell (a feed the user never subscribed to, a state with neither a
 * position nor a played mark).
 */
const actionText = (podcast: SQL, row: string) => {
  const r = sql.raw(row);
  const time = sql`strftime('%Y-%m-%dT%H:%M:%S', max(coalesce(${r}.position_changed_at, 0), coalesce(${r}.played_changed_at, 0)) / 1000, 'unixepoch')`;
  const itemGuid = storedUrl(ITEM_GUID, row);
  const head = sql`'{"podcast":' || ${podcast} || ',"episode":' || json_quote(${storedUrl(MEDIA_URL, row)})
    || CASE WHEN ${r}.item_guid IS NULL THEN '' ELSE ',"guid":' || json_quote(${itemGuid}) END
    || ',"timestamp":"' || ${time} || '"'`;
  const play = (started: SQL, position: SQL) =>
    sql`',"action":"play","started":' || ${started} || ',"position":' || ${position} || ',"total":' || ${r}.duration || '}'`;
  const replaying = sql`${r}.position_changed_at IS NOT NULL
    AND (${r}.played_changed_at IS NULL OR ${r}.position_changed_at > ${r}.played_changed_at) AND ${r}.position < ${r}.duration`;
  return sql`${head} || CASE
    WHEN ${r}.played AND ${r}.duration IS NULL THEN ',"action":"play"}'
    WHEN ${r}.played AND ${replaying} THEN ${play(sql`0`, sql`${r}.position`)}
    WHEN ${r}.played THEN ${play(sql`${r}.duration`, sql`${r}.duration`)}
    WHEN ${r}.position > 0 AND ${r}.duration IS NOT NULL THEN ${play(sql`0`, sql`${r}.position`)}
    WHEN ${r}.played_changed_at IS NOT NULL THEN ',"action":"new"}'
  END`;
};

const MAX_QUOTED_GUID = 2 * 1024 + 2;
/**
 * An action's members beyond its feed's URL, media URL and guid: names, the time, the action and its three numbers
 * (of up to 10 digits), a comma: at most 144 bytes.
 */
const ACTION_REST_BYTES = 150;

/** The columns of an episode row its action's text is written from (`actionText`), carried by the walk. */
const ACTION_COLUMNS = [
  "user_id",
  "id",
  "feed_guid",
  "media_url",
  "item_guid",
  "position",
  "duration",
  "played",
  "position_changed_at",
  "played_changed_at",
];

/**
 * A page of the user's episode states (rows `t` of `from` where `where`) in change order after change number
 * `after`, each written as its action's text (`actionText`). The walk reads the rows and their feeds' heads only
 * (tombstones, and states of feeds the user never subscribed to, are walked and told nothing: a page reads what it
 * walks, however many of them lie in between); the text is built for the rows kept from the columns the walk
 * carried (`ACTION_COLUMNS`, the URLs' heads of at most 800 bytes: a walk of 12 500 holds ~10 MB of them in SQLite),
 * with its feed looked up again (carrying its head too did not help: SQLite copies the lookup into each use):
 * reading each kept row again by its key cost a row read per action. With the database's clock.
 *
 * With `aliases` (the gpodder.net read), a state of a subscription a learned move changed is told again under each
 * URL it may have moved from (`movedFromSql`, at most ANSWERED_ALIASES: an index walk of that many rows more per
 * such state, in the walk and again for its text), right after its action under the stored URL, as further actions
 * of the same values: gPodder matches an action by the exact podcast URL it holds, and a device still on A skipped
 * every play answered under B alone (docs/decisions.md, "Episode reads under every alias"). The walk's size
 * counts the aliases by key (an upper bound), the text those whose canonical URL is the stored one. A row's
 * actions are joined by `, ` (JSON allows it), which `itemsText` never splits at: its items stay one per row.
 */
function actionsPageStatement(from: SQL, where: SQL, limit: SQL = sql`${sql.placeholder("limit")}`): Statement {
  const columns = (row: string) => sql.raw(ACTION_COLUMNS.map((column) => `${row}.${column} AS ${column}`).join(", "));
  const own = sql`${quotedBytesAtMost(MEDIA_URL, "t", MAX_QUOTED_URL)} + ${quotedBytesAtMost(ITEM_GUID, "t", MAX_QUOTED_GUID)}
    + ${sql.raw(String(ACTION_REST_BYTES))}`;
  const copies = (row: string) => sql`${sql.placeholder("aliases")} AND ${sql.raw(row)}.learned_move_seq IS NOT NULL`;
  // `moved_from`: the aliases' rows (at most ANSWERED_ALIASES), which the plan reads as a co-routine of their own.
  const aliasBytes = sql`(SELECT coalesce(sum(${own} + 2 + length(CAST(moved_from.url AS BLOB)) + length(moved_from.url)
      - length(replace(replace(moved_from.url, '"', ''), '\\', ''))), 0)
    FROM (${movedFromSql("f")}) AS moved_from)`;
  const size = sql`(SELECT ${own} + ${quotedBytesAtMost(FEED_URL, "f", MAX_QUOTED_URL)}
      + CASE WHEN ${copies("f")} THEN ${aliasBytes} ELSE 0 END
    FROM ${s} AS f WHERE f.user_id = ${userId} AND f.guid = t.feed_guid)`;
  const action = (podcast: SQL) => actionText(podcast, "carried");
  const aliasActions = sql`coalesce((SELECT group_concat(', ' || ${action(sql`json_quote(moved_from.url)`)}, '')
      FROM (${movedFromSql("carried")}) AS moved_from WHERE moved_from.canonical_url = carried.stored_url), '')`;
  // The kept row's columns, with its feed's: its URL's whole text, and what `movedFromSql` reads.
  const carried = sql`SELECT ${columns("cut")}, f.learned_move_seq AS learned_move_seq, f.url_key AS url_key,
      ${urlOf("f")} AS stored_url
    FROM ${s} AS f WHERE f.user_id = ${userId} AND f.guid = cut.feed_guid`;
  return statement(
    textPageSelect(
      sql`unixepoch() AS now`,
      sql`SELECT t.change_seq AS seq, ${columns("t")},
      CASE WHEN t.deleted_at IS NULL AND ${tellsSomething} THEN coalesce(${size}, 0) ELSE 0 END AS size
    FROM ${from} WHERE ${where}
    ORDER BY t.change_seq LIMIT ${limit}`,
      sql`(SELECT ${action(sql`json_quote(carried.stored_url)`)}
          || CASE WHEN ${copies("carried")} THEN ${aliasActions} ELSE '' END
        FROM (${carried}) AS carried)`,
    ),
  );
}

/**
 * Whether the user's episode states, as gpodder actions, fit one page by the bound the stats keep (drizzle/0020: each
 * state's media URL and guid as JSON strings, and per state the members every action has and the user's longest feed
 * URL ever) and by its rows (`limit`, the most a page walks), and none is told under a learned move's old URLs too
 * (`aliases`: those copies are past the bound; a user with a learned move is read in pages). Not correlated: read
 * once per statement.
 */
const episodeListFits = sql`coalesce((SELECT ${stats.episodeListBytes}
      + ${stats.episodeCount} * (${sql.raw(String(ACTION_REST_BYTES))} + ${stats.feedUrlMaxBytes}) <= ${sql.placeholder("bytes")}
      AND ${stats.episodeCount} <= ${sql.placeholder("limit")}
    FROM ${stats} WHERE ${stats.userId} = ${userId}), 1)
  AND NOT (${sql.placeholder("aliases")} AND EXISTS (SELECT 1 FROM ${s} AS m INDEXED BY subscriptions_learned_moves
    WHERE m.user_id = ${userId} AND m.learned_move_seq IS NOT NULL))`;

/**
 * One page of the user's episode changes received at or after `since`, after change number `after` (null: the
 * first page, which finds the change number `since` starts after). `since` 0 is every change (no received_at is
 * below 0): no walk. With `whole` (the first page of a full list), it walks nothing when the list fits a page:
 * `wholeEpisodesStatement` beside it in the batch answers then.
 */
const episodeChangesPageStatement = actionsPageStatement(
  sql`${e} AS t`,
  sql`t.user_id = ${userId} AND t.change_seq > coalesce(${sql.placeholder("after")},
      CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE ${sinceBoundary(e)} END)`,
  // A LIMIT of 0 ends the walk before its first row; a condition of no row in WHERE is tested at each row walked.
  sql`CASE WHEN ${sql.placeholder("whole")} AND ${episodeListFits} THEN 0 ELSE ${sql.placeholder("limit")} END`,
);

/**
 * Every episode state of the user as gpodder actions (`since` 0, no podcast named) when they fit one page
 * (`episodeListFits`), in one walk in change order without the running sum a cut needs: D1 counts a row read per
 * state walked and one for its feed, looked up once, in the walk (the page statement reads five per state: its
 * running sum's two, its feed twice). The walk is a subquery with a LIMIT, which SQLite does not flatten into the
 * aggregate, so each action's text is written once. Nothing is walked when the list does not fit (`fits` 0: the page
 * statement beside it answers).
 */
const wholeEpisodesStatement = statement(sql`SELECT unixepoch() AS now, ${episodeListFits} AS fits,
    count(*) AS walked, count(*) AS kept, max(listed.seq) AS last, coalesce(sum(length(listed.item)), 0) AS size,
    coalesce(group_concat(CASE WHEN listed.item IS NOT NULL THEN listed.seq END, ','), '') || ' '
      || coalesce(group_concat(listed.item, ','), '') AS items
  FROM (SELECT t.change_seq AS seq, CASE WHEN t.deleted_at IS NULL AND ${tellsSomething}
        THEN (SELECT ${actionText(sql`json_quote(${urlOf("f")})`, "t")} FROM ${s} AS f
          WHERE f.user_id = ${userId} AND f.guid = t.feed_guid) END AS item
    FROM ${e} AS t WHERE t.user_id = ${userId}
    ORDER BY t.change_seq LIMIT CASE WHEN ${episodeListFits} THEN -1 ELSE 0 END) AS listed`);

/**
 * The feed `podcast=` names (docs/API.md §14): the one an upload naming that URL applies to (its active
 * subscription, else the one changed last); none when no subscription of the user has that URL.
 */
const namedFeed = feedGuidOf(feedUrl, feedUrlKey);

/**
 * One page of the live states of one feed changed at or after `since`, as `episodeChangesPageStatement`, walking
 * that feed's states alone (index episodes_feed, whose condition the query repeats); the boundary of `since` is
 * found among them too, walking from the feed's newest change down.
 */
const feedChangesPageStatement = actionsPageStatement(
  sql`${e} AS t INDEXED BY episodes_feed`,
  sql`t.user_id = ${userId} AND t.feed_guid = ${namedFeed} AND t.deleted_at IS NULL
      AND t.change_seq > coalesce(${sql.placeholder("after")}, CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE coalesce((
        SELECT b.change_seq FROM ${e} AS b INDEXED BY episodes_feed
        WHERE b.user_id = ${userId} AND b.feed_guid = ${namedFeed} AND b.deleted_at IS NULL
          AND b.received_at < ${sql.placeholder("since")}
        ORDER BY b.change_seq DESC LIMIT 1), 0) END)`,
);

/** Where each action of a page's text starts (`itemsText`). */
const ACTION_START = '{"podcast":';

/** What an episode page statement answers; the whole list's (`wholeEpisodesStatement`) says whether it answered. */
type EpisodePageRow = TextPageRow & { now: number; fits?: number };

/** The episode actions since a time (`readEpisodeActions`). */
export interface EpisodeActions {
  /** The database's clock at the first page. */
  now: number;
  /** Each page's actions (JSON objects, comma-separated), and the rows it walked (what it is charged for). */
  pages: AsyncGenerator<TextPage, void, undefined>;
}

/**
 * The latest state of each episode changed at or after Unix second `since`, oldest change first, as gpodder
 * actions, each naming its feed's URL; with `podcast`, only the states of the feed that URL names. The first page
 * is read here (one D1 call: an account whose actions fit 3.75 MiB is one round trip), the next ones, one call each,
 * as they are asked for. `now`: the database's clock at the first page. Taken before any state is read, it is a
 * `since` that misses nothing received while the pages are: such a change is received at or after it, and a state
 * changed during the read moves past the pages read. `size`: other pages than the API's (tests of the pages' seams).
 * `aliases`: each state of a subscription a learned move changed is told under the URLs it moved from as well
 * (`actionsPageStatement`; the gpodder.net API's read, for gPodder: the Nextcloud API's clients match by guid).
 */
export async function readEpisodeActions(
  db: Database,
  user: string,
  since: number,
  options: { podcast?: string; size?: TextPageSize; aliases?: boolean } = {},
): Promise<EpisodeActions> {
  const { podcast, size = GPODDER_EPISODE_PAGES, aliases = false } = options;
  const [pageStatement, feed] =
    podcast === undefined
      ? [episodeChangesPageStatement, {}]
      : [feedChangesPageStatement, { feedUrl: podcast, urlKey: urlKey(podcast) }];
  const values = { userId: user, since, bytes: size.bytes, aliases: aliases ? 1 : 0, whole: 0, ...feed };
  const read = async (after: number | null, limit: number) =>
    (await call(() => pageStatement.bind(db, { ...values, after, limit }).first())) as unknown as EpisodePageRow;
  let first: EpisodePageRow;
  let firstLimit = size.rows;
  if (since !== 0 || podcast !== undefined) first = await read(null, size.rows);
  else {
    // A full list: the whole list in one walk when it fits one page, else the first page, in one call.
    const [whole, paged] = (
      await call(() =>
        db.batch([
          wholeEpisodesStatement.bind(db, { ...values, limit: size.rows }),
          pageStatement.bind(db, { ...values, whole: 1, after: null, limit: size.rows }),
        ]),
      )
    ).map((result) => result.results[0] as unknown as EpisodePageRow);
    // The whole list asked for every row: no page follows it.
    [first, firstLimit] = whole.fits ? [whole, Number.POSITIVE_INFINITY] : [paged, size.rows];
  }
  return { now: first.now, pages: textPages(first, firstLimit, read, size, ACTION_START) };
}

/** An episode write of a gpodder upload: computed for the guid guessed for its feed (the index of `feeds`). */
export interface GuessedWrite {
  write: CreatingWrite;
  feed: number;
}

/** What an episode upload's batch did (`writeEpisodes`). */
export interface EpisodeUploadWritten {
  /** The database's clock after the writes. */
  now: number;
  /** Per feed: its writes the episode quota (`limit`) or the storage budget (`storage`) refused. */
  refused: { limit: number; storage: number }[];
  /** Per feed: what its URL resolved to, the same at the start and the end of the batch and equal to its guess. */
  settled: boolean[];
  /** Per feed: what its URL resolves to after the batch (the next guess for the writes of an unsettled feed). */
  resolved: ResolvedFeed[];
}

/**
 * An upload's episode writes as set writes (db/episodes.ts, `setWriteStatements`): a write applies only while the
 * guid its episode id was computed from (a guess: gpodder names the feed by its URL) is the one its feed's URL
 * resolves to as the statement runs, each URL resolved once per statement (`feedGuidOf`'s rule, `resolvedFeeds`).
 */
const uploadSets = setWriteStatements({
  ctes: resolvedFeeds(true),
  // One JSON object of the feeds' guids by their index: an uncorrelated subquery, built once per statement, and a
  // JSON access per write (a join with the resolved rows built an index for each write; a table of them was read
  // again for each).
  applies: sql`sw.feed_guid = json_extract((SELECT json_group_object(i, guid) FROM resolved), '$."' || sw.feed || '"')`,
});

/** One set of an upload's writes: their JSON rows, their URL text's bytes, and each write's feed. */
interface WriteSet {
  writes: string;
  sentBytes: number;
  feeds: number[];
}

/**
 * An upload's writes in sets in which every episode id appears once, in order: an id's n-th write goes to the n-th
 * set (most uploads are one set), each cut at CHUNK_BYTES of JSON text (D1 takes strings of at most 2 MB).
 */
function writeSets(user: string, writes: readonly GuessedWrite[]): WriteSet[] {
  const rounds: { text: string; urlBytes: number; feed: number }[][] = [];
  const seen = new Map<string, number>();
  for (const { write, feed } of writes) {
    const round = seen.get(write.id) ?? 0;
    seen.set(write.id, round + 1);
    if (round === rounds.length) rounds.push([]);
    rounds[round].push({
      text: JSON.stringify(setWriteRow(user, write, feed)),
      urlBytes: sentUrlBytes(write),
      feed,
    });
  }
  const sets: WriteSet[] = [];
  for (const rows of rounds) {
    let set: WriteSet & { texts: string[]; bytes: number } = {
      writes: "",
      sentBytes: 0,
      feeds: [],
      texts: [],
      bytes: 2,
    };
    const close = () => {
      sets.push({ writes: `[${set.texts.join(",")}]`, sentBytes: set.sentBytes, feeds: set.feeds });
      set = { writes: "", sentBytes: 0, feeds: [], texts: [], bytes: 2 };
    };
    for (const { text, urlBytes, feed } of rows) {
      const textBytes = utf8Length(text) + 1;
      if (set.texts.length > 0 && set.bytes + textBytes > CHUNK_BYTES) close();
      set.texts.push(text);
      set.bytes += textBytes;
      set.sentBytes += urlBytes;
      set.feeds.push(feed);
    }
    if (set.texts.length > 0) close();
  }
  return sets;
}

/**
 * Applies an upload's episode writes in order in one batch (one round trip), creating the devices the actions name
 * (past the device limit they are ignored), with the database's clock read after them. The batch starts with the
 * caller's credential guard (CredentialEndedError, nothing written). Each write's episode id was computed from the
 * guid guessed for its feed (an id is a UUIDv5 in the feed's namespace, and SQLite has no SHA-1), and applies only
 * while that guess is what the feed's URL resolves to; what each URL resolves to is read before the writes and after
 * them. A feed is settled when both are its guess: every write of it applied. A purge of the writes' rooms may
 * change what a URL resolves to, at most once per batch (the URL's newest tombstone purged, its rows all
 * tombstones: it then resolves to its podcast:guid, and never back), so the writes of an unsettled feed are sent
 * again for what it resolves to after: a write that applied already changes nothing the second time. The writes go
 * in sets (`writeSets`), five statements each whatever their number (`setWriteStatements`).
 */
export async function writeEpisodes(
  db: Database,
  caller: WriteCredential,
  feeds: readonly NamedFeed[],
  guesses: readonly string[],
  writes: readonly GuessedWrite[],
  devices: readonly string[],
  at: number,
): Promise<EpisodeUploadWritten> {
  const user = caller.userId;
  const batch = new WriteBatch();
  batch.push(credentialGuard(db, caller));
  const keys = feeds.map((feed) => urlKey(feed.url));
  const value = feedsValue(feeds, keys);
  const resolve = () => batch.push(resolvedStatement.bind(db, { userId: user, feeds: value }));
  const before = feeds.length > 0 ? resolve() : undefined;
  const refusals = writeSets(user, writes).map((set) => {
    const values = { userId: user, feeds: value, writes: set.writes, sentBytes: set.sentBytes };
    const bound = (statement: Statement) => statement.bind(db, values);
    batch.push(bound(uploadSets.room));
    const stored = batch.push(bound(uploadSets.storedRefused), bound(uploadSets.stored));
    const fresh = batch.push(bound(uploadSets.freshRefused), bound(uploadSets.fresh));
    return { feeds: set.feeds, results: () => [stored.results()[0], fresh.results()[0]] };
  });
  batch.push(...devices.map((device) => deviceStatement(db, user, { id: device }, at)));
  const after = feeds.length > 0 ? resolve() : undefined;
  const clock = batch.push(clockStatement.bind(db, {}));
  await runGuarded(() => batch.run(db), caller);
  const resolvedBefore = before ? readResolved(before.results()[0].results, feeds.length) : [];
  const resolved = after ? readResolved(after.results()[0].results, feeds.length) : [];
  const refused = feeds.map(() => ({ limit: 0, storage: 0 }));
  for (const set of refusals) {
    for (const [n, kind] of refusalsOf(set.results())) refused[set.feeds[n]][kind]++;
  }
  return {
    now: clock.results()[0].results[0].now as number,
    refused,
    settled: feeds.map((_, i) => resolvedBefore[i].guid === guesses[i] && resolved[i].guid === guesses[i]),
    resolved,
  };
}

export const gpodderStatements: Record<string, Statement> = {
  wholeAdded: wholeAddedStatement,
  addedPage: addedPageStatement,
  removedPage: removedPageStatement,
  upload: uploadStatement,
  uploadRoom: uploadRoomStatement,
  removeUrls: removeUrlsStatement,
  removeUnlisted: removeUnlistedStatement(1),
  resolved: resolvedStatement,
  episodeUploadRoom: uploadSets.room,
  episodeUploadStoredRefused: uploadSets.storedRefused,
  episodeUploadStored: uploadSets.stored,
  episodeUploadFreshRefused: uploadSets.freshRefused,
  episodeUploadFresh: uploadSets.fresh,
  clock: clockStatement,
  wholeEpisodes: wholeEpisodesStatement,
  episodeChangesPage: episodeChangesPageStatement,
  feedChangesPage: feedChangesPageStatement,
};
