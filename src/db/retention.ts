import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { SESSION_IDLE_MS } from "./app-passwords";
import { call, type Database } from "./database";
import { accountSessions, appPasswords, gpodderSessions, userStats as stats, subscriptions } from "./schema";
import { type Statement, statement } from "./statements";
import { episodeTombstones, subscriptionTombstones, type TombstoneTable } from "./storage";
import { MAX_STORED_SUBSCRIPTIONS } from "./subscriptions";
import { urlKey } from "./url-key";
import { FEED_URL, storedUrl } from "./url-pieces";

/** How long a tombstone is kept without a user request (docs/API.md §15). */
export const TOMBSTONE_RETENTION_MS = 180 * 24 * 60 * 60 * 1000;

/**
 * The work one retention run does per database and resource: at most this many of the oldest expired
 * tombstones are looked at (and purged), and at most this many live rows renumbered. A run then holds its
 * database for a few milliseconds, whatever is stored; what is left waits for the next run.
 */
export const TOMBSTONES_PER_RUN = 500;
export const RENUMBERED_PER_RUN = 500;
/**
 * Rows from before migration 0004 given their url_key per run and database. Until a row has one, every lookup
 * by URL of its user compares it by its text (src/db/gpodder.ts), so an account made of such rows is slow to
 * read by URL until the runs have been through it.
 */
export const URL_KEYS_PER_RUN = 500;
/**
 * The finds a run makes per kind of work and database when a find holds rows of users it may not write (see
 * `writableWork`): each finds again without the users seen so far, so such rows never hold back the others.
 */
export const FINDS_PER_RUN = 3;

const userId = sql.placeholder("userId");
const horizon = sql.placeholder("horizon");
/** The users a find leaves out: a JSON array (one bound parameter however many). */
const notSkipped = (column: SQL | SQLiteColumn) =>
  sql`${column} NOT IN (SELECT value FROM json_each(${sql.placeholder("skip")}))`;

interface RetentionStatements {
  /**
   * Per user, the newest change number among the oldest expired tombstones (the age index, oldest first), the
   * users of `skip` left out.
   */
  expired: Statement;
  /** Renumbers up to `limit` of the user's live rows below `horizon`, lowest first. */
  renumber: Statement;
  /** Raises the horizon (the trigger purges) once no live row lies below it. */
  raise: Statement;
}

function retentionStatements(table: TombstoneTable): RetentionStatements {
  const horizonColumn = sql.identifier(table.horizon.name);
  const liveBelow = sql`${table.userId} = ${userId} AND ${table.deletedAt} IS NULL AND ${table.changeSeq} < ${horizon}`;
  return {
    expired: statement(sql`
      SELECT user_id, max(change_seq) AS horizon FROM (
        SELECT ${table.userId} AS user_id, ${table.changeSeq} AS change_seq FROM ${table.table}
        WHERE ${table.deletedAt} IS NOT NULL AND ${table.deletedAt} < ${sql.placeholder("cutoff")}
          AND ${notSkipped(table.userId)}
        ORDER BY ${table.deletedAt} LIMIT ${TOMBSTONES_PER_RUN}
      ) GROUP BY user_id`),
    // The correlated subquery reads the version the previous row's trigger wrote: fresh numbers, in order.
    renumber: statement(sql`
      UPDATE ${table.table} SET ${sql.identifier(table.changeSeq.name)} = (
          SELECT ${table.version} + 1 FROM ${stats} WHERE ${stats.userId} = ${table.userId}),
        received_at = unixepoch()
      WHERE ${table.userId} = ${userId} AND ${table.id} IN (
        SELECT ${table.id} FROM ${table.table} WHERE ${liveBelow}
        ORDER BY ${table.changeSeq} LIMIT ${sql.placeholder("limit")})`),
    raise: statement(sql`
      UPDATE ${stats} SET ${horizonColumn} = ${horizon}
      WHERE ${stats.userId} = ${userId} AND ${table.horizon} < ${horizon}
        AND NOT EXISTS (SELECT 1 FROM ${table.table} WHERE ${liveBelow})`),
  };
}

const tables = [subscriptionTombstones, episodeTombstones].map(retentionStatements);

/**
 * Whether a run may write this user's rows in the database it runs on: the database holds the user, and the
 * user is not being moved. A bucket move (`npm run shards:move`) checksums the rows it copies, and leaves copies
 * in a database that does not hold their users until it deletes them: a run writing those would stop the move.
 */
export type WritableUser = (userId: string) => Promise<boolean>;

/** Finds up to a slice of work, leaving out the users of `skip` (a JSON array). */
type FindWork<T> = (skip: string) => Promise<readonly T[]>;

/**
 * The work of one run that it may write. A find's rows of users it may not write (a frozen bucket, or the copies
 * a failed move left in a database that does not hold their users, kept until someone deletes them) may be the
 * oldest for a long time: left in, every run would find them first and skip them, and the others would wait.
 * So while a find holds such rows, the run finds again without every user seen so far, at most FINDS_PER_RUN
 * finds; each find reads past the left-out users' rows. Each user is asked once.
 */
async function writableWork<T>(find: FindWork<T>, userOf: (item: T) => string, writable: WritableUser): Promise<T[]> {
  const work: T[] = [];
  const seen: string[] = [];
  for (let round = 0; round < FINDS_PER_RUN; round++) {
    const found = await find(JSON.stringify(seen));
    const users = [...new Set(found.map(userOf))];
    const allowed = await Promise.all(users.map(writable));
    const writableUsers = new Set(users.filter((_, index) => allowed[index]));
    work.push(...found.filter((item) => writableUsers.has(userOf(item))));
    if (writableUsers.size === users.length) break;
    seen.push(...users);
  }
  return work;
}

/**
 * One retention run on one database (docs/API.md §15): tombstones deleted before `cutoff` are purged, oldest
 * first, within the per-run bounds. A user's purge raises the horizon only once no live row lies below it, so a
 * device is never stranded; until then each run renumbers another slice of those rows. Two D1 calls per
 * resource: find (more finds when it holds users the run may not write: `writableWork`), then one batch for
 * every user found that the run may write. Returns the number of those users.
 */
export async function purgeExpiredTombstones(db: Database, cutoff: number, writable: WritableUser): Promise<number> {
  let due = 0;
  for (const table of tables) {
    const find = async (skip: string) =>
      (await call(() => table.expired.bind(db, { cutoff, skip }).all<{ user_id: string; horizon: number }>())).results;
    const users = await writableWork(find, (user) => user.user_id, writable);
    if (users.length === 0) continue;
    due += users.length;
    const limit = Math.max(1, Math.floor(RENUMBERED_PER_RUN / users.length));
    const statements = users.flatMap((user) => {
      const values = { userId: user.user_id, horizon: user.horizon, limit };
      return [table.renumber.bind(db, values), table.raise.bind(db, values)];
    });
    await call(() => db.batch(statements));
  }
  return due;
}

/** Rows still without url_key, found through the partial index that holds only them, with their whole URL text. */
const unkeyedRows = (where: SQL) =>
  statement(sql`
  SELECT s.user_id AS user_id, s.guid AS guid, ${storedUrl(FEED_URL, "s")} AS feed_url
  FROM ${subscriptions} AS s INDEXED BY subscriptions_url_key_missing
  WHERE ${where} s.url_key IS NULL LIMIT ${URL_KEYS_PER_RUN}`);
const missingUrlKeys = unkeyedRows(sql`${notSkipped(sql`s.user_id`)} AND`);
const userMissingUrlKeys = unkeyedRows(sql`s.user_id = ${userId} AND`);

/**
 * The keys bound as one JSON array of `[user, guid, key]` (D1 takes at most 100 bound parameters). Only a row
 * still without a key takes one: a write since the read set the key of the URL it wrote. No trigger fires on
 * url_key (the stats and change feed triggers fire on change_seq, the pieces trigger on feed_url), so the row's
 * change number, receive time and the user's version stay: a key is no change any feed reports.
 */
const fillUrlKeys = statement(sql`
  UPDATE ${subscriptions} SET url_key = k.value ->> 2
  FROM json_each(${sql.placeholder("keys")}) AS k
  WHERE ${subscriptions.userId} = k.value ->> 0 AND ${subscriptions.guid} = k.value ->> 1
    AND ${subscriptions.urlKey} IS NULL
  RETURNING 1 AS keyed`);

export interface UnkeyedRow {
  user_id: string;
  guid: string;
  feed_url: string;
}

/**
 * Up to URL_KEYS_PER_RUN rows without url_key, with their whole URL text: of one user (`{user}`), or of any user
 * but those of `skip` (a JSON array; none left out by default).
 */
export async function findUnkeyedRows(
  db: Database,
  among: { user: string } | { skip: string } = { skip: "[]" },
): Promise<UnkeyedRow[]> {
  const find = "user" in among ? userMissingUrlKeys.bind(db, { userId: among.user }) : missingUrlKeys.bind(db, among);
  return (await call(() => find.all<UnkeyedRow>())).results;
}

/** Writes the key of each row's URL as read, to the rows still without one (one statement); returns how many. */
export async function writeUrlKeys(db: Database, rows: readonly UnkeyedRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const keys = JSON.stringify(rows.map((row) => [row.user_id, row.guid, urlKey(row.feed_url)]));
  // The rows it returns, not D1's count of changes, which counts what the rows' triggers write too (drizzle/0010).
  return (await call(() => fillUrlKeys.bind(db, { keys }).run())).results.length;
}

/**
 * Gives up to URL_KEYS_PER_RUN rows from before migration 0004 their url_key (SQLite has no SHA-256: the
 * isolate computes it), so lookups by URL find them by key; only rows of users the run may write. One find (more
 * when it holds users the run may not write: `writableWork`) and one write; returns the rows keyed.
 */
export async function backfillUrlKeys(db: Database, writable: WritableUser): Promise<number> {
  const find = (skip: string) => findUnkeyedRows(db, { skip });
  return writeUrlKeys(db, await writableWork(find, (row) => row.user_id, writable));
}

/**
 * Gives every row of one user still without url_key its key, URL_KEYS_PER_RUN rows per find and write, and
 * returns how many it keyed (none, in one find, once the user's rows are keyed). The gpodder subscription
 * changes do this before they walk the user's rows: they name each URL once by comparing keys, and a row
 * without one could only be compared by walking every other such row of the user, for each row (an account
 * of 10 000 such rows read 100 million rows in one request).
 */
export async function keyUserUrls(db: Database, user: string): Promise<number> {
  let keyed = 0;
  // Each round keys the rows it found (a row keyed meanwhile by a write is not found again): the quota bounds them.
  for (let round = 0; round <= MAX_STORED_SUBSCRIPTIONS / URL_KEYS_PER_RUN; round++) {
    const rows = await findUnkeyedRows(db, { user });
    keyed += await writeUrlKeys(db, rows);
    if (rows.length < URL_KEYS_PER_RUN) break;
  }
  return keyed;
}

/** Ended gpodder sessions deleted per run and database (a slice, like the others: what is left waits). */
export const SESSIONS_PER_RUN = 500;

/**
 * The oldest ended gpodder sessions (last used 30 days before `cutoff`'s run, or logged out as long ago: a logout
 * keeps its row that long, so its id is not handed out again) through their index, the users of `skip` left out.
 */
const endedSessions = statement(sql`
  SELECT ${gpodderSessions.sessionHash} AS hash, ${gpodderSessions.userId} AS user_id
  FROM ${gpodderSessions} INDEXED BY gpodder_sessions_last_used
  WHERE ${gpodderSessions.lastUsedAt} < ${sql.placeholder("cutoff")} AND ${notSkipped(gpodderSessions.userId)}
  ORDER BY ${gpodderSessions.lastUsedAt} LIMIT ${SESSIONS_PER_RUN}`);

/** Deletes the sessions found, unless one was used since (a JSON array of hashes: one parameter). */
const deleteSessions = statement(sql`
  DELETE FROM ${gpodderSessions} WHERE ${gpodderSessions.sessionHash} IN (SELECT value FROM json_each(${sql.placeholder("hashes")}))
    AND ${gpodderSessions.lastUsedAt} < ${sql.placeholder("cutoff")}`);

/**
 * Deletes up to SESSIONS_PER_RUN ended gpodder sessions (docs/API.md §14: a session ends 30 days after its last
 * use), oldest first, of users the run may write. One find (more when it holds users the run may not write:
 * `writableWork`) and one delete; returns how many were deleted.
 */
export async function purgeEndedSessions(db: Database, now: number, writable: WritableUser): Promise<number> {
  const cutoff = now - SESSION_IDLE_MS;
  const find = async (skip: string) =>
    (await call(() => endedSessions.bind(db, { cutoff, skip }).all<{ hash: string; user_id: string }>())).results;
  const sessions = await writableWork(find, (session) => session.user_id, writable);
  if (sessions.length === 0) return 0;
  const hashes = JSON.stringify(sessions.map((session) => session.hash));
  return (await call(() => deleteSessions.bind(db, { hashes, cutoff }).run())).meta.changes;
}

/** Account page sessions past their 7 days (docs/API.md §16) through their index, the users of `skip` left out. */
const expiredAccountSessions = statement(sql`
  SELECT ${accountSessions.sessionHash} AS hash, ${accountSessions.userId} AS user_id
  FROM ${accountSessions} INDEXED BY account_sessions_expiry
  WHERE ${accountSessions.expiresAt} <= ${sql.placeholder("cutoff")} AND ${notSkipped(accountSessions.userId)}
  ORDER BY ${accountSessions.expiresAt} LIMIT ${SESSIONS_PER_RUN}`);

const deleteAccountSessions = statement(sql`
  DELETE FROM ${accountSessions} WHERE ${accountSessions.sessionHash} IN (SELECT value FROM json_each(${sql.placeholder("hashes")}))`);

/**
 * Deletes up to SESSIONS_PER_RUN expired account page sessions, oldest first, of users the run may write: an
 * expired session already opens nothing (its row is read with its expiry), so this only keeps the table to the
 * live ones. One find (more when it holds users the run may not write) and one delete; returns how many.
 */
export async function purgeExpiredAccountSessions(db: Database, now: number, writable: WritableUser): Promise<number> {
  const find = async (skip: string) =>
    (await call(() => expiredAccountSessions.bind(db, { cutoff: now, skip }).all<{ hash: string; user_id: string }>()))
      .results;
  const sessions = await writableWork(find, (session) => session.user_id, writable);
  if (sessions.length === 0) return 0;
  const hashes = JSON.stringify(sessions.map((session) => session.hash));
  return (await call(() => deleteAccountSessions.bind(db, { hashes }).run())).meta.changes;
}

/**
 * The app passwords Login Flow grants minted whose apps never collected them before their flows expired, oldest
 * first, through their partial index (only uncollected ones are in it), the users of `skip` left out.
 */
const uncollectedAppPasswords = statement(sql`
  SELECT ${appPasswords.userId} AS user_id, ${appPasswords.id} AS id
  FROM ${appPasswords} INDEXED BY app_passwords_uncollected
  WHERE ${appPasswords.expiresAt} <= ${sql.placeholder("cutoff")} AND ${notSkipped(appPasswords.userId)}
  ORDER BY ${appPasswords.expiresAt} LIMIT ${SESSIONS_PER_RUN}`);

/** Deletes the given ones, if they are still uncollected and expired (a poll may have collected one since). */
const deleteUncollectedAppPasswords = statement(sql`
  DELETE FROM ${appPasswords} WHERE (${appPasswords.userId}, ${appPasswords.id}) IN (
    SELECT value ->> 0, value ->> 1 FROM json_each(${sql.placeholder("rows")}))
    AND ${appPasswords.expiresAt} <= ${sql.placeholder("cutoff")}`);

/**
 * Deletes up to SESSIONS_PER_RUN app passwords that expired uncollected (docs/API.md §17), of users the run may
 * write. They already work nowhere and count nowhere (db/app-passwords.ts); this removes them. A grant per flow
 * and at most 10 000 flows pending bound how many there can be; returns how many.
 */
export async function purgeUncollectedAppPasswords(db: Database, now: number, writable: WritableUser): Promise<number> {
  const find = async (skip: string) =>
    (await call(() => uncollectedAppPasswords.bind(db, { cutoff: now, skip }).all<{ user_id: string; id: string }>()))
      .results;
  const rows = await writableWork(find, (row) => row.user_id, writable);
  if (rows.length === 0) return 0;
  const values = { rows: JSON.stringify(rows.map((row) => [row.user_id, row.id])), cutoff: now };
  return (await call(() => deleteUncollectedAppPasswords.bind(db, values).run())).meta.changes;
}

export const retentionStatementsByName: Record<string, Statement> = {
  ...Object.fromEntries(
    tables.flatMap((table, index) => Object.entries(table).map(([name, query]) => [`${name}${index}`, query])),
  ),
  missingUrlKeys,
  userMissingUrlKeys,
  fillUrlKeys,
  endedSessions,
  deleteSessions,
  expiredAccountSessions,
  deleteAccountSessions,
  uncollectedAppPasswords,
  deleteUncollectedAppPasswords,
};
