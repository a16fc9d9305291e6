import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { podcastGuidSync } from "../podcast-guid";
import { type Row, WriteBatch } from "./batch";
import { changeFeedReader, INCLUDED_SEPARATOR, includedOf, includedText, itemsInOrder, rfc3339 } from "./change-feed";
import { rowNextChange } from "./change-numbers";
import { call, type Database } from "./database";
import { joinedActiveSql, subscriptionsNamedBySql } from "./feed-aliases";
import { PENDING_PODCAST, type Podcast, podcastJson } from "./feeds";
import { subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import {
  bytesNeeded,
  type RoomNeed,
  refusal,
  roomStatement,
  rowsNeeded,
  subscriptionTombstones,
  utf8Bytes,
} from "./storage";
import { urlKey } from "./url-key";
import { FEED_URL, storedUrl, storedUrlBytes } from "./url-pieces";

/** Stored subscriptions per user, tombstones included (docs/API.md §12); reviving a tombstone is not creating. */
export const MAX_STORED_SUBSCRIPTIONS = 10_000;

export type StoredSubscription = { guid: string; feedUrl: string; subscribedAt: number };

/** A row of the change feed: the subscription's current state and the number of its last change. */
export type ChangedSubscription = StoredSubscription & { unsubscribedAt: number | null; changeSeq: number };

/** What a write names: a feed of the user, and for adds and moves its URL. */
export type FeedItem = { guid: string; feedUrl: string };

const userId = sql.placeholder("userId");
const guid = sql.placeholder("guid");
const feedUrl = sql.placeholder("feedUrl");
const now = sql.placeholder("now");
const feedUrlKey = sql.placeholder("urlKey");

/** The user's next change number, read inside the writing statement (D1 runs one statement at a time). */
const nextChange = sql`(SELECT coalesce(max(${stats.version}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${userId})`;
const isActive = sql`${s.userId} = ${userId} AND ${s.guid} = ${guid} AND ${s.unsubscribedAt} IS NULL`;
/** The row's whole feedUrl (its head and pieces): every read of `feed_url` goes through it. */
const storedFeedUrl = storedUrl(FEED_URL, "subscriptions");

/**
 * Whether the user's active feeds, written as a list whose rows each take their URL's JSON string and `perRow` bytes
 * more, fit `bytes` by the bound the stats keep (`user_stats.feed_list_bytes`, drizzle/0019: a JSON string and a
 * comma per stored row): a list that fits is one walk without the running sum of a cut (D1 counts two rows read per
 * row for it). `user`: the user's id (SQL). Not correlated: read once per statement.
 */
export function feedListFitsSql(user: SQL | Placeholder, bytes: SQL | Placeholder, perRow = 0): SQL {
  return sql`coalesce((SELECT ${stats.feedListBytes} + ${stats.activeCount} * ${sql.raw(String(perRow))} FROM ${stats}
    WHERE ${stats.userId} = ${user}), 0) <= ${bytes}`;
}
const returned = sql`${s.guid}, ${storedFeedUrl} AS feed_url, ${s.subscribedAt}`;

/**
 * The user's active subscriptions other than `target` (the SQL of a guid) that the request's feedUrl names
 * (src/db/feed-aliases.ts: the URL, its canonical one, every URL that moved there): an add of such an alias under
 * another id creates nothing (docs/API.md §18, `409 Already Subscribed` with the stored one).
 */
const otherNamed = (target: SQL) =>
  sql`(SELECT n.guid FROM (${subscriptionsNamedBySql(userId, feedUrl, feedUrlKey, sql.placeholder("urlGuid"))}) AS n
    WHERE n.unsubscribed_at IS NULL AND n.guid <> ${target} LIMIT 1)`;

/**
 * The active subscription the user's tombstone `target` (the SQL of a guid) was merged into by the feed round
 * (src/db/feed-aliases.ts, `joinedActiveSql`): reviving it would make the two subscriptions of one podcast again, so
 * a JSON:API add of it is `409 Already Subscribed` with that one (docs/API.md §18). Two primary-key reads.
 */
const mergedInto = (target: SQL) =>
  sql`(SELECT ${joinedActiveSql(userId, "away")} FROM ${s} AS away WHERE away.user_id = ${userId} AND away.guid = ${target})`;

/** The other active subscription a JSON:API add of `target` names: by its URL, else the one its tombstone joined. */
const storedOther = (target: SQL) => sql`coalesce(${otherNamed(target)}, ${mergedInto(target)})`;

/**
 * What a subscribe of the feed `target` (the SQL of its guid) must free first (docs/API.md §15): a slot when the
 * feed is not stored (reviving one's own tombstone never counts as creating), and the bytes its URL adds over the
 * stored one's. An active subscription is left as it is: it needs nothing.
 */
function subscribeNeedFor(target: SQL, writes = sql`1`): RoomNeed {
  const stored = sql`${s.userId} = ${userId} AND ${s.guid} = ${target}`;
  return {
    count: rowsNeeded(
      sql`NOT EXISTS (SELECT 1 FROM ${s} WHERE ${stored}) AND ${writes}`,
      stats.storedCount,
      MAX_STORED_SUBSCRIPTIONS,
    ),
    bytes: sql`(CASE WHEN EXISTS (SELECT 1 FROM ${s} WHERE ${stored} AND ${s.unsubscribedAt} IS NULL) OR NOT ${writes} THEN 0 ELSE ${bytesNeeded(
      sql`(${utf8Bytes(feedUrl)} - coalesce((SELECT ${storedUrlBytes(FEED_URL, "subscriptions")} FROM ${s} WHERE ${stored}), 0))`,
    )} END)`,
    exclude: target,
  };
}

/**
 * Whether a subscribe of the request's guid and feedUrl may write: the URL names no other active subscription, and
 * the guid is no tombstone merged into one.
 */
const writesSubscribe = sql`${storedOther(sql`${guid}`)} IS NULL`;
/**
 * The room statement's need: an alias of an active subscription writes nothing, so it needs nothing either (no
 * tombstone is purged for it). The subscribe statement checks `writesSubscribe` once, on its own.
 */
const subscribeNeed = subscribeNeedFor(sql`${guid}`, writesSubscribe);

/** What a feed move must free first: the bytes the new URL adds over the active subscription's. */
const moveNeed: RoomNeed = {
  count: sql`0`,
  bytes: bytesNeeded(
    sql`(${utf8Bytes(feedUrl)} - (SELECT ${storedUrlBytes(FEED_URL, "subscriptions")} FROM ${s} WHERE ${isActive}))`,
  ),
  exclude: sql`NULL`,
};

const subscribeRoomStatement = roomStatement(subscriptionTombstones, subscribeNeed);
const moveRoomStatement = roomStatement(subscriptionTombstones, moveNeed);

/**
 * Subscribes: inserts the row, or revives its tombstone with the new feedUrl and a fresh time, under
 * the next change number (which also places it in the list among feeds subscribed in the same
 * millisecond). For an active subscription it does nothing and returns no row, so statements of one
 * batch stay independent. It writes only within the quota and the storage budget, checked inside the
 * statement (concurrent writers cannot overshoot); a room statement just before it (roomStatement with the
 * same need) purged tombstones to make room when there were enough. The row it writes is exactly (guid,
 * feedUrl, now), so it returns only that it wrote one: D1's answer is parsed in the isolate, once per
 * statement of a bulk request.
 *
 * `guid` is the SQL of the guid it writes; `onlyIf`, a further condition for writing anything. The gpodder
 * uploads subscribe many URLs per statement (db/gpodder.ts, `uploadStatement`) by the same quota, budget and
 * revival rules, checked for the set.
 */
function subscribeSql(source: { guid: SQL; onlyIf?: SQL }): SQL {
  const onlyIf = source.onlyIf === undefined ? sql`` : sql` AND ${source.onlyIf}`;
  const need = subscribeNeedFor(source.guid);
  return sql`
  INSERT INTO ${s} (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, received_at, url_key)
  SELECT ${userId}, ${source.guid}, ${feedUrl}, ${now}, NULL, ${nextChange}, ${nextChange}, unixepoch(), ${feedUrlKey}
  WHERE ${need.count} <= 0 AND ${need.bytes} <= 0${onlyIf}
  ON CONFLICT (user_id, guid) DO UPDATE SET
    feed_url = excluded.feed_url, subscribed_at = excluded.subscribed_at, unsubscribed_at = NULL,
    change_seq = excluded.change_seq, subscribed_seq = excluded.subscribed_seq, received_at = excluded.received_at,
    url_key = excluded.url_key, merged_into = NULL
  WHERE ${s.unsubscribedAt} IS NOT NULL
  RETURNING 1 AS written`;
}

const subscribeStatement = statement(subscribeSql({ guid: sql`${guid}`, onlyIf: writesSubscribe }));

/**
 * After a subscribe that wrote nothing, why: `own`, the guid is active itself; `alias`, the active subscription the
 * URL names under another guid, or the guid's tombstone was merged into (`[guid, feedUrl, subscribedAt]`), or null.
 * Always one row.
 */
const storedAliasStatement = statement(sql`
  SELECT (SELECT json_array(x.guid, ${storedUrl(FEED_URL, "x")}, x.subscribed_at) FROM ${s} AS x
      WHERE x.user_id = ${userId} AND x.guid = ${storedOther(sql`${guid}`)}) AS alias,
    EXISTS (SELECT 1 FROM ${s} WHERE ${isActive}) AS own`);

/** The active subscription an add named by another of its URLs (`storedAliasStatement`), if that is why it wrote nothing. */
function aliasOf(result: D1Result<Row>): StoredSubscription | undefined {
  const row = result.results[0];
  if (!row || row.own || row.alias === null) return undefined;
  return unpack(JSON.parse(row.alias as string) as PackedSubscription);
}

/**
 * Moves an active subscription to a new feed URL; the same URL as stored changes nothing. It returns
 * nothing: the read that follows it in the batch reports the row as it then is.
 */
const moveStatement = statement(sql`
  UPDATE ${s} SET feed_url = ${feedUrl}, url_key = ${feedUrlKey}, change_seq = ${nextChange}, received_at = unixepoch()
  WHERE ${isActive} AND ${storedFeedUrl} IS NOT ${feedUrl} AND ${moveNeed.bytes} <= 0`);

/** Unsubscribes every active row `where` selects, keeping each as a tombstone the change feed reports. */
export function unsubscribeSql(where: SQL): SQL {
  return sql`
  UPDATE ${s} SET unsubscribed_at = ${now}, change_seq = ${rowNextChange}, received_at = unixepoch()
  WHERE ${where} AND ${s.unsubscribedAt} IS NULL
  RETURNING 1 AS written`;
}

const unsubscribeStatement = statement(unsubscribeSql(sql`${s.userId} = ${userId} AND ${s.guid} = ${guid}`));

const findActiveStatement = statement(sql`SELECT ${returned} FROM ${s} WHERE ${isActive}`);

/** The row subscribeStatement wrote (it returns only that it wrote one). */
function writtenRow(item: FeedItem, at: number): StoredSubscription {
  return { guid: item.guid, feedUrl: item.feedUrl, subscribedAt: at };
}

function toStored(row: Row | undefined): StoredSubscription | undefined {
  if (!row) return undefined;
  return { guid: row.guid as string, feedUrl: row.feed_url as string, subscribedAt: row.subscribed_at as number };
}

// ---------------------------------------------------------------------------------------------
// Writes

/** A write refused by the count quota (`limit`) or the storage budget (`storage`), tombstones purged first. */
export type Refused = { kind: "limit" } | { kind: "storage" };
/** `alias`: the URL names another active subscription of the user (docs/API.md §18), which is left as it is. */
export type Aliased = { kind: "alias"; subscription: StoredSubscription };
export type AddResult = { kind: "created"; subscription: StoredSubscription } | { kind: "exists" } | Aliased | Refused;
export type UpdateResult =
  | { kind: "updated"; subscription: StoredSubscription }
  | { kind: "not-found" }
  | { kind: "storage" };
export type RemoveResult = { kind: "removed" } | { kind: "not-found" };

export type WriteOperation =
  | ({ op: "add" } & FeedItem)
  | ({ op: "update" } & FeedItem)
  | { op: "remove"; guid: string };

export type WriteResult<T extends WriteOperation> = T extends { op: "add" }
  ? AddResult
  : T extends { op: "update" }
    ? UpdateResult
    : RemoveResult;

/** Where the writes of one request go: the shared batch, the user, and the request's one time. */
export interface WriteContext {
  batch: WriteBatch;
  db: Database;
  user: string;
  at: number;
}

/** What a write's statements bind of its URL: its key, and its podcast:guid (what its other forms share). */
function urlValues(item: FeedItem) {
  return { urlKey: urlKey(item.feedUrl), urlGuid: podcastGuidSync(item.feedUrl) };
}

function bindWithKey(statement: Statement, context: WriteContext, item: FeedItem): D1PreparedStatement {
  const values = { userId: context.user, now: context.at, ...item, ...urlValues(item) };
  return statement.bind(context.db, values);
}

/** Plans one subscription operation into the batch and returns the reader of its result (valid once the batch ran). */
export type SubscriptionWriter = <T extends WriteOperation>(operation: T) => () => WriteResult<T>;

function bindRoom(room: Statement, context: WriteContext, item: FeedItem): D1PreparedStatement {
  return room.bind(context.db, { userId: context.user, guid: item.guid, feedUrl: item.feedUrl, ...urlValues(item) });
}

/**
 * The subscription writes of one request. Each operation's statements go into the batch in request order:
 * an add or a move is preceded by its make-room statement (which also says why a write was refused), a move
 * is followed by a read of the row as it then is.
 */
export function subscriptionWriter(context: WriteContext): SubscriptionWriter {
  const { batch, db, user, at } = context;
  const plan = (operation: WriteOperation): (() => WriteResult<WriteOperation>) => {
    switch (operation.op) {
      case "add": {
        const slot = batch.push(
          bindRoom(subscribeRoomStatement, context, operation),
          bindWithKey(subscribeStatement, context, operation),
          bindWithKey(storedAliasStatement, context, operation),
        );
        return () => {
          const [room, written, why] = slot.results();
          if (written.results.length > 0) return { kind: "created", subscription: writtenRow(operation, at) };
          const stored = aliasOf(why);
          if (stored) return { kind: "alias", subscription: stored };
          const refused = refusal([room]);
          return refused ? { kind: refused } : { kind: "exists" };
        };
      }
      case "update": {
        const slot = batch.push(
          bindRoom(moveRoomStatement, context, operation),
          bindWithKey(moveStatement, context, operation),
          findActiveStatement.bind(db, { userId: user, guid: operation.guid }),
        );
        return () => {
          const [room, , found] = slot.results();
          const current = toStored(found.results[0]);
          if (!current) return { kind: "not-found" };
          return refusal([room]) === "storage" ? { kind: "storage" } : { kind: "updated", subscription: current };
        };
      }
      case "remove": {
        const slot = batch.push(unsubscribeStatement.bind(db, { userId: user, guid: operation.guid, now: at }));
        return () => (slot.results()[0].results.length > 0 ? { kind: "removed" } : { kind: "not-found" });
      }
    }
  };
  return plan as SubscriptionWriter;
}

/**
 * Runs the operations in order, each on its own, in one batch (one round trip, one transaction), and
 * returns one result per operation. All share one time, `at`.
 */
export async function applyOperations<T extends WriteOperation>(
  db: Database,
  user: string,
  operations: readonly T[],
  at: number,
  batch = new WriteBatch(),
): Promise<WriteResult<T>[]> {
  const plan = subscriptionWriter({ batch, db, user, at });
  const readers = operations.map((operation) => plan(operation));
  await batch.run(db);
  return readers.map((read) => read());
}

/** Subscribes to each item in order, in one batch (bulk adds, OPML import). */
export function subscribeMany(db: Database, user: string, items: readonly FeedItem[], at: number, batch?: WriteBatch) {
  return applyOperations(
    db,
    user,
    items.map((item) => ({ op: "add" as const, guid: item.guid, feedUrl: item.feedUrl })),
    at,
    batch,
  );
}

export type SubscribeResult =
  | { kind: "created"; subscription: StoredSubscription }
  | { kind: "exists"; subscription: StoredSubscription }
  | Aliased
  | Refused;

/** Subscribes the user to one feed; an active subscription is returned unchanged. */
export async function subscribe(
  db: Database,
  user: string,
  item: FeedItem,
  at: number,
  batch = new WriteBatch(),
): Promise<SubscribeResult> {
  const context: WriteContext = { batch, db, user, at };
  const slot = context.batch.push(
    bindRoom(subscribeRoomStatement, context, item),
    bindWithKey(subscribeStatement, context, item),
    findActiveStatement.bind(db, { userId: user, guid: item.guid }),
    bindWithKey(storedAliasStatement, context, item),
  );
  await context.batch.run(db);
  const [room, inserted, current, why] = slot.results();
  if (inserted.results.length > 0) return { kind: "created", subscription: writtenRow(item, at) };
  const stored = aliasOf(why);
  if (stored) return { kind: "alias", subscription: stored };
  const refused = refusal([room]);
  if (refused) return { kind: refused };
  return { kind: "exists", subscription: toStored(current.results[0]) as StoredSubscription };
}

/** Moves an active subscription to `feedUrl` (a no-op when unchanged); undefined when there is none. */
export async function moveFeed(
  db: Database,
  user: string,
  item: FeedItem,
  at: number,
  batch?: WriteBatch,
): Promise<UpdateResult> {
  const [result] = await applyOperations(db, user, [{ op: "update" as const, ...item }], at, batch);
  return result;
}

/** Marks the active subscription unsubscribed, keeping its row as a tombstone. False when there was none. */
export async function unsubscribe(db: Database, user: string, feed: string, at: number): Promise<boolean> {
  const [result] = await applyOperations(db, user, [{ op: "remove" as const, guid: feed }], at);
  return result.kind === "removed";
}

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement on the user's stats row, which carries the version (ETag) and the
// counts; when the client's `knownVersion` is current, SQLite skips the rest (CASE short-circuits).

const knownVersion = sql.placeholder("knownVersion");

/** A stored subscription packed by SQLite as `[guid, feedUrl, subscribedAt]`. */
type PackedSubscription = [string, string, number];

const unpack = ([guid, feedUrl, subscribedAt]: PackedSubscription): StoredSubscription => ({
  guid,
  feedUrl,
  subscribedAt,
});

/**
 * A subscription as the list reports it, written by SQLite member for member as `toSubscriptionResource` writes
 * it (a property test holds them equal), so the isolate splices the page's text rather than parsing it and
 * serialising it again, as the change feed does.
 */
const self = sql`'/v1/subscriptions/'||${s.guid}`;
/** `podcastRelationships` (resources/podcast.ts) as SQLite writes it: the `relationships` member's name and value. */
const relationships = sql`'relationships',json_object('podcast',json_object('links',json_object('related',${self}||'/podcast'),
'data',json_object('type','podcast','id',${s.guid})))`;
const listItem = sql`json_object('type','subscription','id',${s.guid},'attributes',json_object('feedUrl',${storedFeedUrl},
'userSubscribedAt',${rfc3339(s.subscribedAt)}),${relationships},'links',json_object('self',${self},'unsubscribe',json_object('href',${self},'method','DELETE')))`;

/**
 * The podcast resource of the row (`toPodcastResource`, resources/podcast.ts, member for member): one lookup of
 * its feed by primary key. A feed the service knows nothing of yet is `PENDING_PODCAST`.
 */
const podcastItem = sql`json_object('type','podcast','id',${s.guid},'attributes',json(coalesce(${podcastJson("subscriptions")},
${sql.raw(`'${JSON.stringify(PENDING_PODCAST)}'`)})),'links',json_object('self',${self}||'/podcast'))`;

/**
 * A page past the end is answered from the stats row alone (docs/API.md §12): it reads nothing else.
 * The OFFSET is walked in the page index alone (it covers its own `unsubscribed_at IS NULL`, migration 0006)
 * to find the page's first key; the page is then read from that key on, each row looked up from its index
 * entry. An OFFSET on the page's own query looks every skipped row up in the table: the deepest page at the
 * budget held the database 34-46 ms. A join on the page's keys would cost D1 a read per row (it counts a
 * join's seeks, not an index entry's lookup). SQLite seeks on the key's first column only (a row value from a
 * subquery), so entries sharing the first row's subscribedAt before it are stepped over: at most one
 * request's writes (capacity-account.ts measures an import of 1 000).
 *
 * The page is one text: each row's place in the list order (`subscribedAt:subscribedSeq`, comma-separated), a
 * space, then the resource objects as a JSON array.
 */
function listStatementOf(include: "podcasts" | "none"): Statement {
  const podcasts = include === "podcasts";
  const podcastsText = podcasts ? includedText("podcast") : sql``;
  return statement(sql`
  SELECT ${stats.activeCount} AS total, ${stats.version} AS version,
    CASE
      WHEN ${stats.version} IS ${knownVersion} THEN NULL
      WHEN ${sql.placeholder("offset")} >= ${stats.activeCount} THEN ${sql.raw(podcasts ? "' []' || char(10)" : "' []'")}
      ELSE (
        SELECT coalesce(group_concat(subscribed_at || ':' || subscribed_seq, ','), '') || ' ['
          || coalesce(group_concat(item, ','), '') || ']'${podcastsText} FROM (
          SELECT ${s.subscribedAt} AS subscribed_at, ${s.subscribedSeq} AS subscribed_seq, ${listItem} AS item${
            podcasts ? sql`, ${podcastItem} AS podcast` : sql``
          }
          FROM ${s}
          WHERE ${s.userId} = ${userId} AND ${s.unsubscribedAt} IS NULL
            AND (${s.subscribedAt}, ${s.subscribedSeq}, ${s.guid}) >= (
              SELECT b.subscribed_at, b.subscribed_seq, b.guid FROM ${s} AS b INDEXED BY subscriptions_active_page
              WHERE b.user_id = ${userId} AND b.unsubscribed_at IS NULL
              ORDER BY b.subscribed_at, b.subscribed_seq, b.guid LIMIT 1 OFFSET ${sql.placeholder("offset")})
          ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}, ${s.guid}
          LIMIT ${sql.placeholder("limit")}
        )
      )
    END AS page
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);
}

const listStatement = listStatementOf("none");
/** The list with each row's podcast (`include=podcast`): one lookup more per row, in the same statement. */
const listWithPodcastsStatement = listStatementOf("podcasts");

export interface SubscriptionPage {
  /** The user's latest change number. */
  version: number;
  total: number;
  /**
   * The page's resource objects as a JSON array's text, in list order; undefined when `knownVersion` was
   * current: the client's copy is fresh and nothing else was read.
   */
  data?: string;
  /** With `include: "podcasts"`: the podcast resources of the page's rows, a JSON array's text in the same order. */
  included?: string;
}

/** The order to put a list page's rows in, from their keys (`at:seq,...`); undefined when they are in order. */
function listOrder(keysText: string): number[] | undefined {
  const keys = keysText.split(",").map((key) => key.split(":").map(Number));
  const before = (a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1];
  if (keys.every((key, i) => i === 0 || before(keys[i - 1], key) < 0)) return undefined;
  return [...keys.keys()].sort((i, j) => before(keys[i], keys[j]));
}

/**
 * The list page from the statement's text. An aggregate does not promise to keep its input order, but both lists
 * come from one pass over the same rows: a page that did not come in list order is put in order here.
 */
export function listPageOf(text: string): string {
  const space = text.indexOf(" ");
  const data = text.slice(space + 1);
  if (space === 0) return data;
  const order = listOrder(text.slice(0, space));
  return order ? itemsInOrder(data, order) : data;
}

/** `listPageOf` of a page read with its podcasts: the items, then the podcasts in the same order. */
function listPageWithPodcastsOf(text: string): { data: string; included: string } {
  const cut = text.indexOf(INCLUDED_SEPARATOR);
  const head = text.slice(0, cut);
  const space = head.indexOf(" ");
  if (space === 0) return { data: head.slice(1), included: "[]" };
  const keysText = head.slice(0, space);
  const order = listOrder(keysText);
  const data = head.slice(space + 1);
  return {
    data: order ? itemsInOrder(data, order) : data,
    included: includedOf(text.slice(cut + 1), keysText.split(",").length, order),
  };
}

/** What a read adds to the subscriptions it answers: nothing, or their podcasts (`include=podcast`). */
export type Inclusion = "none" | "podcasts";

/** One page of the user's active subscriptions in list order, with the total and the version. */
export async function listSubscriptions(
  db: Database,
  user: string,
  page: { number: number; size: number },
  known: number | null = null,
  include: Inclusion = "none",
): Promise<SubscriptionPage> {
  const values = { userId: user, knownVersion: known, limit: page.size, offset: (page.number - 1) * page.size };
  const query = include === "podcasts" ? listWithPodcastsStatement : listStatement;
  const row = await call(() => query.bind(db, values).first<{ total: number; version: number; page: string | null }>());
  // No stats row: the user has never subscribed to anything.
  if (!row) {
    if (known === 0) return { version: 0, total: 0 };
    return { version: 0, total: 0, data: "[]", ...(include === "podcasts" ? { included: "[]" } : {}) };
  }
  if (row.page === null) return { version: row.version, total: row.total };
  if (include === "podcasts") return { version: row.version, total: row.total, ...listPageWithPodcastsOf(row.page) };
  return { version: row.version, total: row.total, data: listPageOf(row.page) };
}

function findOneStatementOf(include: Inclusion): Statement {
  const podcast = include === "podcasts" ? sql`, json(coalesce(${podcastJson("subscriptions")}, 'null'))` : sql``;
  return statement(sql`
  SELECT ${stats.version} AS version,
    (SELECT json_array(${s.guid}, ${storedFeedUrl}, ${s.subscribedAt}${podcast}) FROM ${s} WHERE ${isActive}) AS subscription
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);
}

const findOneStatement = findOneStatementOf("none");
/** Get-one with the podcast (`include=podcast`): its feed looked up in the same statement. */
const findOneWithPodcastStatement = findOneStatementOf("podcasts");

export interface SubscriptionRead {
  version: number;
  /** Undefined when the user has no such active subscription. */
  subscription?: StoredSubscription;
  /** With `include: "podcasts"`, the subscription's podcast. */
  podcast?: Podcast;
}

/**
 * One active subscription of the user, with the user's version (and its podcast, when asked). It always reads
 * the row: a client's current ETag must never turn a 404 into a 304 (docs/API.md §12).
 */
export async function findSubscription(
  db: Database,
  user: string,
  feed: string,
  include: Inclusion = "none",
): Promise<SubscriptionRead> {
  const query = include === "podcasts" ? findOneWithPodcastStatement : findOneStatement;
  const row = await call(() =>
    query.bind(db, { userId: user, guid: feed }).first<{ version: number; subscription: string | null }>(),
  );
  if (!row) return { version: 0 };
  if (row.subscription === null) return { version: row.version };
  const [guid, feedUrl, subscribedAt, podcast] = JSON.parse(row.subscription) as [...PackedSubscription, Podcast?];
  const subscription = unpack([guid, feedUrl, subscribedAt]);
  if (include === "none") return { version: row.version, subscription };
  return { version: row.version, subscription, podcast: podcast ?? PENDING_PODCAST };
}

/**
 * A subscription as its change feed reports it, written by SQLite member for member as `toChangeResource`
 * writes it: the resource plus `userUnsubscribedAt: null`, or a tombstone without links.
 */
const subscriptionChangeItem = (() => {
  const identified = sql`'type','subscription','id',${s.guid},'attributes',json_object('feedUrl',${storedFeedUrl},
'userSubscribedAt',${rfc3339(s.subscribedAt)},'userUnsubscribedAt',${rfc3339(s.unsubscribedAt)}),${relationships}`;
  return sql`CASE WHEN ${s.unsubscribedAt} IS NULL
THEN json_object(${identified},'links',json_object('self',${self},'unsubscribe',json_object('href',${self},'method','DELETE')))
ELSE json_object(${identified}) END`;
})();

const changeFeedTable = {
  version: stats.version,
  horizon: stats.subscriptionHorizon,
  from: sql`${s}`,
  userId: s.userId,
  changeSeq: s.changeSeq,
  item: subscriptionChangeItem,
};

/** The subscription change feed (docs/API.md §8). */
export const listChanges = changeFeedReader(changeFeedTable);

/** The change feed with the podcasts of its active subscriptions (`include=podcast`; tombstones have none). */
export const listChangesWithPodcasts = changeFeedReader({
  ...changeFeedTable,
  included: sql`CASE WHEN ${s.unsubscribedAt} IS NULL THEN ${podcastItem} END`,
});

/** Every statement this module runs, for the test that proves none scans a table. */
export const allStatements: Record<string, Statement> = {
  subscribe: subscribeStatement,
  move: moveStatement,
  unsubscribe: unsubscribeStatement,
  findActive: findActiveStatement,
  storedAlias: storedAliasStatement,
  subscribeRoom: subscribeRoomStatement,
  moveRoom: moveRoomStatement,
  list: listStatement,
  listWithPodcasts: listWithPodcastsStatement,
  findOne: findOneStatement,
  findOneWithPodcast: findOneWithPodcastStatement,
  changes: listChanges.statement,
  changesWithPodcasts: listChangesWithPodcasts.statement,
};
