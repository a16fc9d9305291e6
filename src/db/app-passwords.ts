import { sql } from "drizzle-orm";
import { WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { gpodderSessions as g, appPasswords as p } from "./schema";
import { type Statement, statement } from "./statements";

/** App passwords per user (docs/API.md §14). */
export const MAX_APP_PASSWORDS = 50;

/** `lastUsedAt` is recorded at most once a minute (docs/API.md §14). */
export const LAST_USED_RESOLUTION_MS = 60_000;

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
const columns = sql`${p.id} AS id, ${p.username} AS username, ${p.label} AS label, ${p.createdAt} AS createdAt,
  ${p.lastUsedAt} AS lastUsedAt`;

/** Inserts one app password while the user has fewer than the limit, checked inside the statement. */
const createStatement = statement(sql`
  INSERT INTO ${p} (user_id, id, username, label, password_hash, created_at, last_used_at)
  SELECT ${userId}, ${id}, ${username}, ${sql.placeholder("label")}, ${passwordHash}, ${now}, NULL
  WHERE (SELECT count(*) FROM ${p} WHERE ${p.userId} = ${userId}) < ${MAX_APP_PASSWORDS}
  RETURNING 1 AS written`);

const listStatement = statement(sql`
  SELECT ${columns} FROM ${p} WHERE ${p.userId} = ${userId} ORDER BY ${p.createdAt}, ${p.id}`);

const findStatement = statement(sql`SELECT ${columns} FROM ${p} WHERE ${p.userId} = ${userId} AND ${p.id} = ${id}`);

/** Deleting an app password ends every session opened with it, in the same transaction. */
const endSessionsOfStatement = statement(sql`
  DELETE FROM ${g} WHERE ${g.userId} = ${userId} AND ${g.appPasswordId} = ${id}`);
const deleteStatement = statement(sql`
  DELETE FROM ${p} WHERE ${p.userId} = ${userId} AND ${p.id} = ${id} RETURNING 1 AS written`);

/** The app passwords a username may sign in with: the caller compares the hashes in constant time. */
const candidatesStatement = statement(sql`
  SELECT ${p.userId} AS userId, ${p.id} AS appPasswordId, ${p.passwordHash} AS passwordHash
  FROM ${p} WHERE ${p.username} = ${username}`);

/** Whether an app password with this hash exists under the username (through the username index). */
const existsStatement = statement(sql`
  SELECT 1 AS found FROM ${p} WHERE ${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash}`);

/**
 * Opens the session a successful Basic sign-in hands out, in the same round trip as the check: written only
 * for the app password with exactly this hash (so a failed sign-in writes nothing).
 */
const openSessionStatement = statement(sql`
  INSERT INTO ${g} (session_hash, user_id, app_password_id, created_at)
  SELECT ${sessionHash}, ${p.userId}, ${p.id}, ${now} FROM ${p}
  WHERE ${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash}
  LIMIT 1`);

const stale = sql`(${p.lastUsedAt} IS NULL OR ${p.lastUsedAt} <= ${now} - ${LAST_USED_RESOLUTION_MS})`;

const touchByHashStatement = statement(sql`
  UPDATE ${p} SET last_used_at = ${now}
  WHERE ${p.username} = ${username} AND ${p.passwordHash} = ${passwordHash} AND ${stale}`);

/** A session counts only while its app password exists (deleting one ends its sessions within 60 s). */
const sessionStatement = statement(sql`
  SELECT ${g.userId} AS userId, ${g.appPasswordId} AS appPasswordId FROM ${g}
  JOIN ${p} ON ${p.userId} = ${g.userId} AND ${p.id} = ${g.appPasswordId}
  WHERE ${g.sessionHash} = ${sessionHash}`);

const touchBySessionStatement = statement(sql`
  UPDATE ${p} SET last_used_at = ${now}
  WHERE (${p.userId}, ${p.id}) = (SELECT ${g.userId}, ${g.appPasswordId} FROM ${g} WHERE ${g.sessionHash} = ${sessionHash})
    AND ${stale}`);

const endSessionStatement = statement(sql`DELETE FROM ${g} WHERE ${g.sessionHash} = ${sessionHash}`);

export type CreateResult = { kind: "created"; appPassword: StoredAppPassword } | { kind: "limit" };

export async function createAppPassword(
  db: Database,
  user: string,
  appPassword: Omit<StoredAppPassword, "lastUsedAt"> & { passwordHash: string },
): Promise<CreateResult> {
  const { passwordHash: hash, ...stored } = appPassword;
  const row = await call(() =>
    createStatement.bind(db, { userId: user, now: stored.createdAt, passwordHash: hash, ...stored }).first(),
  );
  return row ? { kind: "created", appPassword: { ...stored, lastUsedAt: null } } : { kind: "limit" };
}

/** The user's app passwords, oldest first. */
export async function listAppPasswords(db: Database, user: string): Promise<StoredAppPassword[]> {
  const { results } = await call(() => listStatement.bind(db, { userId: user }).all<StoredAppPassword>());
  return results;
}

export async function findAppPassword(db: Database, user: string, appPasswordId: string) {
  const row = await call(() => findStatement.bind(db, { userId: user, id: appPasswordId }).first<StoredAppPassword>());
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
 * Whether the password whose hash this is still exists for the username (not revoked, its user not erased). The
 * hash is a stored value's equal, not a guess being tried: Login Flow v2 asks it of a password it minted itself.
 */
export async function appPasswordExists(
  db: Database,
  credentials: { username: string; passwordHash: string },
): Promise<boolean> {
  const row = await call(() => existsStatement.bind(db, credentials).first());
  return row !== null;
}

/** The stored candidates for a username, read while the session for a match is opened (one round trip). */
/**
 * With `write` false (the user's bucket is frozen for a move: a row written now could be left behind in the
 * old database), only the candidates are read: no session is opened and no use recorded.
 */
export async function signIn(
  db: Database,
  credentials: { username: string; passwordHash: string; sessionHash: string; now: number },
  write: boolean,
): Promise<{ userId: string; appPasswordId: string; passwordHash: string }[]> {
  const batch = new WriteBatch();
  const slot = batch.push(
    candidatesStatement.bind(db, credentials),
    ...(write ? [openSessionStatement.bind(db, credentials), touchByHashStatement.bind(db, credentials)] : []),
  );
  await batch.run(db);
  return slot.results()[0].results as { userId: string; appPasswordId: string; passwordHash: string }[];
}

/**
 * The owner of a live session (its app password still exists), recording the use unless `write` is false
 * (a frozen bucket, as for signIn); undefined when none.
 */
export async function findSession(
  db: Database,
  hash: string,
  at: number,
  write: boolean,
): Promise<CredentialOwner | undefined> {
  const batch = new WriteBatch();
  const values = { sessionHash: hash, now: at };
  const slot = batch.push(
    sessionStatement.bind(db, values),
    ...(write ? [touchBySessionStatement.bind(db, values)] : []),
  );
  await batch.run(db);
  return slot.results()[0].results[0] as unknown as CredentialOwner | undefined;
}

/** Logout: the session stops working at once. */
export async function endSession(db: Database, hash: string): Promise<void> {
  await call(() => endSessionStatement.bind(db, { sessionHash: hash }).run());
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
  touchByHash: touchByHashStatement,
  session: sessionStatement,
  touchBySession: touchBySessionStatement,
  endSession: endSessionStatement,
};

/** The Login Flow poll's check that a granted password still exists; test/nextcloud.test.ts proves its plan. */
export const appPasswordCheckStatements: Record<string, Statement> = { exists: existsStatement };
