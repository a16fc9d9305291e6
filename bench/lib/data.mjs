// Seed data, written straight into D1 with SQL (a recursive CTE generates the rows inside SQLite, so
// no statement comes near D1's limit of 100 bound parameters). The triggers of the migrations keep
// user_stats in step, exactly as they do for rows the API writes.
//
// Every seeded user gets its active subscriptions 4 s apart and, where asked, tombstones (rows
// marked unsubscribed) interleaved among them in list order: a list query that walks tombstones
// shows it in rows read. Each row is one change of the user's change feed: the actives are changes
// 1..active, the tombstones the ones after (the insert trigger makes the last the user's version).

import { createHash } from "node:crypto";

const BASE_TIME = Date.UTC(2025, 0, 1);
const SPACING_MS = 4000;
const DAY_MS = 86_400_000;

/** Deterministic seeded guid n of user number u (lowercase, RFC 9562 syntax). */
export function seededGuid(userNo, n) {
  return `${userNo.toString(16).padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

/** The device time of every seeded episode change (RFC 3339, as a request sends it). */
export const EPISODE_SEEDED_AT = new Date(BASE_TIME).toISOString();
/** The position (seconds) seeded into state n: the SQL below and `seededEpisode` agree. */
const EPISODE_POSITION = "(n * 37) % 3600";

/** The mediaUrl of seeded state n of a user, as SQL over the expressions `user` and `n`. */
const mediaUrlSql = (user, n) =>
  `printf('https://media.podcast-host.example.com/%s/episodes/%08d/episode-%d-final-mix.mp3', ${user}, ${n}, ${n})`;

/** A UUIDv5 (RFC 9562: SHA-1 of the namespace's bytes and the name's UTF-8), as src/podcast-guid.ts makes it. */
export function uuidV5(namespace, name) {
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name)
    .digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Seeded episode state n of user `userNo` / `userId` (live): its id (`uuidV5Ids`: the one apps give it), feed
 * guid, itemGuid, mediaUrl and position.
 */
export function seededEpisode(userId, userNo, n, uuidV5Ids = false) {
  const feedGuid = seededGuid(userNo, Math.floor(n / 100)).replace("-4000-", "-5000-");
  const itemGuid = `tag:podcast.example.com,2025:episode-${String(n).padStart(8, "0")}`;
  return {
    id: uuidV5Ids ? uuidV5(feedGuid, itemGuid) : seededGuid(userNo, n),
    feedGuid,
    itemGuid,
    mediaUrl: `https://media.podcast-host.example.com/${userId}/episodes/${String(n).padStart(8, "0")}/episode-${n}-final-mix.mp3`,
    position: (n * 37) % 3600,
  };
}

const INSERT_ACTIVE = `
WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?1)
INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq)
SELECT ?2, printf('%08x-0000-4000-8000-%012x', ?3, n), printf('https://feeds.example.com/%s/%d.xml', ?2, n),
       ?4 + n * ${SPACING_MS}, NULL, n + 1
FROM seq`;

// Tombstone k sits between actives 4k and 4k+1 (or spread evenly for other ratios); guids continue after the actives.
const INSERT_TOMBSTONES = `
WITH RECURSIVE seq(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM seq WHERE k + 1 < ?1)
INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq)
SELECT ?2, printf('%08x-0000-4000-8000-%012x', ?3, ?5 + k), printf('https://feeds.example.com/%s/gone-%d.xml', ?2, k),
       ?4 + (k * ?6) * ${SPACING_MS} + ${SPACING_MS / 2}, ?4 + (k * ?6) * ${SPACING_MS} + ${SPACING_MS / 2} + 1000,
       ?5 + k + 1
FROM seq`;

// Episode states (docs/API.md §13), numbered 1..count in the user's episode change feed; the insert trigger
// counts them against the quota and makes the last one the user's episode version. State n belongs to feed
// n / 100, has a mediaUrl of about 105 bytes and an itemGuid of 45, a position and `played` set at
// BASE_TIME on the device (a merge with a later changedAt applies; one at BASE_TIME changes nothing). Every
// `goneEvery`-th state (none when 0) is a tombstone: no URL, no values, no times, as DELETE leaves one. Every
// `playedEvery`-th live state (none when 0) is played.
// States named `uuidV5Ids` take the ids apps give them (UUIDv5 of the itemGuid in the feed's namespace, docs/API.md
// §13), passed as a JSON array (?7): a gpodder upload of the same episode then merges into the seeded state.
function insertEpisodes(named) {
  const states = named
    ? "states(n, gone, id) AS (SELECT key, ?5 > 0 AND key % ?5 = ?5 - 1, value FROM json_each(?7))"
    : `seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?1),
  states(n, gone, id) AS (SELECT n, ?5 > 0 AND n % ?5 = ?5 - 1, printf('%08x-0000-4000-8000-%012x', ?3, n) FROM seq)`;
  return `
WITH RECURSIVE ${states}
INSERT INTO episodes (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
  position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
SELECT ?2, id, printf('%08x-0000-5000-8000-%012x', ?3, n / 100),
  CASE WHEN gone THEN NULL ELSE ${mediaUrlSql("?2", "n")} END,
  CASE WHEN gone THEN NULL ELSE printf('tag:podcast.example.com,2025:episode-%08d', n) END,
  CASE WHEN gone THEN 0 ELSE ${EPISODE_POSITION} END, CASE WHEN gone THEN NULL ELSE 3600 END,
  NOT gone AND ?6 > 0 AND n % ?6 = 0,
  CASE WHEN gone THEN NULL ELSE ?4 END, CASE WHEN gone THEN NULL ELSE ?4 END,
  n + 1, ?4 / 1000, CASE WHEN gone THEN ?4 + 1000 END
FROM states`;
}
const INSERT_EPISODES = insertEpisodes(false);
const INSERT_NAMED_EPISODES = insertEpisodes(true);

// The feeds of a user's seeded episode states, subscribed (`feedsSubscribed`): feed k (states 100k..100k+99)
// under the guid the states name, its URL `episode-feeds/k.xml`, changes after the user's other subscriptions.
// The gpodder episode feed reports only states whose feed the user subscribed to.
const INSERT_EPISODE_FEEDS = `
WITH RECURSIVE seq(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM seq WHERE k + 1 < ?1)
INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq)
SELECT ?2, printf('%08x-0000-5000-8000-%012x', ?3, k), printf('https://feeds.example.com/%s/episode-feeds/%d.xml', ?2, k),
       ?4 + k * ${SPACING_MS}, NULL, ?5 + k + 1
FROM seq`;

// The url_key of the seeded actives (and episode feeds) of users with `urlKeys` (as the API stores it,
// src/db/url-key.ts: the first 48 bits of SHA-256 of the URL). Without it they are rows from before 0004, which
// every gpodder lookup of a URL walks in full. ?2 is a JSON array of [guid, key].
const SET_URL_KEYS = `
UPDATE subscriptions SET url_key = keyed.value ->> 1
FROM json_each(?2) AS keyed WHERE subscriptions.user_id = ?1 AND subscriptions.guid = keyed.value ->> 0`;

// The feeds of the active subscriptions of users with `feedsFetched` (and `urlKeys`), as a feed round leaves a feed it
// fetched (src/db/feeds.ts): `ok`, its URL the subscription's, a title, an author, a description of about 300
// characters, an image, a site, a language and a podcast:guid. The triggers of drizzle/0010 made them `pending`, their
// URL unknown, when the keys were set: without this, `include=podcast` shows every podcast pending. ?2: fetched_at.
const FILL_FEEDS = `
UPDATE feeds SET url = s.feed_url, status = 'ok',
  title = printf('The Bench Hour %d: Conversations on Software', s.change_seq),
  author = 'Bench Media Productions',
  description = printf('Every week the Bench Hour sits down with the people who build, run and repair the software the rest of us use every day: ' ||
    'what broke, why it broke, and what they changed so it would not break again. Feed %d, hosted by two engineers who have done each of those things at least once.', s.change_seq),
  image_url = printf('https://images.podcast-host.example.com/shows/%s/cover-3000x3000.jpg', s.guid),
  site_url = printf('https://podcast.example.com/shows/%s', s.guid),
  language = 'en-us',
  podcast_guid = replace(s.guid, '-4000-', '-5000-'),
  fetched_at = ?2, next_fetch_at = ?2 + 86400000
FROM subscriptions AS s WHERE s.user_id = ?1 AND s.unsubscribed_at IS NULL AND feeds.url_key = s.url_key`;

const urlKeyOf = (url) => Number.parseInt(createHash("sha256").update(url).digest("hex").slice(0, 12), 16);

/** The guid and URL of the feed of seeded episode states 100k..100k+99 (INSERT_EPISODE_FEEDS). */
export const episodeFeedGuid = (userNo, k) => seededGuid(userNo, k).replace("-4000-", "-5000-");
export const episodeFeedUrl = (userId, k) => `https://feeds.example.com/${userId}/episode-feeds/${k}.xml`;

/** Subscriptions seeded for the feeds of a user's episode states (none unless `feedsSubscribed`). */
export const episodeFeedCount = (user) => (user.feedsSubscribed ? Math.ceil((user.episodes ?? 0) / 100) : 0);

/**
 * @param {D1Database} db
 * @param {{ id: string, no: number, active: number, tombstones?: number, episodes?: number, goneEvery?: number,
 *   playedEvery?: number, uuidV5Ids?: boolean, feedsSubscribed?: boolean, urlKeys?: boolean, feedsFetched?: boolean
 * }[]} users
 */
export async function seed(db, users) {
  const statements = [];
  for (const user of users) {
    const { id, no, active, tombstones = 0, episodes = 0, goneEvery = 0, playedEvery = 0 } = user;
    if (active > 0) statements.push(db.prepare(INSERT_ACTIVE).bind(active, id, no, BASE_TIME));
    if (tombstones > 0) {
      const stride = Math.max(1, Math.floor(active / tombstones));
      statements.push(db.prepare(INSERT_TOMBSTONES).bind(tombstones, id, no, BASE_TIME, active, stride));
    }
    if (episodes > 0 && user.uuidV5Ids) {
      const ids = Array.from({ length: episodes }, (_, n) => seededEpisode(id, no, n, true).id);
      statements.push(
        db
          .prepare(INSERT_NAMED_EPISODES)
          .bind(episodes, id, no, BASE_TIME, goneEvery, playedEvery, JSON.stringify(ids)),
      );
    } else if (episodes > 0) {
      statements.push(db.prepare(INSERT_EPISODES).bind(episodes, id, no, BASE_TIME, goneEvery, playedEvery));
    }
    if (user.urlKeys && active > 0) {
      const keys = Array.from({ length: active }, (_, n) => [
        seededGuid(no, n),
        urlKeyOf(`https://feeds.example.com/${id}/${n}.xml`),
      ]);
      statements.push(db.prepare(SET_URL_KEYS).bind(id, JSON.stringify(keys)));
      if (user.feedsFetched) statements.push(db.prepare(FILL_FEEDS).bind(id, BASE_TIME + DAY_MS));
    }
    const feeds = episodeFeedCount(user);
    if (feeds > 0) {
      statements.push(db.prepare(INSERT_EPISODE_FEEDS).bind(feeds, id, no, BASE_TIME, active + tombstones));
      if (user.urlKeys) {
        const keys = Array.from({ length: feeds }, (_, k) => [episodeFeedGuid(no, k), urlKeyOf(episodeFeedUrl(id, k))]);
        statements.push(db.prepare(SET_URL_KEYS).bind(id, JSON.stringify(keys)));
      }
    }
  }
  const results = await db.batch(statements);
  return results.reduce((sum, result) => sum + (result.meta.rows_written ?? 0), 0);
}

/** Stored episode states of a user (tombstones included), to check the seed landed. */
export async function countEpisodes(db, userId) {
  const row = await db.prepare("SELECT count(*) AS n FROM episodes WHERE user_id = ?").bind(userId).first();
  return row?.n ?? 0;
}

/** Active and tombstoned row counts per user, to check the seed landed. */
export async function countRows(db, userId) {
  const row = await db
    .prepare(
      "SELECT sum(unsubscribed_at IS NULL) AS active, sum(unsubscribed_at IS NOT NULL) AS tombstones FROM subscriptions WHERE user_id = ?",
    )
    .bind(userId)
    .first();
  return { active: row?.active ?? 0, tombstones: row?.tombstones ?? 0 };
}
