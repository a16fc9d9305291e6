import { type SQL, sql } from "drizzle-orm";
import { type Row, WriteBatch } from "./batch";
import { changeFeedReader } from "./change-feed";
import { call, type Database } from "./database";
import { subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { urlKey } from "./url-key";

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
const returned = sql`${s.guid}, ${s.feedUrl}, ${s.subscribedAt}`;

/**
 * Subscribes: inserts the row, or revives its tombstone with the new feedUrl and a fresh time, under
 * the next change number (which also places it in the list among feeds subscribed in the same
 * millisecond). For an active subscription it does nothing and returns no row, so statements of one
 * batch stay independent. A new row is inserted only while the user stores fewer than the quota,
 * checked inside the statement: concurrent writers cannot overshoot it. The row it writes is exactly
 * (guid, feedUrl, now), so it returns only that it wrote one: D1's answer is parsed in the isolate,
 * once per statement of a bulk request.
 *
 * `guid` is the SQL of the guid it writes (the bound one, or one the statement resolves, as the gpodder
 * API's adds do: db/gpodder.ts); `onlyIf`, a further condition for writing anything. One builder, so both
 * kinds of add keep the same quota and revival rules.
 */
export function subscribeSql(source: { guid: SQL; onlyIf?: SQL }): SQL {
  const onlyIf = source.onlyIf === undefined ? sql`` : sql` AND ${source.onlyIf}`;
  return sql`
  INSERT INTO ${s} (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, received_at, url_key)
  SELECT ${userId}, ${source.guid}, ${feedUrl}, ${now}, NULL, ${nextChange}, ${nextChange}, unixepoch(), ${feedUrlKey}
  WHERE (coalesce((SELECT ${stats.storedCount} FROM ${stats} WHERE ${stats.userId} = ${userId}), 0) < ${MAX_STORED_SUBSCRIPTIONS}
    OR EXISTS (SELECT 1 FROM ${s} WHERE ${s.userId} = ${userId} AND ${s.guid} = ${source.guid}))${onlyIf}
  ON CONFLICT (user_id, guid) DO UPDATE SET
    feed_url = excluded.feed_url, subscribed_at = excluded.subscribed_at, unsubscribed_at = NULL,
    change_seq = excluded.change_seq, subscribed_seq = excluded.subscribed_seq, received_at = excluded.received_at,
    url_key = excluded.url_key
  WHERE ${s.unsubscribedAt} IS NOT NULL
  RETURNING 1 AS written`;
}

const subscribeStatement = statement(subscribeSql({ guid: sql`${guid}` }));

/**
 * Moves an active subscription to a new feed URL; the same URL as stored changes nothing. It returns
 * nothing: the read that follows it in the batch reports the row as it then is.
 */
const moveStatement = statement(sql`
  UPDATE ${s} SET feed_url = ${feedUrl}, url_key = ${feedUrlKey}, change_seq = ${nextChange}, received_at = unixepoch()
  WHERE ${isActive} AND ${s.feedUrl} IS NOT ${feedUrl}`);

/**
 * The next change number of the row being written. Correlated with the row on purpose: SQLite evaluates an
 * uncorrelated subquery once per statement, so every row of an UPDATE that changes several (the gpodder
 * API's removes by URL) would get the same number; this one is read again for each row, after the trigger
 * recorded the previous row's.
 */
const rowNextChange = sql`(SELECT coalesce(max(${stats.version}), 0) + 1 FROM ${stats} WHERE ${stats.userId} = ${s.userId})`;

/** Unsubscribes every active row `where` selects, keeping each as a tombstone the change feed reports. */
export function unsubscribeSql(where: SQL): SQL {
  return sql`
  UPDATE ${s} SET unsubscribed_at = ${now}, change_seq = ${rowNextChange}, received_at = unixepoch()
  WHERE ${where} AND ${s.unsubscribedAt} IS NULL
  RETURNING 1 AS written`;
}

const unsubscribeStatement = statement(unsubscribeSql(sql`${s.userId} = ${userId} AND ${s.guid} = ${guid}`));

const findActiveStatement = statement(sql`SELECT ${returned} FROM ${s} WHERE ${isActive}`);

/**
 * Which of the guids the user stores (active or tombstone) once the batch has run. An add that
 * returned no row found either an active subscription or a full quota; since nothing in a batch
 * deletes rows, a guid still unknown at the end was refused by the quota.
 */
const storedGuidsStatement = statement(sql`
  SELECT json_group_array(${s.guid}) AS guids FROM ${s}
  WHERE ${s.userId} = ${userId} AND ${s.guid} IN (SELECT value FROM json_each(${sql.placeholder("guids")}))`);

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

export type AddResult = { kind: "created"; subscription: StoredSubscription } | { kind: "exists" } | { kind: "limit" };
export type UpdateResult = { kind: "updated"; subscription: StoredSubscription } | { kind: "not-found" };
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

function bindWithKey(statement: Statement, context: WriteContext, item: FeedItem): D1PreparedStatement {
  const values = { userId: context.user, now: context.at, ...item, urlKey: urlKey(item.feedUrl) };
  return statement.bind(context.db, values);
}

/** Plans one subscription operation into the batch and returns the reader of its result (valid once the batch ran). */
export type SubscriptionWriter = <T extends WriteOperation>(operation: T) => () => WriteResult<T>;

/**
 * The subscription writes of one request. Each operation's statements go into the batch in request order
 * (a move is followed by a read of the row as it then is); the adds share one trailing check
 * (storedGuidsStatement) that tells an existing subscription from a full quota.
 */
export function subscriptionWriter(context: WriteContext): SubscriptionWriter {
  const { batch, db, user, at } = context;
  const adds: string[] = [];
  const check = batch.close(() =>
    adds.length === 0 ? [] : [storedGuidsStatement.bind(db, { userId: user, guids: JSON.stringify(adds) })],
  );
  let stored: Set<string> | undefined;
  const isStored = (guid: string) => {
    stored ??= new Set(JSON.parse(check.results()[0].results[0].guids as string) as string[]);
    return stored.has(guid);
  };

  const plan = (operation: WriteOperation): (() => WriteResult<WriteOperation>) => {
    switch (operation.op) {
      case "add": {
        adds.push(operation.guid);
        const slot = batch.push(bindWithKey(subscribeStatement, context, operation));
        return () => {
          if (slot.results()[0].results.length > 0) {
            return { kind: "created", subscription: writtenRow(operation, at) };
          }
          return isStored(operation.guid) ? { kind: "exists" } : { kind: "limit" };
        };
      }
      case "update": {
        const slot = batch.push(
          bindWithKey(moveStatement, context, operation),
          findActiveStatement.bind(db, { userId: user, guid: operation.guid }),
        );
        return () => {
          const current = toStored(slot.results()[1].results[0]);
          return current ? { kind: "updated", subscription: current } : { kind: "not-found" };
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
): Promise<WriteResult<T>[]> {
  const batch = new WriteBatch();
  const plan = subscriptionWriter({ batch, db, user, at });
  const readers = operations.map((operation) => plan(operation));
  await batch.run(db);
  return readers.map((read) => read());
}

/** Subscribes to each item in order, in one batch (bulk adds, OPML import). */
export function subscribeMany(db: Database, user: string, items: readonly FeedItem[], at: number) {
  return applyOperations(
    db,
    user,
    items.map((item) => ({ op: "add" as const, guid: item.guid, feedUrl: item.feedUrl })),
    at,
  );
}

export type SubscribeResult =
  | { kind: "created"; subscription: StoredSubscription }
  | { kind: "exists"; subscription: StoredSubscription }
  | { kind: "limit" };

/** Subscribes the user to one feed; an active subscription is returned unchanged. */
export async function subscribe(db: Database, user: string, item: FeedItem, at: number): Promise<SubscribeResult> {
  const context: WriteContext = { batch: new WriteBatch(), db, user, at };
  const slot = context.batch.push(
    bindWithKey(subscribeStatement, context, item),
    findActiveStatement.bind(db, { userId: user, guid: item.guid }),
  );
  await context.batch.run(db);
  const [inserted, current] = slot.results();
  if (inserted.results.length > 0) return { kind: "created", subscription: writtenRow(item, at) };
  const existing = toStored(current.results[0]);
  return existing ? { kind: "exists", subscription: existing } : { kind: "limit" };
}

/** Moves an active subscription to `feedUrl` (a no-op when unchanged); undefined when there is none. */
export async function moveFeed(
  db: Database,
  user: string,
  item: FeedItem,
  at: number,
): Promise<StoredSubscription | undefined> {
  const [result] = await applyOperations(db, user, [{ op: "update" as const, ...item }], at);
  return result.kind === "updated" ? result.subscription : undefined;
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

/** A list row packed as `[guid, feedUrl, subscribedAt, subscribedSeq]`: the order's tie-break rides along. */
type PackedListRow = [string, string, number, number];

/**
 * The list order, applied again after SQLite packs the page: an aggregate does not promise to keep
 * its input order, and an ORDER BY inside it would sort in a temporary b-tree (twice the rows read).
 */
function listOrder(a: PackedListRow, b: PackedListRow): number {
  return a[2] - b[2] || a[3] - b[3];
}

/** A page past the end is answered from the stats row alone (docs/API.md §12): it reads nothing else. */
const listStatement = statement(sql`
  SELECT ${stats.activeCount} AS total, ${stats.version} AS version,
    CASE
      WHEN ${stats.version} IS ${knownVersion} THEN NULL
      WHEN ${sql.placeholder("offset")} >= ${stats.activeCount} THEN '[]'
      ELSE (
        SELECT json_group_array(json_array(guid, feed_url, subscribed_at, subscribed_seq)) FROM (
          SELECT ${s.guid} AS guid, ${s.feedUrl} AS feed_url, ${s.subscribedAt} AS subscribed_at,
            ${s.subscribedSeq} AS subscribed_seq
          FROM ${s}
          WHERE ${s.userId} = ${userId} AND ${s.unsubscribedAt} IS NULL
          ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}
          LIMIT ${sql.placeholder("limit")} OFFSET ${sql.placeholder("offset")}
        )
      )
    END AS page
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

export interface SubscriptionPage {
  /** The user's latest change number. */
  version: number;
  total: number;
  /** Undefined when `knownVersion` was current: the client's copy is fresh and nothing else was read. */
  rows?: StoredSubscription[];
}

/** One page of the user's active subscriptions in list order, with the total and the version. */
export async function listSubscriptions(
  db: Database,
  user: string,
  page: { number: number; size: number },
  known: number | null = null,
): Promise<SubscriptionPage> {
  const values = { userId: user, knownVersion: known, limit: page.size, offset: (page.number - 1) * page.size };
  const row = await call(() =>
    listStatement.bind(db, values).first<{ total: number; version: number; page: string }>(),
  );
  // No stats row: the user has never subscribed to anything.
  if (!row) return { version: 0, total: 0, rows: known === 0 ? undefined : [] };
  return {
    version: row.version,
    total: row.total,
    rows:
      row.page === null
        ? undefined
        : (JSON.parse(row.page) as PackedListRow[]).sort(listOrder).map(([guid, feedUrl, subscribedAt]) => ({
            guid,
            feedUrl,
            subscribedAt,
          })),
  };
}

const findOneStatement = statement(sql`
  SELECT ${stats.version} AS version,
    (SELECT json_array(${s.guid}, ${s.feedUrl}, ${s.subscribedAt}) FROM ${s} WHERE ${isActive}) AS subscription
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

export interface SubscriptionRead {
  version: number;
  /** Undefined when the user has no such active subscription. */
  subscription?: StoredSubscription;
}

/**
 * One active subscription of the user, with the user's version. It always reads the row: a client's
 * current ETag must never turn a 404 into a 304 (docs/API.md §12).
 */
export async function findSubscription(db: Database, user: string, feed: string): Promise<SubscriptionRead> {
  const row = await call(() =>
    findOneStatement.bind(db, { userId: user, guid: feed }).first<{ version: number; subscription: string | null }>(),
  );
  if (!row) return { version: 0 };
  const subscription =
    row.subscription === null ? undefined : unpack(JSON.parse(row.subscription) as PackedSubscription);
  return { version: row.version, subscription };
}

/** The subscription change feed (docs/API.md §8). */
export const listChanges = changeFeedReader<ChangedSubscription>({
  version: stats.version,
  from: sql`${s}`,
  userId: s.userId,
  changeSeq: s.changeSeq,
  columns: sql`${s.guid}, ${s.feedUrl}, ${s.subscribedAt}, ${s.unsubscribedAt}, ${s.changeSeq}`,
  unpack: ([guid, feedUrl, subscribedAt, unsubscribedAt, changeSeq]) => ({
    guid: guid as string,
    feedUrl: feedUrl as string,
    subscribedAt: subscribedAt as number,
    unsubscribedAt: unsubscribedAt as number | null,
    changeSeq: changeSeq as number,
  }),
});

/** Every statement this module runs, for the test that proves none scans a table. */
export const allStatements: Record<string, Statement> = {
  subscribe: subscribeStatement,
  move: moveStatement,
  unsubscribe: unsubscribeStatement,
  findActive: findActiveStatement,
  storedGuids: storedGuidsStatement,
  list: listStatement,
  findOne: findOneStatement,
  changes: listChanges.statement,
};
