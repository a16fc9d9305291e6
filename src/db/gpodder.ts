import { sql } from "drizzle-orm";
import { WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { deviceStatement } from "./devices";
import { type EpisodeOperation, type EpisodeWriteResult, episodeWriter, type StoredEpisode } from "./episodes";
import { episodes as e, subscriptions as s } from "./schema";
import { type Statement, statement } from "./statements";
import { subscriptionWriter, type WriteOperation, type WriteResult } from "./subscriptions";
import { urlKey } from "./url-key";

/**
 * What the gpodder.net API needs beyond the JSON:API's reads: changes since a Unix second (by `received_at`,
 * the database's clock) and feeds found by their exact URL (by `url_key`). Writes go through the subscription
 * and episode writers (db/subscriptions.ts, db/episodes.ts), like every other write.
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

/**
 * An active subscription of the user with exactly this row's URL (rows from before 0004 have no url_key).
 * `INDEXED BY`: left to itself, SQLite walks the user's primary key instead (every row of the user).
 */
const activeWithSameUrl = sql`(
  EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key = t.url_key AND a.feed_url = t.feed_url
    AND a.unsubscribed_at IS NULL)
  OR EXISTS (SELECT 1 FROM ${s} AS a INDEXED BY subscriptions_url WHERE a.user_id = ${userId} AND a.url_key IS NULL AND a.feed_url = t.feed_url
    AND a.unsubscribed_at IS NULL))`;

const changesSinceStatement = statement(sql`
  SELECT unixepoch() AS now, (
    SELECT json_group_array(json_array(change_seq, feed_url, active, has_active)) FROM (
      SELECT t.change_seq AS change_seq, t.feed_url AS feed_url, t.unsubscribed_at IS NULL AS active,
        CASE WHEN t.unsubscribed_at IS NULL THEN 1 ELSE ${activeWithSameUrl} END AS has_active
      FROM ${s} AS t WHERE t.user_id = ${userId} AND t.change_seq > ${sinceBoundary(s)}
    )
  ) AS changes`);

export interface SubscriptionChange {
  feedUrl: string;
  active: boolean;
  /** For a tombstone: whether an active subscription of the user has the same URL. */
  urlActive: boolean;
}

/** Subscriptions whose last change reached the database at or after Unix second `since`, oldest change first. */
export async function subscriptionChangesSince(
  db: Database,
  user: string,
  since: number,
): Promise<{ now: number; changes: SubscriptionChange[] }> {
  const row = await call(() =>
    changesSinceStatement.bind(db, { userId: user, since }).first<{ now: number; changes: string }>(),
  );
  const { now, changes } = row as { now: number; changes: string };
  const packed = JSON.parse(changes) as [number, string, number, number][];
  packed.sort((a, b) => a[0] - b[0]);
  return {
    now,
    changes: packed.map(([, feedUrl, active, urlActive]) => ({
      feedUrl,
      active: active === 1,
      urlActive: urlActive === 1,
    })),
  };
}

/** The user's subscriptions (active or tombstones) with one of these URLs or guids (a row may come twice). */
const feedsStatement = statement(sql`
  SELECT ${s.guid} AS guid, ${s.feedUrl} AS feedUrl, ${s.unsubscribedAt} IS NULL AS active, ${s.changeSeq} AS changeSeq
  FROM ${s} INDEXED BY subscriptions_url
  WHERE ${s.userId} = ${userId} AND ${s.urlKey} IN (SELECT value FROM json_each(${sql.placeholder("keys")}))
  UNION ALL
  SELECT ${s.guid}, ${s.feedUrl}, ${s.unsubscribedAt} IS NULL, ${s.changeSeq}
  FROM ${s} INDEXED BY subscriptions_url WHERE ${s.userId} = ${userId} AND ${s.urlKey} IS NULL
    AND ${s.feedUrl} IN (SELECT value FROM json_each(${sql.placeholder("urls")}))
  UNION ALL
  SELECT ${s.guid}, ${s.feedUrl}, ${s.unsubscribedAt} IS NULL, ${s.changeSeq}
  FROM ${s} WHERE ${s.userId} = ${userId} AND ${s.guid} IN (SELECT value FROM json_each(${sql.placeholder("guids")}))`);

/** Every active subscription's URL and guid in list order (the simple API's list, and what PUT replaces). */
const activeStatement = statement(sql`
  SELECT ${s.guid} AS guid, ${s.feedUrl} AS feedUrl, 1 AS active, ${s.changeSeq} AS changeSeq FROM ${s}
  WHERE ${s.userId} = ${userId} AND ${s.unsubscribedAt} IS NULL
  ORDER BY ${s.subscribedAt}, ${s.subscribedSeq}`);

export interface KnownFeed {
  guid: string;
  feedUrl: string;
  active: boolean;
  changeSeq: number;
}

function toKnown(row: Record<string, unknown>): KnownFeed {
  return {
    guid: row.guid as string,
    feedUrl: row.feedUrl as string,
    active: row.active === 1,
    changeSeq: row.changeSeq as number,
  };
}

/**
 * The stored feeds a gpodder write must know of (one round trip): those with one of `urls` (exact text) or one
 * of `guids`, and with `active`, every active subscription too.
 */
export async function findFeeds(
  db: Database,
  user: string,
  lookup: { urls: readonly string[]; guids: readonly string[]; active: boolean },
): Promise<{ matching: KnownFeed[]; active: KnownFeed[] }> {
  const keys = await Promise.all(lookup.urls.map(urlKey));
  const batch = new WriteBatch();
  const slot = batch.push(
    feedsStatement.bind(db, {
      userId: user,
      keys: JSON.stringify(keys),
      urls: JSON.stringify(lookup.urls),
      guids: JSON.stringify(lookup.guids),
    }),
    ...(lookup.active ? [activeStatement.bind(db, { userId: user })] : []),
  );
  await batch.run(db);
  const [matching, active] = slot.results();
  return { matching: matching.results.map(toKnown), active: active ? active.results.map(toKnown) : [] };
}

/** Every active subscription in list order, in one statement (the simple API's list). */
export async function activeFeeds(db: Database, user: string): Promise<KnownFeed[]> {
  const { results } = await call(() => activeStatement.bind(db, { userId: user }).all());
  return results.map(toKnown);
}

const clockStatement = statement(sql`SELECT unixepoch() AS now`);

/** Runs subscription operations in order in one batch, with the database's clock read after them. */
export async function writeSubscriptions<T extends WriteOperation>(
  db: Database,
  user: string,
  operations: readonly T[],
  at: number,
): Promise<{ now: number; results: WriteResult<T>[] }> {
  const batch = new WriteBatch();
  const plan = subscriptionWriter({ batch, db, user, at });
  const readers = operations.map((operation) => plan(operation));
  const clock = batch.push(clockStatement.bind(db, {}));
  await batch.run(db);
  return { now: clock.results()[0].results[0].now as number, results: readers.map((read) => read()) };
}

/**
 * Live episode states whose last change reached the database at or after `since`, with the URL of the user's
 * subscription (active or not) of their feed; states of feeds the user never subscribed to are left out.
 */
const episodeChangesSinceStatement = statement(sql`
  SELECT unixepoch() AS now, (
    SELECT json_group_array(json_array(change_seq, feed_url, media_url, item_guid, position, duration, played,
      position_changed_at, played_changed_at)) FROM (
      SELECT t.change_seq AS change_seq, f.feed_url AS feed_url, t.media_url AS media_url, t.item_guid AS item_guid,
        t.position AS position, t.duration AS duration, t.played AS played,
        t.position_changed_at AS position_changed_at, t.played_changed_at AS played_changed_at
      FROM ${e} AS t JOIN ${s} AS f ON f.user_id = t.user_id AND f.guid = t.feed_guid
      WHERE t.user_id = ${userId} AND t.change_seq > ${sinceBoundary(e)} AND t.deleted_at IS NULL
    )
  ) AS states`);

/** An episode state as the gpodder API tells it (no ids: gpodder names episodes by URL). */
export type EpisodeState = Omit<StoredEpisode, "id" | "feedGuid">;

type PackedState = [number, string, string, string | null, number, number | null, number, number | null, number | null];

/** Episode states changed at or after Unix second `since`, oldest change first, each with its feed's URL. */
export async function episodeChangesSince(
  db: Database,
  user: string,
  since: number,
): Promise<{ now: number; states: { podcast: string; episode: EpisodeState }[] }> {
  const row = await call(() =>
    episodeChangesSinceStatement.bind(db, { userId: user, since }).first<{ now: number; states: string }>(),
  );
  const { now, states } = row as { now: number; states: string };
  const packed = JSON.parse(states) as PackedState[];
  packed.sort((a, b) => a[0] - b[0]);
  return {
    now,
    states: packed.map(([, podcast, mediaUrl, itemGuid, position, duration, played, positionAt, playedAt]) => ({
      podcast,
      episode: {
        mediaUrl,
        itemGuid,
        position,
        duration,
        played: played === 1,
        positionChangedAt: positionAt,
        playedChangedAt: playedAt,
      },
    })),
  };
}

/**
 * Applies episode writes in order in one batch (one round trip), creating the devices the actions name
 * (past the device limit they are ignored), with the database's clock read after them.
 */
export async function writeEpisodes(
  db: Database,
  user: string,
  operations: readonly EpisodeOperation[],
  devices: readonly string[],
  at: number,
): Promise<{ now: number; results: EpisodeWriteResult[] }> {
  const batch = new WriteBatch();
  const plan = episodeWriter({ batch, db, user, at });
  const readers = operations.map((operation) => plan(operation));
  batch.push(...devices.map((device) => deviceStatement(db, user, { id: device }, at)));
  const clock = batch.push(clockStatement.bind(db, {}));
  await batch.run(db);
  return { now: clock.results()[0].results[0].now as number, results: readers.map((read) => read()) };
}

export const gpodderStatements: Record<string, Statement> = {
  changesSince: changesSinceStatement,
  feeds: feedsStatement,
  active: activeStatement,
  clock: clockStatement,
  episodeChangesSince: episodeChangesSinceStatement,
};
