import { and, eq, is, isNotNull, isNull, Param, Placeholder, sql } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { NewSubscription } from "../resources/subscription";
import { subscriptions, userStats } from "./schema";

/**
 * Every function here makes exactly one D1 call (one statement or one batch), so every request
 * costs one round trip to the database.
 */
export type Database = DrizzleD1Database & { $client: D1Database | D1DatabaseSession };

/** Drizzle over a D1 database or a D1 session (same prepare/batch surface). */
export function database(d1: D1Database | D1DatabaseSession): Database {
  return drizzle(d1 as D1Database) as Database;
}

/** A D1 call failed (unavailable, overloaded, reset): the client may retry; a batch is all-or-nothing. */
export class DatabaseError extends Error {
  constructor(cause: unknown) {
    super("database call failed", { cause });
    this.name = "DatabaseError";
  }
}

/** Runs one D1 call; any failure of D1 itself becomes a DatabaseError (503, safe to retry). */
export async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new DatabaseError(err);
  }
}

const storedColumns = {
  guid: subscriptions.guid,
  feedUrl: subscriptions.feedUrl,
  subscribedAt: subscriptions.subscribedAt,
};

export type StoredSubscription = { guid: string; feedUrl: string; subscribedAt: number };

const activeRow = (userId: string | Placeholder, guid: string | Placeholder) =>
  and(eq(subscriptions.userId, userId), eq(subscriptions.guid, guid), isNull(subscriptions.unsubscribedAt));

/**
 * Inserts the subscription, or revives its tombstone with the new feedUrl and a fresh time. It never
 * fails on a conflict: for an active subscription it does nothing and returns no row, so statements
 * of one batch stay independent. Written with placeholders: see `compiled`.
 */
function upsertQuery(db: Database) {
  return db
    .insert(subscriptions)
    .values({
      userId: sql.placeholder("userId"),
      guid: sql.placeholder("guid"),
      feedUrl: sql.placeholder("feedUrl"),
      subscribedAt: sql.placeholder("now"),
      unsubscribedAt: null,
    })
    .onConflictDoUpdate({
      target: [subscriptions.userId, subscriptions.guid],
      set: {
        feedUrl: sql`excluded.feed_url`,
        subscribedAt: sql`excluded.subscribed_at`,
        unsubscribedAt: null,
      },
      setWhere: isNotNull(subscriptions.unsubscribedAt),
    })
    .returning(storedColumns);
}

function activeRowQuery(db: Database) {
  return db
    .select(storedColumns)
    .from(subscriptions)
    .where(activeRow(sql.placeholder("userId"), sql.placeholder("guid")));
}

type Values = Record<string, string | number>;

interface Compiled {
  sql: string;
  params: (values: Values) => unknown[];
}

/** A parameter as Drizzle leaves it: a value, a placeholder, or either wrapped with the column's encoder. */
function fill(param: unknown, values: Values): unknown {
  if (is(param, Param)) {
    const value = fill(param.value, values);
    return param.encoder ? param.encoder.mapToDriverValue(value) : value;
  }
  return is(param, Placeholder) ? values[param.name] : param;
}

/**
 * Drizzle builds the SQL of a write once per isolate; each item then only binds its values. Building
 * the query per item cost about 0.2 ms of CPU each, which made a bulk request of 100 adds 14 times
 * slower than one add although both are one D1 round trip.
 */
function compile(query: { toSQL(): { sql: string; params: unknown[] } }): Compiled {
  const { sql: text, params } = query.toSQL();
  return {
    sql: text,
    params: (values) => params.map((param) => fill(param, values)),
  };
}

let statements: { upsert: Compiled; findActive: Compiled } | undefined;

function compiled(db: Database) {
  statements ??= { upsert: compile(upsertQuery(db)), findActive: compile(activeRowQuery(db)) };
  return statements;
}

function bind(db: Database, statement: Compiled, values: Values): D1PreparedStatement {
  return db.$client.prepare(statement.sql).bind(...statement.params(values));
}

/** Rows come back from D1 under their column names. */
function fromColumns(row: Record<string, unknown> | undefined): StoredSubscription | undefined {
  if (!row) return undefined;
  return { guid: row.guid as string, feedUrl: row.feed_url as string, subscribedAt: row.subscribed_at as number };
}

/** A stored subscription packed by SQLite as `[guid, feedUrl, subscribedAt]`. */
type PackedSubscription = [string, string, number];

const unpack = ([guid, feedUrl, subscribedAt]: PackedSubscription): StoredSubscription => ({
  guid,
  feedUrl,
  subscribedAt,
});

/**
 * The list order, applied again after SQLite packs the page: an aggregate does not promise to keep
 * its input order, and an ORDER BY inside it would sort in a temporary b-tree (twice the rows read).
 */
function listOrder(a: StoredSubscription, b: StoredSubscription): number {
  return a.subscribedAt - b.subscribedAt || (a.guid < b.guid ? -1 : a.guid > b.guid ? 1 : 0);
}

export interface SubscriptionPage {
  /** The user's write counter; every write bumps it (see user_stats). */
  version: number;
  total: number;
  /** Undefined when `knownVersion` was current: the client's copy is fresh and nothing else was read. */
  rows?: StoredSubscription[];
}

/**
 * One page of the user's active subscriptions in list order, with the total and the version, in one
 * statement. When `knownVersion` is current, SQLite skips the page subquery (CASE short-circuits) and
 * the statement reads one row: the user's stats.
 */
export async function listSubscriptions(
  db: Database,
  userId: string,
  page: { number: number; size: number },
  knownVersion: number | null = null,
): Promise<SubscriptionPage> {
  const offset = (page.number - 1) * page.size;
  const row = await call(() =>
    db.get<{ total: number; version: number; page: string | null }>(sql`
      SELECT ${userStats.activeCount} AS total, ${userStats.version} AS version,
        CASE WHEN ${userStats.version} IS NOT ${knownVersion} THEN (
          SELECT json_group_array(json_array(guid, feed_url, subscribed_at))
          FROM (
            SELECT ${subscriptions.guid} AS guid, ${subscriptions.feedUrl} AS feed_url, ${subscriptions.subscribedAt} AS subscribed_at
            FROM ${subscriptions}
            WHERE ${subscriptions.userId} = ${userId} AND ${subscriptions.unsubscribedAt} IS NULL
            ORDER BY ${subscriptions.subscribedAt}, ${subscriptions.guid}
            LIMIT ${page.size} OFFSET ${offset}
          )
        ) END AS page
      FROM ${userStats}
      WHERE ${userStats.userId} = ${userId}`),
  );
  // No stats row: the user has never subscribed to anything.
  if (!row) return { version: 0, total: 0, rows: knownVersion === 0 ? undefined : [] };
  return {
    version: row.version,
    total: row.total,
    rows: row.page === null ? undefined : (JSON.parse(row.page) as PackedSubscription[]).map(unpack).sort(listOrder),
  };
}

export interface SubscriptionRead {
  version: number;
  /** Undefined when the user has no such active subscription, or when `knownVersion` was current. */
  subscription?: StoredSubscription;
  /** True when `knownVersion` was current: nothing but the version was read. */
  fresh: boolean;
}

/** One active subscription of the user, with the user's version; reads one row when `knownVersion` is current. */
export async function findSubscription(
  db: Database,
  userId: string,
  guid: string,
  knownVersion: number | null = null,
): Promise<SubscriptionRead> {
  const row = await call(() =>
    db.get<{ version: number; subscription: string | null }>(sql`
      SELECT ${userStats.version} AS version,
        CASE WHEN ${userStats.version} IS NOT ${knownVersion} THEN (
          SELECT json_array(${subscriptions.guid}, ${subscriptions.feedUrl}, ${subscriptions.subscribedAt})
          FROM ${subscriptions}
          WHERE ${activeRow(userId, guid)}
        ) END AS subscription
      FROM ${userStats}
      WHERE ${userStats.userId} = ${userId}`),
  );
  if (!row) return { version: 0, fresh: false };
  const fresh = row.version === knownVersion;
  const subscription =
    row.subscription === null ? undefined : unpack(JSON.parse(row.subscription) as PackedSubscription);
  return { version: row.version, subscription, fresh };
}

/** Subscribes the user; `created` is false when an active subscription already existed (returned unchanged). */
export async function subscribe(
  db: Database,
  userId: string,
  item: NewSubscription,
  now: number,
): Promise<{ created: boolean; subscription: StoredSubscription }> {
  const { upsert, findActive } = compiled(db);
  const values = { userId, guid: item.guid, feedUrl: item.feedUrl, now };
  const [inserted, current] = await call(() =>
    db.$client.batch<Record<string, unknown>>([bind(db, upsert, values), bind(db, findActive, values)]),
  );
  const created = fromColumns(inserted.results[0]);
  return {
    created: created !== undefined,
    subscription: (created ?? fromColumns(current.results[0])) as StoredSubscription,
  };
}

/**
 * Subscribes to each item in order, in one batch. An element is undefined where the user was
 * already subscribed (before the request, or by an earlier item of the same batch).
 */
export async function subscribeMany(
  db: Database,
  userId: string,
  items: NewSubscription[],
  now: number,
): Promise<(StoredSubscription | undefined)[]> {
  if (items.length === 0) return [];
  const { upsert } = compiled(db);
  const results = await call(() =>
    db.$client.batch<Record<string, unknown>>(
      items.map((item) => bind(db, upsert, { userId, guid: item.guid, feedUrl: item.feedUrl, now })),
    ),
  );
  return results.map((result) => fromColumns(result.results[0]));
}

/** Marks the active subscription unsubscribed, keeping its row as a tombstone. False when there was none. */
export async function unsubscribe(db: Database, userId: string, guid: string, now: number): Promise<boolean> {
  const rows = await call(() =>
    db
      .update(subscriptions)
      .set({ unsubscribedAt: now })
      .where(activeRow(userId, guid))
      .returning({ guid: subscriptions.guid }),
  );
  return rows.length > 0;
}
