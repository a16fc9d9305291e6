import { sql } from "drizzle-orm";
import { WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { accountSessions, gpodderSessions as g, appPasswords as p } from "./schema";
import { failedWith, failure, type Statement, statement } from "./statements";

/** App passwords per user (docs/API.md §14). */
export const MAX_APP_PASSWORDS = 50;

/** `lastUsedAt` is recorded at most once a minute (docs/API.md §14). */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** A gpodder session ends 30 days after its last use (docs/API.md §14). */
export const SESSION_IDLE_MS = 30 * 24 * 60 * 60 * 1000;
/** A session's last use is recorded at most once a day; so is its cookie's Max-Age renewed. */
export const SESSION_USE_RESOLUTION_MS = 24 * 60 * 60 * 1000;
/** Live sessions per app password: an 11th ends the one used least recently. */
export const MAX_SESSIONS_PER_APP_PASSWORD = 10;

export interface StoredAppPassword {
  id: string;
  username: string;
  label: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** Who a verified credential or session belongs to. */
export interface CredentialOwner {
  userId: string;
  appPasswordId: string;
}

const userId = sql.placeholder("userId");
const id = sql.placeholder("id");
const username = sql.placeholder("username");
const passwordHash = sql.placeholder("passwordHash");
const sessionHash = sql.placeholder("sessionHash");
const now = sql.placeholder("now");
/**
 * A password someone holds: not one a Login Flow grant minted whose app never collected it before the flow
 * expired (`expires_at` is set only until the poll collects it: docs/API.md §17). Such a one works nowhere (no
 * Basic sign-in finds it), is listed nowhere and counts in no limit; the retention cron deletes it.
 */
const held = sql`(${p.expiresAt} IS NULL OR ${p.expiresAt} > ${now})`;

const columns = sql`${p.id} AS id, ${p.username} AS username, ${p.label} AS label, ${p.createdAt} AS createdAt,
  ${p.lastUsedAt} AS lastUsedAt`;

/**
 * Inserts one app password while the user has fewer than the limit, checked inside the statement; `expiresAt`
 * only for a Login Flow's, until its app collects it.
 */
const createStatement = statement(sql`
  INSERT INTO ${p} (user_id, id, username, label, password_hash, created_at, last_used_at, expires_at)
  SELECT ${userId}, ${id}, ${username}, ${sql.placeholder("label")}, ${passwordHash}, ${now}, NULL,
    ${sql.placeholder("expiresAt")}
  WHERE (SELECT count(*) FROM ${p} WHERE ${p.userId} = ${userId} AND ${held}) < ${MAX_APP_PASSWORDS}
  RETURNING 1 AS written`);

const listStatement = statement(sql`
  SELECT ${columns} FROM ${p} WHERE ${p.userId} = ${userId} AND ${held} ORDER BY ${p.createdAt}, ${p.id}`);

const findStatement = statement(sql`
  SELECT ${columns} FROM ${p} WHERE ${p.userId} = ${userId} AND ${p.id} = ${id} AND ${held}`);

/** Deleting an app password ends every session opened with it, in the same transaction. */
const endSessionsOfStatement = statement(sql`
  DELETE FROM ${g} WHERE ${g.userId} = ${userId} AND ${g.appPasswordId} = ${id}`);
const deleteStatement = statement(sql`
  DELETE FROM ${p} WHERE ${p.userId} = ${userId} AND ${p.id} = ${id} RETURNING 1 AS written`);

/** The app passwords a username may sign in with: the caller compares the hashes in constant time. */
const candidatesStatement = statement(sql`
  SELECT ${p.userId} AS userId, ${p.id} AS appPasswordId, ${p.passwordHash} AS passwordHash
  FROM ${p} WHERE ${p.username} = ${username} AND ${p.expiresAt} IS NULL`);

const sessionHashes = sql.placeholder("sessionHashes");

/**
 * A Login Flow's poll collects the password it hands out: from then on it is held (through the username index);
 * written only while it exists and has not expired uncollected.
 */
const collectStatement = statement(sql`
  UPDATE ${p} SET expires_at = NULL
  WHERE ${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash} AND ${held}
  RETURNING 1 AS found`);

/**
 * A session that still counts, of the row `alias`: not ended by a logout (which keeps the row, its app password
 * id emptied, until the cron deletes it: so its id is never handed out again while the client's sessions are
 * derived the same way) and used within the last 30 days.
 */
const live = (alias: string) =>
  sql`(${sql.raw(alias)}.app_password_id <> '' AND ${sql.raw(alias)}.last_used_at > ${now} - ${SESSION_IDLE_MS})`;

/** The app password a Basic sign-in names, by username and hash (a wrong password names none). */
const signedInWith = sql`${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash} AND ${p.expiresAt} IS NULL`;

/**
 * Opens or reuses the session a successful Basic sign-in hands out, in the same round trip as the check: written
 * only for the app password with exactly this hash (so a failed sign-in writes nothing). `sessionHashes` are
 * the client's candidate sessions in order (middleware/gpodder-auth.ts derives them): the first that is not
 * taken by an ended or expired session is opened, or, when it is live, reused, its use recorded at most once a
 * day. So repeated Basic requests of one client write no row, whichever isolate they reach.
 */
const openSessionStatement = statement(sql`
  INSERT INTO ${g} (session_hash, user_id, app_password_id, created_at, last_used_at)
  SELECT chosen.value, ${p.userId}, ${p.id}, ${now}, ${now} FROM ${p}, json_each(${sessionHashes}) AS chosen
  WHERE chosen.key = (SELECT min(candidate.key) FROM json_each(${sessionHashes}) AS candidate
      WHERE NOT EXISTS (SELECT 1 FROM ${g} AS o WHERE o.session_hash = candidate.value AND NOT ${live("o")}))
    AND ${signedInWith}
  LIMIT 1
  ON CONFLICT (session_hash) DO UPDATE SET last_used_at = excluded.last_used_at
  WHERE ${g.lastUsedAt} <= excluded.last_used_at - ${SESSION_USE_RESOLUTION_MS}`);

/** Which candidate the sign-in opened or reused: the first one live. */
const chosenSessionStatement = statement(sql`
  SELECT min(candidate.key) AS chosen FROM json_each(${sessionHashes}) AS candidate
  WHERE EXISTS (SELECT 1 FROM ${g} AS o WHERE o.session_hash = candidate.value AND ${live("o")})`);

/** At most 10 sessions per app password after a sign-in: those used least recently end. */
const capSessionsStatement = statement(sql`
  DELETE FROM ${g} WHERE ${g.sessionHash} IN (
    SELECT o.session_hash FROM ${g} AS o INDEXED BY gpodder_sessions_app_password
    WHERE (o.user_id, o.app_password_id) = (SELECT ${p.userId}, ${p.id} FROM ${p} WHERE ${signedInWith})
    ORDER BY o.last_used_at DESC LIMIT -1 OFFSET ${MAX_SESSIONS_PER_APP_PASSWORD})`);

const stale = sql`(${p.lastUsedAt} IS NULL OR ${p.lastUsedAt} <= ${now} - ${LAST_USED_RESOLUTION_MS})`;

const touchByHashStatement = statement(sql`
  UPDATE ${p} SET last_used_at = ${now}
  WHERE ${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash} AND ${stale}`);

/**
 * A session counts only while it is live and its app password exists (deleting one ends its sessions within
 * 60 s); `renew`: its last recorded use is a day old or more (the use is recorded, and the cookie set again).
 */
const sessionStatement = statement(sql`
  SELECT ${g.userId} AS userId, ${g.appPasswordId} AS appPasswordId,
    ${g.lastUsedAt} <= ${now} - ${SESSION_USE_RESOLUTION_MS} AS renew FROM ${g}
  JOIN ${p} ON ${p.userId} = ${g.userId} AND ${p.id} = ${g.appPasswordId}
  WHERE ${g.sessionHash} = ${sessionHash} AND ${live(`"gpodder_sessions"`)}`);

const touchSessionStatement = statement(sql`
  UPDATE ${g} SET last_used_at = ${now}
  WHERE ${g.sessionHash} = ${sessionHash} AND ${live(`"gpodder_sessions"`)}
    AND ${g.lastUsedAt} <= ${now} - ${SESSION_USE_RESOLUTION_MS}`);

const touchBySessionStatement = statement(sql`
  UPDATE ${p} SET last_used_at = ${now}
  WHERE (${p.userId}, ${p.id}) = (SELECT o.user_id, o.app_password_id FROM ${g} AS o
    WHERE o.session_hash = ${sessionHash} AND ${live("o")})
    AND ${stale}`);

/** Logout: the session ends, its row kept (without its app password) until the cron deletes it 30 days on. */
const endSessionStatement = statement(sql`
  UPDATE ${g} SET app_password_id = '', last_used_at = ${now} WHERE ${g.sessionHash} = ${sessionHash}`);

/** Every credential of a user: gpodder sessions, app passwords, account page sessions. */
const revokeAllStatements = [g, p, accountSessions].map((table) =>
  statement(sql`DELETE FROM ${table} WHERE ${table.userId} = ${userId}`),
);

// ---------------------------------------------------------------------------------------------
// The credential guard: nothing lands after erasure or revocation (docs/API.md §15). Isolates cache verified
// credentials for up to 60 s, so a write may arrive with one that no longer exists; every gpodder write batch
// starts with this guard, which fails the batch (one transaction: nothing written) unless the credential still
// exists. It costs no round trip of its own, and two primary-key reads.

/**
 * The credential a gpodder write arrives with: the app password a Basic request signed in with, or the session
 * its cookie names (which counts only while its app password exists).
 */
export type WriteCredential =
  | { userId: string; appPasswordId: string; sessionHash?: undefined }
  | { userId: string; sessionHash: string; appPasswordId?: undefined };

/** What names the credential guard's failure in D1's error (statements.ts, `failure`). */
const CREDENTIAL_ENDED = "gpodder-credential-ended";

const credentialGuardStatement = statement(sql`
  SELECT CASE WHEN NOT (CASE WHEN ${sessionHash} IS NULL
      THEN EXISTS (SELECT 1 FROM ${p} WHERE ${p.userId} = ${userId} AND ${p.id} = ${id})
      ELSE EXISTS (SELECT 1 FROM ${g} JOIN ${p} ON ${p.userId} = ${g.userId} AND ${p.id} = ${g.appPasswordId}
        WHERE ${g.sessionHash} = ${sessionHash} AND ${g.userId} = ${userId})
    END) THEN ${failure(CREDENTIAL_ENDED)} END AS ended`);

/** A gpodder write arrived with a credential that no longer exists: nothing was written (401). */
export class CredentialEndedError extends Error {
  constructor(readonly credential: WriteCredential) {
    super("the credential no longer exists");
    this.name = "CredentialEndedError";
  }
}

/** The guard a gpodder write's batch starts with. */
export function credentialGuard(db: Database, credential: WriteCredential): D1PreparedStatement {
  return credentialGuardStatement.bind(db, {
    userId: credential.userId,
    id: credential.appPasswordId ?? null,
    sessionHash: credential.sessionHash ?? null,
  });
}

/** Runs a batch that starts with the credential's guard: its failure becomes CredentialEndedError. */
export async function runGuarded(run: () => Promise<void>, credential: WriteCredential): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (failedWith(err, CREDENTIAL_ENDED)) throw new CredentialEndedError(credential);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------

export type CreateResult = { kind: "created"; appPassword: StoredAppPassword } | { kind: "limit" };

export async function createAppPassword(
  db: Database,
  user: string,
  appPassword: Omit<StoredAppPassword, "lastUsedAt"> & { passwordHash: string; expiresAt?: number },
): Promise<CreateResult> {
  const { passwordHash: hash, expiresAt = null, ...stored } = appPassword;
  const row = await call(() =>
    createStatement.bind(db, { userId: user, now: stored.createdAt, passwordHash: hash, expiresAt, ...stored }).first(),
  );
  return row ? { kind: "created", appPassword: { ...stored, lastUsedAt: null } } : { kind: "limit" };
}

/** The user's app passwords at `at`, oldest first (none that expired uncollected). */
export async function listAppPasswords(db: Database, user: string, at: number): Promise<StoredAppPassword[]> {
  const { results } = await call(() => listStatement.bind(db, { userId: user, now: at }).all<StoredAppPassword>());
  return results;
}

export async function findAppPassword(db: Database, user: string, appPasswordId: string, at: number) {
  const row = await call(() =>
    findStatement.bind(db, { userId: user, id: appPasswordId, now: at }).first<StoredAppPassword>(),
  );
  return row ?? undefined;
}

/** Deletes one app password and its sessions; false when the user has no such app password. */
export async function deleteAppPassword(db: Database, user: string, appPasswordId: string): Promise<boolean> {
  const batch = new WriteBatch();
  const values = { userId: user, id: appPasswordId };
  const slot = batch.push(endSessionsOfStatement.bind(db, values), deleteStatement.bind(db, values));
  await batch.run(db);
  return slot.results()[1].results.length > 0;
}

/**
 * Collects a Login Flow's password at `at`: true when it still exists for the username (not revoked, its user not
 * erased, its flow not expired uncollected), and from now on it works. The hash is a stored value's equal, not a
 * guess being tried: Login Flow v2 asks it of a password it minted itself.
 */
export async function collectAppPassword(
  db: Database,
  credentials: { username: string; passwordHash: string },
  at: number,
): Promise<boolean> {
  const row = await call(() => collectStatement.bind(db, { ...credentials, now: at }).first());
  return row !== null;
}

/**
 * The stored candidates for a username, read while the session for a match is opened or reused (one round
 * trip): `sessionHashes` are the hashes of the client's candidate session ids, in order; `chosen` is the index of
 * the one opened or reused (undefined when none: a wrong password, or `write` false). With `write` false (the
 * user's bucket is frozen for a move: a row written now could be left behind in the old database), only the
 * candidates are read: no session is opened and no use recorded.
 */
export async function signIn(
  db: Database,
  credentials: { username: string; passwordHash: string; sessionHashes: readonly string[]; now: number },
  write: boolean,
): Promise<{ candidates: { userId: string; appPasswordId: string; passwordHash: string }[]; chosen?: number }> {
  const batch = new WriteBatch();
  const values = { ...credentials, sessionHashes: JSON.stringify(credentials.sessionHashes) };
  const slot = batch.push(
    candidatesStatement.bind(db, values),
    ...(write
      ? [
          openSessionStatement.bind(db, values),
          capSessionsStatement.bind(db, values),
          chosenSessionStatement.bind(db, values),
          touchByHashStatement.bind(db, values),
        ]
      : []),
  );
  await batch.run(db);
  const [candidates, , , chosen] = slot.results();
  return {
    candidates: candidates.results as { userId: string; appPasswordId: string; passwordHash: string }[],
    chosen: (chosen?.results[0]?.chosen as number | null | undefined) ?? undefined,
  };
}

/**
 * The owner of a live session (its app password still exists), recording the use (at most once a day: then
 * `renew`, the cookie is set again) unless `write` is false (a frozen bucket, as for signIn); undefined when none.
 */
export async function findSession(
  db: Database,
  hash: string,
  at: number,
  write: boolean,
): Promise<(CredentialOwner & { renew: boolean }) | undefined> {
  const batch = new WriteBatch();
  const values = { sessionHash: hash, now: at };
  const slot = batch.push(
    sessionStatement.bind(db, values),
    ...(write ? [touchSessionStatement.bind(db, values), touchBySessionStatement.bind(db, values)] : []),
  );
  await batch.run(db);
  const row = slot.results()[0].results[0];
  if (!row) return undefined;
  return {
    userId: row.userId as string,
    appPasswordId: row.appPasswordId as string,
    renew: write && row.renew === 1,
  };
}

/**
 * Revokes every credential of the user in one batch (one round trip, one transaction): every app password,
 * gpodder session and account page session. Nothing they send afterwards is stored (the credential guard), and
 * isolates stop accepting them within 60 s. For an operator's command (`npm run admin -- revoke <sub>`) and
 * anything else that must sign a user out everywhere; answers how many of each were deleted.
 */
export async function revokeAllCredentials(
  db: Database,
  user: string,
): Promise<{ appPasswords: number; gpodderSessions: number; accountSessions: number }> {
  const results = await call(() => db.batch(revokeAllStatements.map((revoke) => revoke.bind(db, { userId: user }))));
  const [gpodderSessions, appPasswords, accountSessionRows] = results.map((result) => result.meta?.changes ?? 0);
  return { appPasswords, gpodderSessions, accountSessions: accountSessionRows };
}

/** Logout: the session stops working at once (its row kept, ended, for the cron to delete 30 days on). */
export async function endSession(db: Database, hash: string, at: number): Promise<void> {
  await call(() => endSessionStatement.bind(db, { sessionHash: hash, now: at }).run());
}

/**
 * The statements the API, the pages and the gpodder paths run, for the test that proves none scans a table
 * (test/gpodder.test.ts, which runs each through those paths).
 */
export const appPasswordStatements: Record<string, Statement> = {
  create: createStatement,
  list: listStatement,
  find: findStatement,
  endSessionsOf: endSessionsOfStatement,
  delete: deleteStatement,
  candidates: candidatesStatement,
  openSession: openSessionStatement,
  chosenSession: chosenSessionStatement,
  capSessions: capSessionsStatement,
  touchSession: touchSessionStatement,
  touchByHash: touchByHashStatement,
  session: sessionStatement,
  touchBySession: touchBySessionStatement,
  endSession: endSessionStatement,
  credentialGuard: credentialGuardStatement,
  ...Object.fromEntries(revokeAllStatements.map((revoke, index) => [`revokeAll${index}`, revoke])),
};

/** The Login Flow poll's collection of a granted password; test/nextcloud.test.ts proves its plan. */
export const appPasswordCheckStatements: Record<string, Statement> = { collect: collectStatement };
