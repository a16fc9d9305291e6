import { and, asc, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { NewSubscription } from "../resources/subscription";
import { subscriptions, userStats } from "./schema";

/**
 * Every function here makes exactly one D1 call (one statement or one batch), so every request
 * costs one round trip to the database.
 */
export type Database = DrizzleD1Database;

export function database(d1: D1Database): Database {
  return drizzle(d1);
}

/** A D1 call failed (unavailable, overloaded, reset): the client may retry; a batch is all-or-nothing. */
export class DatabaseError extends Error {
  constructor(cause: unknown) {
    super("database call failed", { cause });
    this.name = "DatabaseError";
  }
}

/** Runs one D1 call; any failure of D1 itself becomes a DatabaseError (503, safe to retry). */
async function call<T>(run: () => Promise<T>): Promise<T> {
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

const activeRow = (userId: string, guid: string) =>
  and(eq(subscriptions.userId, userId), eq(subscriptions.guid, guid), isNull(subscriptions.unsubscribedAt));

/**
 * Inserts the subscription, or revives its tombstone with the new feedUrl and a fresh time. It never
 * fails on a conflict: for an active subscription it does nothing and returns no row, so statements
 * of one batch stay independent.
 */
function upsertStatement(db: Database, userId: string, item: NewSubscription, now: number) {
  return db
    .insert(subscriptions)
    .values({ userId, guid: item.guid, feedUrl: item.feedUrl, subscribedAt: now, unsubscribedAt: null })
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

export interface SubscriptionPage {
  total: number;
  rows: StoredSubscription[];
}

/** One page of the user's active subscriptions in list order, and how many there are. */
export async function listSubscriptions(
  db: Database,
  userId: string,
  page: { number: number; size: number },
): Promise<SubscriptionPage> {
  const [stats, rows] = await call(() =>
    db.batch([
      db.select({ activeCount: userStats.activeCount }).from(userStats).where(eq(userStats.userId, userId)),
      db
        .select(storedColumns)
        .from(subscriptions)
        .where(and(eq(subscriptions.userId, userId), isNull(subscriptions.unsubscribedAt)))
        .orderBy(asc(subscriptions.subscribedAt), asc(subscriptions.guid))
        .limit(page.size)
        .offset((page.number - 1) * page.size),
    ]),
  );
  return { total: stats[0]?.activeCount ?? 0, rows };
}

export async function findSubscription(
  db: Database,
  userId: string,
  guid: string,
): Promise<StoredSubscription | undefined> {
  const rows = await call(() => db.select(storedColumns).from(subscriptions).where(activeRow(userId, guid)));
  return rows[0];
}

/** Subscribes the user; `created` is false when an active subscription already existed (returned unchanged). */
export async function subscribe(
  db: Database,
  userId: string,
  item: NewSubscription,
  now: number,
): Promise<{ created: boolean; subscription: StoredSubscription }> {
  const [inserted, current] = await call(() =>
    db.batch([
      upsertStatement(db, userId, item, now),
      db.select(storedColumns).from(subscriptions).where(activeRow(userId, item.guid)),
    ]),
  );
  return { created: inserted.length > 0, subscription: inserted[0] ?? current[0] };
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
  const [first, ...rest] = items.map((item) => upsertStatement(db, userId, item, now));
  const results = await call(() => db.batch([first, ...rest]));
  return results.map((rows) => rows[0]);
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
