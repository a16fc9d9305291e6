import { sql } from "drizzle-orm";
import { WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { accountSessions as a } from "./schema";
import { type Statement, statement } from "./statements";

/**
 * Account page sessions (docs/API.md §16): one row per signed-in browser, in the user's database, holding only
 * the SHA-256 of the cookie. A session lasts 7 days from sign-in; sign-out and erasure delete the row.
 */

/** 7 days, as the contract fixes. */
export const ACCOUNT_SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * Live sessions per user: signing in again on an 11th browser ends the oldest. Each sign-in makes a new session,
 * so without a bound a script signing in over and over would grow the user's rows without end.
 */
export const MAX_ACCOUNT_SESSIONS = 10;

export interface AccountSession {
  userId: string;
  name: string;
  expiresAt: number;
}

const userId = sql.placeholder("userId");
const sessionHash = sql.placeholder("sessionHash");
const now = sql.placeholder("now");

const startStatement = statement(sql`
  INSERT INTO ${a} (session_hash, user_id, name, created_at, expires_at)
  VALUES (${sessionHash}, ${userId}, ${sql.placeholder("name")}, ${now}, ${sql.placeholder("expiresAt")})`);

/** The user's sessions past their end, and those beyond the newest MAX_ACCOUNT_SESSIONS (read by the user index). */
const trimStatement = statement(sql`
  DELETE FROM ${a} WHERE ${a.userId} = ${userId} AND (${a.expiresAt} <= ${now} OR ${a.sessionHash} NOT IN (
    SELECT ${a.sessionHash} FROM ${a} WHERE ${a.userId} = ${userId} AND ${a.expiresAt} > ${now}
    ORDER BY ${a.createdAt} DESC, ${a.sessionHash} LIMIT ${MAX_ACCOUNT_SESSIONS}))`);

const findStatement = statement(sql`
  SELECT ${a.userId} AS userId, ${a.name} AS name, ${a.expiresAt} AS expiresAt FROM ${a}
  WHERE ${a.sessionHash} = ${sessionHash} AND ${a.expiresAt} > ${now}`);

const endStatement = statement(sql`DELETE FROM ${a} WHERE ${a.sessionHash} = ${sessionHash}`);

/** Starts a session (a new row: a sign-in never reuses one), ending the user's expired and surplus ones. */
export async function startAccountSession(
  db: Database,
  session: { sessionHash: string; userId: string; name: string; now: number },
): Promise<number> {
  const expiresAt = session.now + ACCOUNT_SESSION_TTL_MS;
  const batch = new WriteBatch();
  batch.push(startStatement.bind(db, { ...session, expiresAt }), trimStatement.bind(db, session));
  await batch.run(db);
  return expiresAt;
}

/** The live session with this hash; undefined when there is none, or it has ended. */
export async function findAccountSession(db: Database, hash: string, at: number): Promise<AccountSession | undefined> {
  const row = await call(() => findStatement.bind(db, { sessionHash: hash, now: at }).first<AccountSession>());
  return row ?? undefined;
}

/** Sign-out: the session stops working at once. */
export async function endAccountSession(db: Database, hash: string): Promise<void> {
  await call(() => endStatement.bind(db, { sessionHash: hash }).run());
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const accountSessionStatements: Record<string, Statement> = {
  start: startStatement,
  trim: trimStatement,
  find: findStatement,
  end: endStatement,
};
