import { sql } from "drizzle-orm";
import type { StoredAppPassword } from "./app-passwords";
import { WriteBatch } from "./batch";
import type { Database } from "./database";
import type { StoredDevice } from "./devices";
import { type Podcast, podcastJson, podcastOf } from "./feeds";
import { devices as d, episodes as e, appPasswords as p, subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { FEED_URL, MEDIA_URL, storedUrl } from "./url-pieces";

/**
 * The reads of the account pages (docs/API.md §16) that the API has no equivalent of: everything one page shows
 * in one batch (one round trip), each reading the rows it shows and a constant few more.
 */

const userId = sql.placeholder("userId");

/** The user's counters: what the account holds, read from the one stats row the triggers keep. */
const holdingsStatement = statement(sql`
  SELECT ${stats.activeCount} AS subscriptions, ${stats.episodeCount} AS episodes, ${stats.urlBytes} AS urlBytes
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

export interface Holdings {
  /** Active subscriptions. */
  subscriptions: number;
  /** Stored episode states: forgotten ones count until they are recycled (the quota counts them so too). */
  episodes: number;
  /** The UTF-8 bytes of URL text stored, of the 8 MiB budget. */
  urlBytes: number;
}

export interface AccountOverview {
  holdings: Holdings;
  /** Oldest first, as the API lists them. */
  appPasswords: StoredAppPassword[];
  /** Oldest first, as the gpodder API lists them. */
  devices: Omit<StoredDevice, "subscriptions">[];
}

/**
 * The user's app passwords and devices in primary-key order: the list order (oldest first) is restored in the
 * isolate, since an ORDER BY on created_at would sort in a temporary b-tree that D1 counts as reading every row
 * twice. At most 50 and 100 rows.
 */
const appPasswordsStatement = statement(sql`
  SELECT ${p.id} AS id, ${p.username} AS username, ${p.label} AS label, ${p.createdAt} AS createdAt,
    ${p.lastUsedAt} AS lastUsedAt FROM ${p}
  WHERE ${p.userId} = ${userId} AND (${p.expiresAt} IS NULL OR ${p.expiresAt} > ${sql.placeholder("now")})`);
const devicesStatement = statement(sql`
  SELECT ${d.deviceId} AS id, ${d.caption} AS caption, ${d.type} AS type, ${d.createdAt} AS createdAt
  FROM ${d} WHERE ${d.userId} = ${userId}`);

const oldestFirst = <T extends { createdAt: number; id: string }>(a: T, b: T) =>
  a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The signed-in account page at `at`: the counters, every app password (none that expired uncollected:
 * db/app-passwords.ts) and every device, in one batch (one round trip). Rows read: the stats row, and the app passwords and devices shown.
 */
export async function accountOverview(db: Database, user: string, at: number): Promise<AccountOverview> {
  const values = { userId: user, now: at };
  const batch = new WriteBatch();
  const slot = batch.push(
    holdingsStatement.bind(db, values),
    appPasswordsStatement.bind(db, values),
    devicesStatement.bind(db, values),
  );
  await batch.run(db);
  const [holdings, appPasswords, devices] = slot.results();
  const counters = holdings.results[0] as unknown as Holdings | undefined;
  const deviceRows = (devices.results as unknown as (Omit<StoredDevice, "subscriptions"> & { createdAt: number })[])
    .sort(oldestFirst)
    .map(({ createdAt: _, ...device }) => device);
  return {
    holdings: counters ?? { subscriptions: 0, episodes: 0, urlBytes: 0 },
    appPasswords: (appPasswords.results as unknown as StoredAppPassword[]).sort(oldestFirst),
    devices: deviceRows,
  };
}

// ---------------------------------------------------------------------------------------------
// Subscriptions, a page at a time in list order (docs/API.md §4), by key: a page reads its own rows however
// deep it is (an OFFSET would walk every row before it).

/** A position in the list: (subscribedAt, subscribedSeq) is unique among a user's rows (db/opml.ts). */
export interface ListKey {
  subscribedAt: number;
  subscribedSeq: number;
}

/** Rows after `after` (list order) or before `before` (read backwards): one page, from one side of a key. */
export type PageCursor = { after: ListKey } | { before: ListKey } | "first";

const keyAt = sql.placeholder("keyAt");
const keySeq = sql.placeholder("keySeq");
const limit = sql.placeholder("limit");
const active = sql`${s.userId} = ${userId} AND ${s.unsubscribedAt} IS NULL`;
const listKey = sql`(${s.subscribedAt}, ${s.subscribedSeq})`;
/** Each row with its podcast (docs/API.md §18): one lookup of its feed by primary key, in the same statement. */
const columns = sql`${s.guid} AS guid, ${storedUrl(FEED_URL, "subscriptions")} AS feedUrl,
  ${s.subscribedAt} AS subscribedAt, ${s.subscribedSeq} AS subscribedSeq, ${podcastJson("subscriptions")} AS podcast`;

const afterStatement = statement(sql`
  SELECT ${columns} FROM ${s} WHERE ${active} AND ${listKey} > (${keyAt}, ${keySeq})
  ORDER BY ${s.subscribedAt}, ${s.subscribedSeq} LIMIT ${limit}`);

const beforeStatement = statement(sql`
  SELECT ${columns} FROM ${s} WHERE ${active} AND ${listKey} < (${keyAt}, ${keySeq})
  ORDER BY ${s.subscribedAt} DESC, ${s.subscribedSeq} DESC LIMIT ${limit}`);

/** Whether any active row lies at or before the key (the page before exists), or at or after it. */
const anyAtOrBeforeStatement = statement(sql`
  SELECT EXISTS (SELECT 1 FROM ${s} WHERE ${active} AND ${listKey} <= (${keyAt}, ${keySeq})) AS found`);
const anyAtOrAfterStatement = statement(sql`
  SELECT EXISTS (SELECT 1 FROM ${s} WHERE ${active} AND ${listKey} >= (${keyAt}, ${keySeq})) AS found`);

export interface ListedSubscription extends ListKey {
  guid: string;
  feedUrl: string;
  /** What the service knows of the feed: `pending` (every fact null) before the first fetch. */
  podcast: Podcast;
}

export interface SubscriptionsPage {
  rows: ListedSubscription[];
  /** Active subscriptions in all. */
  total: number;
  hasPrevious: boolean;
  hasNext: boolean;
}

/** Before every row: subscribed_at is a non-negative millisecond time. */
const START: ListKey = { subscribedAt: -1, subscribedSeq: -1 };

/**
 * One page of `size` active subscriptions: the first, the one after a key, or the one before it. One batch:
 * the page and one row more (is there a page beyond?), whether a row lies on the other side of the key, and the
 * total. Rows read: the page (each row and its feed), one more, one, and the stats row.
 */
export async function subscriptionsPage(
  db: Database,
  user: string,
  cursor: PageCursor,
  size: number,
): Promise<SubscriptionsPage> {
  const backwards = cursor !== "first" && "before" in cursor;
  const key = cursor === "first" ? START : "after" in cursor ? cursor.after : cursor.before;
  const values = { userId: user, keyAt: key.subscribedAt, keySeq: key.subscribedSeq, limit: size + 1 };
  const batch = new WriteBatch();
  const slot = batch.push(
    (backwards ? beforeStatement : afterStatement).bind(db, values),
    (backwards ? anyAtOrAfterStatement : anyAtOrBeforeStatement).bind(db, values),
    holdingsStatement.bind(db, values),
  );
  await batch.run(db);
  const [page, otherSide, holdings] = slot.results();
  const read = (page.results as unknown as (Omit<ListedSubscription, "podcast"> & { podcast: string | null })[]).map(
    (row): ListedSubscription => ({ ...row, podcast: podcastOf(row.podcast) }),
  );
  const beyond = read.length > size;
  const rows = read.slice(0, size);
  if (backwards) rows.reverse();
  const otherSideExists = cursor !== "first" && Number(otherSide.results[0]?.found) === 1;
  return {
    rows,
    total: Number(holdings.results[0]?.subscriptions ?? 0),
    hasPrevious: backwards ? beyond : otherSideExists,
    hasNext: backwards ? otherSideExists : beyond,
  };
}

// ---------------------------------------------------------------------------------------------
// Listening progress: the states changed last, by when the change reached the server.

const recentStatement = statement(sql`
  SELECT ${e.id} AS id, ${storedUrl(MEDIA_URL, "episodes")} AS mediaUrl, ${e.position} AS position,
    ${e.duration} AS duration, ${e.played} AS played, ${e.receivedAt} AS receivedAt,
    (SELECT json_array(${storedUrl(FEED_URL, "subscriptions")}, json_extract(${podcastJson("subscriptions")}, '$.title'))
      FROM ${s} WHERE ${s.userId} = ${e.userId} AND ${s.guid} = ${e.feedGuid}) AS feed
  FROM ${e} WHERE ${e.userId} = ${userId} AND ${e.deletedAt} IS NULL
  ORDER BY ${e.changeSeq} DESC LIMIT ${limit}`);

export interface RecentEpisode {
  id: string;
  mediaUrl: string;
  /** Seconds. */
  position: number;
  duration: number | null;
  played: boolean;
  /** Unix seconds, the database's clock: when the last change reached the server. */
  receivedAt: number;
  /** The feedUrl of the user's subscription (active or not) with the state's feed guid; null when none. */
  feedUrl: string | null;
  /** That feed's podcast title, when the service knows it (docs/API.md §18). */
  podcastTitle: string | null;
}

/**
 * The user's `count` live episode states changed last. Change numbers rise with the time a change reached the
 * server (one primary, one clock), so the change index read backwards gives them in that order. Rows read: the
 * states shown, each one's subscription and its feed, and the forgotten states changed since the oldest one shown.
 */
export async function recentEpisodes(db: Database, user: string, count: number): Promise<RecentEpisode[]> {
  const batch = new WriteBatch();
  const slot = batch.push(recentStatement.bind(db, { userId: user, limit: count }));
  await batch.run(db);
  type Row = Omit<RecentEpisode, "played" | "feedUrl" | "podcastTitle"> & { played: number; feed: string | null };
  return (slot.results()[0].results as unknown as Row[]).map(({ feed, ...row }) => {
    const [feedUrl, podcastTitle] = feed === null ? [null, null] : (JSON.parse(feed) as [string, string | null]);
    return { ...row, played: Boolean(row.played), feedUrl, podcastTitle };
  });
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const accountPageStatements: Record<string, Statement> = {
  holdings: holdingsStatement,
  appPasswords: appPasswordsStatement,
  devices: devicesStatement,
  after: afterStatement,
  before: beforeStatement,
  anyAtOrBefore: anyAtOrBeforeStatement,
  anyAtOrAfter: anyAtOrAfterStatement,
  recent: recentStatement,
};
