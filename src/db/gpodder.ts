import { type SQL, sql } from "drizzle-orm";
import { credentialGuard, runGuarded, type WriteCredential } from "./app-passwords";
import { type Row, WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { deviceStatement } from "./devices";
import { type EpisodeOperation, type EpisodeWriteResult, episodeWriter, type StoredEpisode } from "./episodes";
import { type GrowingPages, keysetPages } from "./keyset-pages";
import { episodes as e, subscriptions as s, userStats as stats } from "./schema";
import { failedWith, failure, type Statement, statement } from "./statements";
import { MAX_URL_BYTES, roomsStatement, statOf, subscriptionTombstones } from "./storage";
import { MAX_STORED_SUBSCRIPTIONS, unsubscribeSql } from "./subscriptions";
import { urlKey } from "./url-key";
import { FEED_URL, ITEM_GUID, MEDIA_URL, storedUrl, storedUrlBytes } from "./url-pieces";

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
 * A subscription `a` of the user with exactly row `t`'s URL and matching `where` (`whereUnkeyed` for rows from
 * before 0004, which have no url_key: each is walked, its stored head compared first, since the whole text
 * is read from its pieces). `INDEXED BY`: left to itself, SQLite walks the user's primary key instead (every
 * row of the user).
 */
function withSameUrl(where: SQL, whereUnkeyed = where): SQL {
  return sql`(
  EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key = t.url_key AND ${urlOf("a")} = ${urlOf("t")}
    AND ${where})
  OR EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL
    AND a.feed_url = t.feed_url AND ${urlOf("a")} = ${urlOf("t")} AND ${whereUnkeyed}))`;
}

/** A change the subscription changes GET walks: its change number, and its URL when it names one. */
type WalkedChange = [number, string | null];

/** Subscription changes per page of the gpodder subscription changes GET, first (see GPODDER_SUBSCRIPTION_PAGES). */
export const GPODDER_SUBSCRIPTION_PAGE_ROWS = 100;

/**
 * The pages of the gpodder subscription changes GET grow while their URLs are short (keyset-pages.ts): 100
 * changes, then up to 500 while a page's URLs stay under 64 Ki characters. A URL is at most 2 KB, escaped for
 * JSON at most twice that: a page of long URLs stays at 100 rows (under ~1 MB of text), one that follows short
 * URLs holds at most 500 (~4 MB). Each read walks a page of change index entries however many changes the
 * account has.
 */
export const GPODDER_SUBSCRIPTION_PAGES: GrowingPages<WalkedChange> = {
  first: GPODDER_SUBSCRIPTION_PAGE_ROWS,
  max: 5 * GPODDER_SUBSCRIPTION_PAGE_ROWS,
  text: 64 * 1024,
  textOf: (rows) => rows.reduce((sum, [, url]) => sum + (url?.length ?? 0), 0),
};

/**
 * The change number the changes since `since` start after: `floor` once the first page found it (`since` 0 is
 * every change: no walk). Not correlated, so SQLite reads it once per statement however often it is named.
 */
const changesFloor = sql`coalesce(${sql.placeholder("floor")},
  CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE ${sinceBoundary(s)} END)`;
const inRange = sql`a.change_seq > ${changesFloor}`;

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
 * One page of the user's changes after change number `after` (null: from the start of `since`), every row
 * walked with its URL when the list it is read for names it there (null otherwise), so a URL is named by one
 * row only: the first changed in the range of its kind. With the database's clock and the change number the
 * range starts after.
 */
function changesPageStatement(named: SQL): Statement {
  return statement(sql`
  SELECT unixepoch() AS now, ${changesFloor} AS floor, (
    SELECT json_group_array(json_array(change_seq, feed_url)) FROM (
      SELECT t.change_seq AS change_seq, CASE WHEN ${named} THEN ${urlOf("t")} END AS feed_url
      FROM ${s} AS t INDEXED BY subscriptions_changes
      WHERE t.user_id = ${userId} AND t.change_seq > coalesce(${sql.placeholder("after")}, ${changesFloor})
      ORDER BY t.change_seq LIMIT ${sql.placeholder("limit")}
    )
  ) AS changes`);
}

/** `add`: active rows, each URL once. */
const addedPageStatement = changesPageStatement(
  sql`t.unsubscribed_at IS NULL AND NOT ${namedBefore(sql`a.unsubscribed_at IS NULL`)}`,
);

/**
 * `remove`: tombstones whose URL no active subscription has, each URL once. As before streaming, a tombstone
 * without url_key is not matched against an active row written since 0004 (finding that one by its URL alone
 * would walk every keyed row).
 */
const removedPageStatement = changesPageStatement(
  sql`t.unsubscribed_at IS NOT NULL AND NOT ${withSameUrl(sql`a.unsubscribed_at IS NULL`)}
    AND NOT ${namedBefore(sql`a.unsubscribed_at IS NOT NULL`)}`,
);

/** A page of one list of the changes: the URLs it names, and the rows walked for them. */
export interface SubscriptionChangePage {
  list: "add" | "remove";
  urls: string[];
  rows: number;
}

/**
 * Subscriptions whose last change reached the database at or after Unix second `since`, a page per D1 call
 * (keyset-pages.ts): the changes are walked twice, for `add` then for `remove`, each in change order, so both
 * lists keep the order of their URLs' first changes. `now()`: the database's clock at the first page (a
 * `since` that misses nothing received while the pages are read, as the episode changes' is).
 */
export function subscriptionChangePages(
  db: Database,
  user: string,
  since: number,
  pageSize: number | GrowingPages<WalkedChange> = GPODDER_SUBSCRIPTION_PAGES,
): { pages: AsyncGenerator<SubscriptionChangePage, void, undefined>; now: () => number } {
  let now: number | undefined;
  // Both walks start after the same change number, found by the first page.
  let floor: number | null = null;
  const walk = (pageStatement: Statement) =>
    keysetPages<WalkedChange, number | null>(
      async (after, limit) => {
        const row = (await call(() =>
          pageStatement.bind(db, { userId: user, since, floor, after, limit }).first(),
        )) as { now: number; floor: number; changes: string };
        now ??= row.now;
        floor ??= row.floor;
        // An aggregate does not promise its input order: the page's order is applied again.
        return (JSON.parse(row.changes) as WalkedChange[]).sort((a, b) => a[0] - b[0]);
      },
      null,
      (last) => last[0],
      pageSize,
    );
  async function* pages(): AsyncGenerator<SubscriptionChangePage, void, undefined> {
    for (const [list, pageStatement] of [
      ["add", addedPageStatement],
      ["remove", removedPageStatement],
    ] as const) {
      for await (const page of walk(pageStatement)) {
        yield { list, urls: page.flatMap(([, url]) => (url === null ? [] : [url])), rows: page.length };
      }
    }
  }
  return { pages: pages(), now: () => now as number };
}

const clockStatement = statement(sql`SELECT unixepoch() AS now`);

// ---------------------------------------------------------------------------------------------
// Feeds named by URL. gpodder names a feed by its URL; the service by its guid. Every gpodder write
// resolves a URL to a guid in SQL, inside the batch that writes (one round trip), by one rule.

const feedUrl = sql`${sql.placeholder("feedUrl")}`;
const feedUrlKey = sql`${sql.placeholder("urlKey")}`;
const feeds = sql.placeholder("feeds");

/**
 * The user's subscriptions (active or tombstones) with exactly the URL `url`: by its key, and rows from
 * before 0004 (no url_key) by the text alone. Two searches of subscriptions_url: left to itself, SQLite
 * walks the user's primary key (every row of the user) for `url_key = ? OR url_key IS NULL`.
 */
function withUrl(url: SQL, key: SQL): SQL {
  return sql`
    SELECT a.guid AS guid, a.unsubscribed_at AS unsubscribed_at, a.change_seq AS change_seq
    FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key = ${key} AND ${urlOf("a")} = ${url}
    UNION ALL
    SELECT a.guid, a.unsubscribed_at, a.change_seq
    FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL AND ${urlOf("a")} = ${url}`;
}

/**
 * The guid of the feed a gpodder URL names (docs/API.md §14): the user's subscription with exactly that URL,
 * the active one (the one changed last if several), else the one changed last, else the URL's podcast:guid
 * (computed in the isolate and bound). An add subscribes under it (with no active subscription of the URL it
 * is the tombstone's guid, else the podcast:guid), and an episode action names its feed by it. `max()` picks
 * the row (SQLite takes bare columns from the row of the maximum): active rows rank above every tombstone
 * (change numbers stay far below 2^53), without a sort.
 */
function feedGuidOf(url: SQL, key: SQL, podcastGuid: SQL): SQL {
  return sql`coalesce((SELECT guid FROM (
    SELECT guid, max((unsubscribed_at IS NULL) * 9007199254740992 + change_seq) FROM (${withUrl(url, key)}))), ${podcastGuid})`;
}

/** The feeds of a request bound as one JSON array of `[url, urlKey, podcastGuid, guess?]`, read by `sent`. */
const sentUrl = sql`(sent.value ->> 0)`;
const sentGuid = feedGuidOf(sentUrl, sql`(sent.value ->> 1)`, sql`(sent.value ->> 2)`);

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
  const sameUrl = byText ? sql` WHERE ${urlOf("a")} = sent.url` : sql``;
  const unkeyed = byText
    ? sql`
    UNION ALL
    SELECT sent.i, u.guid, u.rank FROM sent CROSS JOIN unkeyed AS u ON u.url = sent.url`
    : sql``;
  return sql`sent(i, url, url_key, podcast_guid, bytes) AS (${sent}),
  unkeyed AS MATERIALIZED (
    SELECT a.guid AS guid, ${urlOf("a")} AS url, (a.unsubscribed_at IS NULL) * 9007199254740992 + a.change_seq AS rank
    FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL AND ${byText}),
  matches(i, guid, rank) AS (
    SELECT sent.i, a.guid, (a.unsubscribed_at IS NULL) * 9007199254740992 + a.change_seq
    FROM sent CROSS JOIN ${s} AS a INDEXED BY subscriptions_url ON a.user_id = ${userId} AND a.url_key = sent.url_key${sameUrl}${unkeyed}),
  resolved(i, url, url_key, guid, url_active, bytes) AS (
    SELECT sent.i, sent.url, sent.url_key, coalesce(best.guid, sent.podcast_guid),
      coalesce(best.rank >= 9007199254740992, 0), sent.bytes
    FROM sent LEFT JOIN (SELECT i, guid, max(rank) AS rank FROM matches GROUP BY i) AS best ON best.i = sent.i)`;
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
    url_key = excluded.url_key
  WHERE ${s.unsubscribedAt} IS NOT NULL`);

/** A chunk's removes: every active subscription with one of its URLs (`[url, urlKey]` each). */
const removeUrlsStatement = statement(
  unsubscribeSql(sql`${s.userId} = ${userId} AND ${s.guid} IN (
    WITH sent(url, url_key) AS (SELECT value ->> 0, value ->> 1 FROM json_each(${feeds}))
    SELECT a.guid FROM sent CROSS JOIN ${s} AS a INDEXED BY subscriptions_url ON a.user_id = ${userId} AND a.url_key = sent.url_key
    WHERE ${urlOf("a")} = sent.url
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
    const unlisted = sql.join(
      Array.from(
        { length: Math.max(1, chunks) },
        (_, index) => sql`a.url NOT IN (SELECT value ->> 0 FROM json_each(${sql.placeholder(`feeds${index}`)}))`,
      ),
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

/** What names the guess guard's failure in D1's error (statements.ts, `failure`). */
const GUESS_REFUSED = "gpodder-feed-guid-guess-refused";

/**
 * The guard an episode upload's batch starts with (after the credential's): a SQL error unless every guessed
 * guid is the one its URL resolves to. The batch is one transaction, so a wrong guess writes nothing.
 */
const guessGuardStatement = statement(sql`
  SELECT CASE WHEN EXISTS (SELECT 1 FROM json_each(${feeds}) AS sent WHERE ${sentGuid} IS NOT (sent.value ->> 3))
    THEN ${failure(GUESS_REFUSED)} END AS refused`);

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

function feedsValue(named: readonly NamedFeed[], guesses: readonly string[] = []): string {
  return JSON.stringify(
    named.map((feed, index) => [
      feed.url,
      urlKey(feed.url),
      feed.podcastGuid,
      ...(guesses[index] ? [guesses[index]] : []),
    ]),
  );
}

function readResolved(rows: readonly Row[], count: number): ResolvedFeed[] {
  const resolved: ResolvedFeed[] = new Array(count);
  for (const row of rows) {
    resolved[row.i as number] = { guid: row.guid as string, activeUrl: row.activeUrl as string | null };
  }
  return resolved;
}

/** The guid each named feed resolves to (one statement): what the episode actions naming it apply to. */
export async function resolveFeeds(db: Database, user: string, named: readonly NamedFeed[]): Promise<ResolvedFeed[]> {
  if (named.length === 0) return [];
  const value = feedsValue(named);
  const { results } = await call(() => resolvedStatement.bind(db, { userId: user, feeds: value }).all<Row>());
  return readResolved(results, named.length);
}

/** The most UTF-8 bytes of JSON text one statement binds (D1 takes strings of at most 2 MB). */
const CHUNK_BYTES = 1_000_000;

const encoder = new TextEncoder();
const utf8Length = (text: string) => encoder.encode(text).byteLength;

/**
 * A chunk of an upload's feeds: their JSON text (`[url, urlKey, podcastGuid]` each; removes: `[url, urlKey]`),
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
function chunked(items: readonly { url: string; podcastGuid?: string }[]): FeedChunk[] {
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
    const text = JSON.stringify(podcastGuid === undefined ? [url, key] : [url, key, podcastGuid]);
    const textBytes = utf8Length(text) + 1;
    if (texts.length > 0 && bytes + textBytes > CHUNK_BYTES) close();
    const urlBytes = utf8Length(url);
    texts.push(text);
    keys.push(JSON.stringify([key, podcastGuid ?? null, urlBytes]));
    bytes += textBytes;
    sentBytes += urlBytes;
  }
  if (texts.length > 0) close();
  return chunks;
}

/**
 * A gpodder subscription upload of up to 10 000 URLs in one batch (one round trip, one transaction), after the
 * caller's credential guard: the removes, or with `replaceAll` (the simple API's PUT) every active subscription
 * whose URL is not among the adds; then the adds in order, chunk by chunk (each chunk's room, then its adds);
 * then what each add's URL resolves to, and the database's clock. `add` holds each URL once. The batch may be
 * the caller's (it then reads the purges' renumbering from it).
 */
export async function writeGpodderSubscriptions(
  db: Database,
  caller: WriteCredential,
  changes: { remove: readonly string[]; add: readonly NamedFeed[]; replaceAll?: boolean },
  at: number,
  batch = new WriteBatch(),
): Promise<{ now: number; added: ResolvedFeed[] }> {
  const user = caller.userId;
  batch.push(credentialGuard(db, caller));
  const bound = (statement: Statement, values: Record<string, unknown>) =>
    statement.bind(db, { userId: user, now: at, ...values });
  for (const chunk of chunked(changes.remove.map((url) => ({ url })))) {
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
  await runGuarded(() => batch.run(db), caller);
  const added: ResolvedFeed[] = new Array(changes.add.length);
  for (const { chunk, slot } of resolved) {
    for (const row of slot.results()[0].results) {
      added[chunk.first + (row.i as number)] = { guid: row.guid as string, activeUrl: row.activeUrl as string | null };
    }
  }
  return { now: clock.results()[0].results[0].now as number, added };
}

/** Episode states per page of the gpodder episode GET, first (see GPODDER_EPISODE_PAGES). */
export const GPODDER_EPISODE_PAGE_ROWS = 100;

/**
 * A page's rows packed as JSON arrays: the change number, the state's feed guid (null for a tombstone: not
 * told), and the state; and, once per feed of the page, the URL of the user's subscription (active or not) of
 * that feed (null for a feed the user never subscribed to: its states are not told). Every row the page walks is
 * in the answer, so a page reads what it returns and nothing more, however many tombstones or unsubscribed
 * feeds' states lie in between. A feed's URL (up to 2 KB) comes once per page, not once per state: 50 000
 * states of one feed sent D1 its URL 50 000 times, escaped twice over (SQLite's JSON, then D1's answer).
 */
const packedStates = (from: SQL, where: SQL) => sql`
  WITH page AS MATERIALIZED (
    SELECT t.change_seq AS change_seq, CASE WHEN t.deleted_at IS NULL THEN t.feed_guid END AS feed_guid,
      ${storedUrl(MEDIA_URL, "t")} AS media_url, ${storedUrl(ITEM_GUID, "t")} AS item_guid,
      t.position AS position, t.duration AS duration, t.played AS played,
      t.position_changed_at AS position_changed_at, t.played_changed_at AS played_changed_at
    FROM ${from} WHERE ${where}
    ORDER BY t.change_seq LIMIT ${sql.placeholder("limit")})
  SELECT unixepoch() AS now,
    (SELECT json_group_array(json_array(change_seq, feed_guid, media_url, item_guid, position, duration, played,
      position_changed_at, played_changed_at)) FROM page) AS states,
    (SELECT json_group_object(guid, (SELECT ${urlOf("f")} FROM ${s} AS f WHERE f.user_id = ${userId} AND f.guid = feeds.guid))
      FROM (SELECT DISTINCT feed_guid AS guid FROM page WHERE feed_guid IS NOT NULL) AS feeds) AS feeds`;

/**
 * One page of the user's episode changes received at or after `since`, after change number `after` (null: the
 * first page, which finds the change number `since` starts after), with the database's clock. `since` 0 is every
 * change (no received_at is below 0): no walk.
 */
const episodeChangesPageStatement = statement(
  packedStates(
    sql`${e} AS t`,
    sql`t.user_id = ${userId} AND t.change_seq > coalesce(${sql.placeholder("after")},
      CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE ${sinceBoundary(e)} END)`,
  ),
);

/**
 * The feed `podcast=` names (docs/API.md §14): the one an upload naming that URL applies to (its active
 * subscription, else the one changed last); none when no subscription of the user has that URL.
 */
const namedFeed = feedGuidOf(feedUrl, feedUrlKey, sql`NULL`);

/**
 * One page of the live states of one feed changed at or after `since`, as `episodeChangesPageStatement`, walking
 * that feed's states alone (index episodes_feed, whose condition the query repeats); the boundary of `since` is
 * found among them too, walking from the feed's newest change down.
 */
const feedChangesPageStatement = statement(
  packedStates(
    sql`${e} AS t INDEXED BY episodes_feed`,
    sql`t.user_id = ${userId} AND t.feed_guid = ${namedFeed} AND t.deleted_at IS NULL
      AND t.change_seq > coalesce(${sql.placeholder("after")}, CASE WHEN ${sql.placeholder("since")} = 0 THEN 0 ELSE coalesce((
        SELECT b.change_seq FROM ${e} AS b INDEXED BY episodes_feed
        WHERE b.user_id = ${userId} AND b.feed_guid = ${namedFeed} AND b.deleted_at IS NULL
          AND b.received_at < ${sql.placeholder("since")}
        ORDER BY b.change_seq DESC LIMIT 1), 0) END)`,
  ),
);

/** An episode state as the gpodder API tells it (no ids: gpodder names episodes by URL). */
export type EpisodeState = Omit<StoredEpisode, "id" | "feedGuid">;

type PackedState = [
  number,
  string | null,
  string | null,
  string | null,
  number,
  number | null,
  number,
  number | null,
  number | null,
];

/**
 * The pages of the gpodder episode GET grow while their text is short (keyset-pages.ts): 100 states, then up to
 * 500 while a page's URLs and guids stay under 192 Ki characters. A state's text in D1's answer is at most a
 * 2 KB URL and a 1 KB guid, escaped for JSON (its feed's URL comes once per page): a page of long ones stays at
 * 100 rows (under ~1 MB of text), one that follows short ones holds at most 500. Each read holds the database
 * for a page of index entries however many states the account has.
 */
export const GPODDER_EPISODE_PAGES: GrowingPages<PackedState> = {
  first: GPODDER_EPISODE_PAGE_ROWS,
  max: 5 * GPODDER_EPISODE_PAGE_ROWS,
  text: 192 * 1024,
  textOf: (rows) =>
    rows.reduce((sum, row) => sum + (row[1]?.length ?? 0) + (row[2]?.length ?? 0) + (row[3]?.length ?? 0), 0),
};

/** The states of a page that are told, each with its feed's URL: live ones of feeds the user subscribed to. */
function toldStates(
  page: readonly PackedState[],
  feeds: Record<string, string | null>,
): { podcast: string; episode: EpisodeState }[] {
  const told: { podcast: string; episode: EpisodeState }[] = [];
  for (const [, feedGuid, mediaUrl, itemGuid, position, duration, played, positionAt, playedAt] of page) {
    const podcast = feedGuid === null ? null : feeds[feedGuid];
    if (podcast === null || podcast === undefined || mediaUrl === null) continue;
    told.push({
      podcast,
      episode: {
        mediaUrl,
        itemGuid,
        position,
        duration,
        played: played === 1,
        positionChangedAt: positionAt,
        playedChangedAt: playedAt,
      } satisfies EpisodeState,
    });
  }
  return told;
}

/** A page of the gpodder episode GET: the states it tells, and the rows it walked (what it is charged for). */
export interface EpisodeChangePage {
  states: { podcast: string; episode: EpisodeState }[];
  walked: number;
}

/**
 * Episode states changed at or after Unix second `since`, oldest change first, each with its feed's URL, a
 * page per D1 call (keyset-pages.ts); with `podcast`, only the states of the feed that URL names. `now()`: the
 * database's clock at the first page, known once it is read. Taken before any state is read, it is a `since` that
 * misses nothing received while the pages are: such a change is received at or after it, and a state changed
 * during the read moves past the pages read.
 */
export function episodeChangePages(
  db: Database,
  user: string,
  since: number,
  options: { podcast?: string; pageSize?: number | GrowingPages<PackedState> } = {},
): { pages: AsyncGenerator<EpisodeChangePage, void, undefined>; now: () => number } {
  let now: number | undefined;
  const { podcast, pageSize = GPODDER_EPISODE_PAGES } = options;
  const [pageStatement, feed] =
    podcast === undefined
      ? [episodeChangesPageStatement, {}]
      : [feedChangesPageStatement, { feedUrl: podcast, urlKey: urlKey(podcast) }];
  // The feeds' URLs of the page last read, by guid (keysetPages wants the rows alone).
  let feeds: Record<string, string | null> = {};
  const packedPages = keysetPages<PackedState, number | null>(
    async (after, limit) => {
      const row = (await call(() =>
        pageStatement.bind(db, { userId: user, since, after, limit, ...feed }).first(),
      )) as { now: number; states: string; feeds: string | null };
      now ??= row.now;
      feeds = row.feeds === null ? {} : (JSON.parse(row.feeds) as Record<string, string | null>);
      // An aggregate does not promise its input order: the page's order is applied again.
      return (JSON.parse(row.states) as PackedState[]).sort((a, b) => a[0] - b[0]);
    },
    null,
    (last) => last[0],
    pageSize,
  );
  async function* pages() {
    for await (const page of packedPages) yield { states: toldStates(page, feeds), walked: page.length };
  }
  return { pages: pages(), now: () => now as number };
}

/**
 * Applies episode writes in order in one batch (one round trip), creating the devices the actions name
 * (past the device limit they are ignored), with the database's clock read after them. The batch starts with
 * the caller's credential guard (CredentialEndedError, nothing written). With `guessed`, the writes were
 * computed from guessed feed guids: the guess guard follows, and the answer is undefined, nothing written, when
 * a guess is not what its URL resolves to.
 */
export async function writeEpisodes(
  db: Database,
  caller: WriteCredential,
  operations: readonly EpisodeOperation[],
  devices: readonly string[],
  at: number,
  guessed?: { feeds: readonly NamedFeed[]; guids: readonly string[] },
): Promise<{ now: number; results: EpisodeWriteResult[] } | undefined> {
  const user = caller.userId;
  const batch = new WriteBatch();
  batch.push(credentialGuard(db, caller));
  if (guessed && guessed.feeds.length > 0) {
    batch.push(guessGuardStatement.bind(db, { userId: user, feeds: feedsValue(guessed.feeds, guessed.guids) }));
  }
  const plan = episodeWriter({ batch, db, user, at });
  const readers = operations.map((operation) => plan(operation));
  batch.push(...devices.map((device) => deviceStatement(db, user, { id: device }, at)));
  const clock = batch.push(clockStatement.bind(db, {}));
  try {
    await runGuarded(() => batch.run(db), caller);
  } catch (err) {
    if (guessed && failedWith(err, GUESS_REFUSED)) return undefined;
    throw err;
  }
  return { now: clock.results()[0].results[0].now as number, results: readers.map((read) => read()) };
}

export const gpodderStatements: Record<string, Statement> = {
  addedPage: addedPageStatement,
  removedPage: removedPageStatement,
  upload: uploadStatement,
  uploadRoom: uploadRoomStatement,
  removeUrls: removeUrlsStatement,
  removeUnlisted: removeUnlistedStatement(1),
  resolved: resolvedStatement,
  guessGuard: guessGuardStatement,
  clock: clockStatement,
  episodeChangesPage: episodeChangesPageStatement,
  feedChangesPage: feedChangesPageStatement,
};
