// What `npm run admin -- user <sub>` reads of one account, in one batch on the user's database: the stats row
// (counts, URL bytes, change numbers), the app passwords and devices through the worker's own statements, and
// the sessions (gpodder and account pages).
import { sql } from "drizzle-orm";
import { appPasswordStatements, type StoredAppPassword } from "../../src/db/app-passwords";
import { deviceStatements, type StoredDevice } from "../../src/db/devices";
import { accountSessions as a, gpodderSessions as g, userStats as stats } from "../../src/db/schema";
import { statement } from "../../src/db/statements";

const userId = sql.placeholder("userId");

const statsStatement = statement(sql`
  SELECT ${stats.activeCount} AS activeSubscriptions, ${stats.storedCount} AS storedSubscriptions,
    ${stats.episodeCount} AS episodes, ${stats.urlBytes} AS urlBytes, ${stats.version} AS subscriptionVersion,
    ${stats.subscriptionHorizon} AS subscriptionHorizon, ${stats.episodeVersion} AS episodeVersion,
    ${stats.episodeHorizon} AS episodeHorizon
  FROM ${stats} WHERE ${stats.userId} = ${userId}`);

const gpodderSessionsStatement = statement(sql`
  SELECT ${g.appPasswordId} AS appPasswordId, ${g.createdAt} AS createdAt, ${g.lastUsedAt} AS lastUsedAt
  FROM ${g} WHERE ${g.userId} = ${userId} ORDER BY ${g.appPasswordId}, ${g.lastUsedAt} DESC`);

const accountSessionsStatement = statement(sql`
  SELECT ${a.name} AS name, ${a.createdAt} AS createdAt, ${a.expiresAt} AS expiresAt
  FROM ${a} WHERE ${a.userId} = ${userId} ORDER BY ${a.createdAt}`);

export interface AccountStats {
  activeSubscriptions: number;
  /** Active and tombstones: what the subscription quota counts. */
  storedSubscriptions: number;
  /** Live and forgotten states: what the episode quota counts. */
  episodes: number;
  urlBytes: number;
  subscriptionVersion: number;
  subscriptionHorizon: number;
  episodeVersion: number;
  episodeHorizon: number;
}

export interface GpodderSession {
  appPasswordId: string;
  createdAt: number;
  lastUsedAt: number;
}

export interface AccountSession {
  name: string;
  createdAt: number;
  expiresAt: number;
}

/** One account as stored. `stats` is undefined for a user who never stored anything (no stats row). */
export interface Account {
  stats: AccountStats | undefined;
  appPasswords: StoredAppPassword[];
  gpodderSessions: GpodderSession[];
  accountSessions: AccountSession[];
  devices: StoredDevice[];
}

/** The statements that read the account (app passwords as the API lists them now: none that expired uncollected). */
function accountStatements(db: D1Database, user: string): D1PreparedStatement[] {
  const values = { userId: user, now: Date.now() };
  return [
    statsStatement.bind(db, values),
    appPasswordStatements.list.bind(db, values),
    gpodderSessionsStatement.bind(db, values),
    accountSessionsStatement.bind(db, values),
    deviceStatements.list.bind(db, values),
  ];
}

function accountOf([statsRows, appPasswords, gpodderSessions, accountSessions, devices]: D1Result[]): Account {
  return {
    stats: statsRows.results[0] as AccountStats | undefined,
    appPasswords: appPasswords.results as StoredAppPassword[],
    gpodderSessions: gpodderSessions.results as GpodderSession[],
    accountSessions: accountSessions.results as AccountSession[],
    devices: devices.results as StoredDevice[],
  };
}

/** Reads the account in one D1 call. */
export async function readAccount(db: D1Database, user: string): Promise<Account> {
  return accountOf(await db.batch(accountStatements(db, user)));
}

/**
 * Runs `write`, a db function of the worker that makes one batch (eraseAccount, revokeAllCredentials), with the
 * account's reads appended to that batch, and answers the account as the write left it: the write and its check
 * in one D1 call (one transaction locally, in order remotely), where a write and then a read would cost two
 * `wrangler d1 execute` processes of about 2 s of CPU each.
 */
export async function writeThenReadAccount(
  db: D1Database,
  user: string,
  write: (db: D1Database) => Promise<unknown>,
): Promise<Account> {
  let readBack: D1Result[] | undefined;
  const appending = {
    prepare: (query: string) => db.prepare(query),
    batch: async (statements: D1PreparedStatement[]) => {
      if (readBack) throw new Error("the write ran a second batch: its reads went with the first");
      const results = await db.batch([...statements, ...accountStatements(db, user)]);
      readBack = results.slice(statements.length);
      return results.slice(0, statements.length);
    },
  };
  await write(appending as unknown as D1Database);
  if (!readBack) throw new Error("the write ran no batch: nothing was read back");
  return accountOf(readBack);
}

/** Whether anything of the account is stored besides its bare counters. */
export function holdsContent(account: Account): boolean {
  return (
    (account.stats?.storedSubscriptions ?? 0) > 0 ||
    (account.stats?.episodes ?? 0) > 0 ||
    account.appPasswords.length > 0 ||
    account.gpodderSessions.length > 0 ||
    account.accountSessions.length > 0 ||
    account.devices.length > 0
  );
}

/** Whether the user can sign in to anything of this service besides the identity provider. */
export function holdsCredentials(account: Account): boolean {
  return account.appPasswords.length > 0 || account.gpodderSessions.length > 0 || account.accountSessions.length > 0;
}
