import { type SQL, sql } from "drizzle-orm";
import { podcastGuidSync } from "../podcast-guid";
import { rfc3339 } from "./change-feed";
import { call, type Database } from "./database";
import {
  REHOMES_PER_ROUND,
  type RehomedState,
  rehomedStates,
  rehomedStatesStatement,
  renameRehomedStatements,
} from "./episode-rehomes";
import {
  applyMovesStatements,
  forgetAliasStatements,
  guidMergeStatements,
  type LearnedMove,
  learnMoveStatements,
  mergeStatements,
} from "./feed-aliases";
import { feeds as f, subscriptions as s, userStats as stats } from "./schema";
import { type Statement, statement } from "./statements";
import { FEED_URL, storedUrl } from "./url-pieces";

/**
 * What the service knows about each feed (docs/API.md §18): read beside the user's subscriptions, written only by
 * the feed round (src/feeds/round.ts). A feed row is the subscriptions' `url_key` of its URL; a read checks the
 * URL itself too, so a key shared by two URLs shows the other's podcast to nobody (it reads as `pending`).
 */

export type PodcastStatus = "pending" | "ok" | "failing" | "gone";

/** A podcast as the API and the pages show it: unknown facts are null. */
export interface Podcast {
  title: string | null;
  author: string | null;
  description: string | null;
  imageUrl: string | null;
  siteUrl: string | null;
  language: string | null;
  podcastGuid: string | null;
  /** The last successful fetch, RFC 3339 UTC. */
  fetchedAt: string | null;
  status: PodcastStatus;
}

/** What a fetch learns of a feed's channel (src/feeds/parse.ts), `<itunes:new-feed-url>` included. */
export type PodcastFacts = Omit<Podcast, "fetchedAt" | "status"> & { newFeedUrl: string | null };

const userId = sql.placeholder("userId");
const guid = sql.placeholder("guid");
const now = sql.placeholder("now");

/**
 * The podcast of the subscription row `row` (a table name or alias of `subscriptions`) as a JSON object's text
 * whose members are Podcast's, written by SQLite: one lookup by the feed's key (a table's primary key: one row
 * read), null when the service knows nothing of the URL yet (shown as `pending`).
 */
export function podcastJson(row: string): SQL {
  const at = (name: string) => sql.raw(`"${row}"."${name}"`);
  return sql`(SELECT json_object('title',${f.title},'author',${f.author},'description',${f.description},
'imageUrl',${f.imageUrl},'siteUrl',${f.siteUrl},'language',${f.language},'podcastGuid',${f.podcastGuid},
'fetchedAt',${rfc3339(f.fetchedAt)},'status',${f.status})
FROM ${f} WHERE ${f.urlKey} = ${at("url_key")} AND ${f.url} = ${storedUrl(FEED_URL, row)})`;
}

/**
 * What names the podcast of subscription row `row` in an OPML outline (docs/API.md §18): `[title, siteUrl]` as a JSON
 * array's text, found as `podcastJson` finds the podcast; null when the service knows nothing of the URL yet.
 */
export function podcastNameJson(row: string): SQL {
  const at = (name: string) => sql.raw(`"${row}"."${name}"`);
  return sql`(SELECT json_array(${f.title}, ${f.siteUrl})
FROM ${f} WHERE ${f.urlKey} = ${at("url_key")} AND ${f.url} = ${storedUrl(FEED_URL, row)})`;
}

/** What the service shows of a feed it knows nothing of yet. */
export const PENDING_PODCAST: Podcast = {
  title: null,
  author: null,
  description: null,
  imageUrl: null,
  siteUrl: null,
  language: null,
  podcastGuid: null,
  fetchedAt: null,
  status: "pending",
};

/** The podcast from `podcastJson`'s text (null: pending). */
export function podcastOf(text: string | null | undefined): Podcast {
  return text ? (JSON.parse(text) as Podcast) : PENDING_PODCAST;
}

const findPodcastStatement = statement(sql`
  SELECT ${stats.version} AS version,
    (SELECT coalesce(${podcastJson("subscriptions")}, 'null') FROM ${s}
      WHERE ${s.userId} = ${userId} AND ${s.guid} = ${guid} AND ${s.unsubscribedAt} IS NULL) AS podcast
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

/** The podcast of the user's active subscription `feed`; undefined when there is no such subscription. */
export async function findPodcast(db: Database, user: string, feed: string): Promise<Podcast | undefined> {
  const row = await call(() =>
    findPodcastStatement.bind(db, { userId: user, guid: feed }).first<{ podcast: string | null }>(),
  );
  if (!row || row.podcast === null) return undefined;
  return podcastOf(row.podcast === "null" ? null : row.podcast);
}

// ---------------------------------------------------------------------------------------------
// The feed round's reads and writes.

/** A feed due for a fetch, with the URL an active subscription stores (null: none is left). */
export interface DueFeed {
  urlKey: number;
  url: string | null;
  status: PodcastStatus;
  etag: string | null;
  lastModified: string | null;
  failures: number;
  failingSince: number | null;
  /** When it was due: where a feed the round could not finish goes back to. */
  nextFetchAt: number;
  /** What the last `200` said (a `304` says the same): where the feed says it moved (src/feeds/moves.ts). */
  podcastGuid: string | null;
  newFeedUrl: string | null;
}

/**
 * How long a round's feeds stay claimed: a run stopped before it wrote its outcomes (the Free plan's CPU limit
 * ends it at once) leaves them out of the next rounds for an hour, instead of first in line for every one of them.
 */
export const CLAIM_MS = 60 * 60 * 1000;

/**
 * The feeds due by `now`, longest waiting first (never-tried ones have 0), each with the whole URL of one active
 * subscription of its key: found through the active subscriptions' key index, the URL read from that row.
 */
const dueStatement = statement(sql`
  SELECT ${f.urlKey} AS urlKey,
    (SELECT ${storedUrl(FEED_URL, "subscriptions")} FROM ${s} INDEXED BY subscriptions_feed_active
      WHERE ${s.urlKey} = ${f.urlKey} AND ${s.unsubscribedAt} IS NULL LIMIT 1) AS url,
    ${f.status} AS status, ${f.etag} AS etag, ${f.lastModified} AS lastModified, ${f.failures} AS failures,
    ${f.failingSince} AS failingSince, ${f.nextFetchAt} AS nextFetchAt, ${f.podcastGuid} AS podcastGuid,
    ${f.newFeedUrl} AS newFeedUrl
  FROM ${f} WHERE ${f.nextFetchAt} <= ${now} ORDER BY ${f.nextFetchAt} LIMIT ${sql.placeholder("limit")}`);

/** The same feeds as `dueStatement` (the same walk of the same index, in the same transaction), claimed. */
const claimStatement = statement(sql`
  UPDATE ${f} SET next_fetch_at = ${sql.placeholder("claimedUntil")} WHERE ${f.urlKey} IN (
    SELECT ${f.urlKey} FROM ${f} WHERE ${f.nextFetchAt} <= ${now} ORDER BY ${f.nextFetchAt} LIMIT ${sql.placeholder("limit")})`);

/**
 * The feeds due (`dueFeeds`), how many subscriptions the learned moves changed in the same batch, and the episode
 * states merges re-homed, to be renamed in the round's `recordFeeds` (src/db/episode-rehomes.ts).
 */
export interface DueFeeds {
  feeds: DueFeed[];
  moved: number;
  rehomed: RehomedState[];
}

/**
 * The feeds due by `at`, claimed for the round (CLAIM_MS), in one batch: one round trip. The batch also goes on with
 * the learned moves not yet applied to this database's subscriptions (at most `movesLimit`, src/db/feed-aliases.ts):
 * a move of a feed with many subscribers is applied over several runs, each costing no D1 call of its own. It ends
 * with the re-homed states (those its own merges re-homed included), none while a bucket is frozen (`movesLimit` 0:
 * renaming them writes users' rows).
 */
export async function dueFeeds(db: Database, at: number, limit: number, movesLimit?: number): Promise<DueFeeds> {
  const values = { now: at, limit, claimedUntil: at + CLAIM_MS };
  const merging = mergeStatements(db, at, movesLimit);
  const results = await call(() =>
    db.batch([
      dueStatement.bind(db, values),
      claimStatement.bind(db, values),
      ...merging,
      ...applyMovesStatements(db, movesLimit),
      rehomedStatesStatement(db, movesLimit === 0 ? 0 : REHOMES_PER_ROUND),
    ]),
  );
  return {
    feeds: results[0].results as unknown as DueFeed[],
    moved: results[2 + merging.length].results.length,
    rehomed: rehomedStates(results[results.length - 1]),
  };
}

/** What one fetch leaves in a feed's row. */
export type FeedRecord =
  | {
      kind: "fetched";
      urlKey: number;
      url: string;
      finalUrl: string;
      facts: PodcastFacts;
      etag: string | null;
      lastModified: string | null;
      nextFetchAt: number;
    }
  | { kind: "not-modified"; urlKey: number; url: string; finalUrl: string; nextFetchAt: number }
  | {
      kind: "failed";
      urlKey: number;
      url: string;
      status: "failing" | "gone";
      error: string;
      failures: number;
      failingSince: number;
      nextFetchAt: number;
    }
  /** No active subscription names the feed any more: what was known of it is forgotten. */
  | { kind: "forgotten"; urlKey: number }
  /** The round could not finish it (its subrequests or parse share ran out): due again as it was. */
  | { kind: "deferred"; urlKey: number; nextFetchAt: number };

const key = sql.placeholder("urlKey");
/** The URL fetched, with its podcast:guid (`url_guid`: what its other forms find it by). */
const attempted = sql`url = ${sql.placeholder("url")}, url_guid = ${sql.placeholder("urlGuid")}`;
const succeeded = sql`${attempted}, final_url = ${sql.placeholder("finalUrl")}, status = 'ok',
  last_error = NULL, fetched_at = ${now}, failing_since = NULL, failures = 0,
  next_fetch_at = ${sql.placeholder("nextFetchAt")}`;

const fetchedStatement = statement(sql`
  UPDATE ${f} SET ${succeeded}, title = ${sql.placeholder("title")}, author = ${sql.placeholder("author")},
    description = ${sql.placeholder("description")}, image_url = ${sql.placeholder("imageUrl")},
    site_url = ${sql.placeholder("siteUrl")}, language = ${sql.placeholder("language")},
    podcast_guid = ${sql.placeholder("podcastGuid")}, new_feed_url = ${sql.placeholder("newFeedUrl")},
    etag = ${sql.placeholder("etag")}, last_modified = ${sql.placeholder("lastModified")}
  WHERE ${f.urlKey} = ${key}`);
const notModifiedStatement = statement(sql`UPDATE ${f} SET ${succeeded} WHERE ${f.urlKey} = ${key}`);
const failedStatement = statement(sql`
  UPDATE ${f} SET ${attempted}, status = ${sql.placeholder("status")},
    last_error = ${sql.placeholder("error")}, failures = ${sql.placeholder("failures")},
    failing_since = ${sql.placeholder("failingSince")}, next_fetch_at = ${sql.placeholder("nextFetchAt")}
  WHERE ${f.urlKey} = ${key}`);
const deferredStatement = statement(
  sql`UPDATE ${f} SET next_fetch_at = ${sql.placeholder("nextFetchAt")} WHERE ${f.urlKey} = ${key}`,
);
/** Forgets a feed only while no active subscription names it (one may have come since the round read it). */
const forgetStatement = statement(sql`
  DELETE FROM ${f} WHERE ${f.urlKey} = ${key} AND NOT EXISTS (
    SELECT 1 FROM ${s} INDEXED BY subscriptions_feed_active WHERE ${s.urlKey} = ${key} AND ${s.unsubscribedAt} IS NULL)`);

function recordStatement(db: Database, record: FeedRecord, at: number): D1PreparedStatement {
  switch (record.kind) {
    case "fetched":
      return fetchedStatement.bind(db, {
        ...record.facts,
        urlKey: record.urlKey,
        url: record.url,
        urlGuid: podcastGuidSync(record.url),
        finalUrl: record.finalUrl,
        etag: record.etag,
        lastModified: record.lastModified,
        nextFetchAt: record.nextFetchAt,
        now: at,
      });
    case "not-modified":
      return notModifiedStatement.bind(db, { ...record, urlGuid: podcastGuidSync(record.url), now: at });
    case "failed":
      return failedStatement.bind(db, { ...record, urlGuid: podcastGuidSync(record.url) });
    case "forgotten":
      return forgetStatement.bind(db, { urlKey: record.urlKey });
    case "deferred":
      return deferredStatement.bind(db, { ...record });
  }
}

/**
 * Writes a round's outcomes for one database, and the moves it learned of the feeds it holds, in one batch (one
 * round trip, one transaction). A forgotten feed takes the aliases nothing names any more with it. When it learned
 * moves, the same batch applies them to up to `movesLimit` subscriptions (the rest in the next runs, `dueFeeds`).
 * A feed that answered (a `200` or a `304`) merges the subscriptions of each user subscribed to it and to another
 * feed declaring its podcast:guid, in the same batch (`guidMergeStatements`). The states `dueFeeds` read as re-homed
 * take their ids in the kept podcast's namespace there too (src/db/episode-rehomes.ts). The number of subscriptions
 * moved.
 */
export async function recordFeeds(
  db: Database,
  records: readonly FeedRecord[],
  moves: readonly LearnedMove[],
  at: number,
  movesLimit?: number,
  rehomed: readonly RehomedState[] = [],
): Promise<number> {
  if (records.length === 0 && moves.length === 0 && rehomed.length === 0) return 0;
  const statements = [
    // The renames of the states `dueFeeds` read come first; the states this batch's own merges re-home wait for the
    // next round's read.
    ...renameRehomedStatements(db, rehomed, at),
    ...records.flatMap((record) => [
      recordStatement(db, record, at),
      ...(record.kind === "forgotten" ? forgetAliasStatements(db, record.urlKey) : []),
    ]),
    ...moves.flatMap((move) => learnMoveStatements(db, move, at)),
    ...guidMergeStatements(db, answeredKeys(records), at, movesLimit),
  ];
  // Duplicates merged first (a kept A then moves to B in the same batch), and the states sent under B before the
  // move was learned joined to the subscriptions the moves change.
  const merging = moves.length > 0 ? mergeStatements(db, at, movesLimit) : [];
  const applying = moves.length > 0 ? [...merging, ...applyMovesStatements(db, movesLimit)] : [];
  const results = await call(() => db.batch([...statements, ...applying]));
  return applying.length > 0 ? results[statements.length + merging.length].results.length : 0;
}

/** The feeds of `records` that answered a feed (a `200` or a `304`): their row holds the podcast:guid it declares. */
function answeredKeys(records: readonly FeedRecord[]): number[] {
  return records.flatMap((record) =>
    record.kind === "fetched" || record.kind === "not-modified" ? [record.urlKey] : [],
  );
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const allStatements: Record<string, Statement> = {
  findPodcast: findPodcastStatement,
  due: dueStatement,
  claim: claimStatement,
  deferred: deferredStatement,
  fetched: fetchedStatement,
  notModified: notModifiedStatement,
  failed: failedStatement,
  forget: forgetStatement,
};
