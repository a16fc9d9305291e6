import { sql } from "drizzle-orm";
import { call, type Database } from "./database";
import { loginFlows as f } from "./schema";
import { type Statement, statement } from "./statements";

/**
 * Nextcloud Login Flow v2 (docs/API.md §17), in the database that holds bucket 0 (nobody is signed in when an
 * app starts a flow, so no user picks the database: nextcloud/login-flow.ts). Rows are found by the SHA-256 of
 * the poll token (`tokenHash`, what the app polls with) or of the login id (`loginHash`, the browser's link);
 * neither secret is stored. `sealed` is the flow's sealed secret: until the grant, the key the password will be
 * sealed with, itself sealed under the login id's key; after it, the app password sealed under that key
 * (nextcloud/login-flow.ts says how). A flow is pending while `login_name` is null, and live until
 * `expires_at` (ms).
 */

/**
 * Flows pending at once per database (started, not expired, not collected: docs/API.md §17); a start past it is
 * refused and writes nothing. It bounds the table, and with it the cron's work: the flows that expire within any
 * 20 minutes were all pending at its start, so at most this many expire between two cron runs (10 minutes).
 */
export const MAX_PENDING_LOGIN_FLOWS = 10_000;

/**
 * Expired flows one purge statement deletes; the cron repeats it until none is left (src/retention.ts), so every
 * expired flow goes within a run of expiring, however many there are.
 */
export const LOGIN_FLOWS_PER_PURGE = 1000;

/** A started flow as stored. */
export interface NewLoginFlow {
  tokenHash: string;
  loginHash: string;
  appName: string;
  startedAt: number;
  startedFrom: string;
  expiresAt: number;
  sealed: string;
}

/** A flow waiting for its grant: what the grant page shows, and the sealed key the grant seals with. */
export interface PendingLoginFlow {
  appName: string;
  startedAt: number;
  startedFrom: string;
  expiresAt: number;
  sealed: string;
}

const tokenHash = sql.placeholder("tokenHash");
const loginHash = sql.placeholder("loginHash");
const now = sql.placeholder("now");
const pending = sql`${f.loginHash} = ${loginHash} AND ${f.loginName} IS NULL`;
const live = sql`${f.expiresAt} > ${now}`;

/**
 * Written only while fewer than MAX_PENDING_LOGIN_FLOWS flows are live, counted inside the statement through the
 * expiry index, at most that many entries read (collected and denied flows are deleted, so live is pending).
 */
const startStatement = statement(sql`
  INSERT INTO ${f} (token_hash, login_hash, app_name, started_at, started_from, expires_at, login_name, sealed_password)
  SELECT ${tokenHash}, ${loginHash}, ${sql.placeholder("appName")}, ${sql.placeholder("startedAt")},
    ${sql.placeholder("startedFrom")}, ${sql.placeholder("expiresAt")}, NULL, ${sql.placeholder("sealed")}
  WHERE (SELECT count(*) FROM (SELECT 1 FROM ${f} WHERE ${f.expiresAt} > ${sql.placeholder("startedAt")}
    LIMIT ${MAX_PENDING_LOGIN_FLOWS})) < ${MAX_PENDING_LOGIN_FLOWS}
  RETURNING 1 AS written`);

const findPendingStatement = statement(sql`
  SELECT ${f.appName} AS appName, ${f.startedAt} AS startedAt, ${f.startedFrom} AS startedFrom,
    ${f.expiresAt} AS expiresAt, ${f.sealedPassword} AS sealed
  FROM ${f} WHERE ${pending} AND ${live}`);

/** Only a live flow not granted yet takes a grant: of two grants of one flow, the second writes nothing. */
const grantStatement = statement(sql`
  UPDATE ${f} SET login_name = ${sql.placeholder("loginName")}, sealed_password = ${sql.placeholder("sealed")}
  WHERE ${pending} AND ${live} RETURNING 1 AS written`);

/** Only a live flow not granted yet is denied (an expired one is left to the cron, as the page says it expired). */
const denyStatement = statement(sql`DELETE FROM ${f} WHERE ${pending} AND ${live} RETURNING ${f.appName} AS appName`);

/**
 * The grant handed out once: the statement that reads it deletes the row, so of two concurrent polls only one
 * gets it (SQLite runs one write at a time).
 */
const collectStatement = statement(sql`
  DELETE FROM ${f} WHERE ${f.tokenHash} = ${tokenHash} AND ${f.loginName} IS NOT NULL AND ${live}
  RETURNING ${f.loginName} AS loginName, ${f.sealedPassword} AS sealed`);

/** The oldest expired flows, through the expiry index, a bounded slice per statement. */
const purgeStatement = statement(sql`
  DELETE FROM ${f} WHERE ${f.tokenHash} IN (
    SELECT ${f.tokenHash} FROM ${f} WHERE ${f.expiresAt} <= ${now} ORDER BY ${f.expiresAt} LIMIT ${LOGIN_FLOWS_PER_PURGE})`);

/** Stores a started flow; false (nothing written) when MAX_PENDING_LOGIN_FLOWS are pending already. */
export async function startLoginFlow(db: Database, flow: NewLoginFlow): Promise<boolean> {
  const row = await call(() => startStatement.bind(db, { ...flow }).first());
  return row !== null;
}

/** The live flow of this login id hash that is waiting for its grant; undefined when none is. */
export async function findPendingLoginFlow(
  db: Database,
  hash: string,
  at: number,
): Promise<PendingLoginFlow | undefined> {
  const row = await call(() => findPendingStatement.bind(db, { loginHash: hash, now: at }).first<PendingLoginFlow>());
  return row ?? undefined;
}

/** Stores the grant on a live pending flow; false when the flow is gone, expired or already granted. */
export async function grantLoginFlow(
  db: Database,
  hash: string,
  grant: { loginName: string; sealed: string },
  at: number,
): Promise<boolean> {
  const row = await call(() => grantStatement.bind(db, { loginHash: hash, now: at, ...grant }).first());
  return row !== null;
}

/** Ends a live pending flow (`Deny`); the app's name it had, undefined when there was none. */
export async function denyLoginFlow(db: Database, hash: string, at: number): Promise<string | undefined> {
  const row = await call(() => denyStatement.bind(db, { loginHash: hash, now: at }).first<{ appName: string }>());
  return row?.appName;
}

/** The grant of a live granted flow, deleting the flow; undefined while pending, and when denied, expired or unknown. */
export async function collectLoginFlowGrant(
  db: Database,
  hash: string,
  at: number,
): Promise<{ loginName: string; sealed: string } | undefined> {
  const row = await call(() =>
    collectStatement.bind(db, { tokenHash: hash, now: at }).first<{ loginName: string; sealed: string }>(),
  );
  return row ?? undefined;
}

/**
 * Deletes every flow that expired before `at`, oldest first, LOGIN_FLOWS_PER_PURGE a statement until a statement
 * finds fewer (each its own short write, so no statement holds the database long); how many. The pending limit
 * bounds how many there can be (MAX_PENDING_LOGIN_FLOWS between two runs).
 */
export async function purgeExpiredLoginFlows(db: Database, at: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { meta } = await call(() => purgeStatement.bind(db, { now: at }).run());
    deleted += meta.changes;
    if (meta.changes < LOGIN_FLOWS_PER_PURGE) return deleted;
  }
}

/** Every statement this module runs, for the test that proves none scans a table. */
export const loginFlowStatements: Record<string, Statement> = {
  start: startStatement,
  findPending: findPendingStatement,
  grant: grantStatement,
  deny: denyStatement,
  collect: collectStatement,
  purge: purgeStatement,
};
