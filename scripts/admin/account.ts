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

/** Reads the account in one D1 call (app passwords as the API lists them now: none that expired uncollected). */
export async function readAccount(db: D1Database, user: string): Promise<Account> {
  const values = { userId: user, now: Date.now() };
  const [statsRows, appPasswords, gpodderSessions, accountSessions, devices] = await db.batch([
    statsStatement.bind(db, values),
    appPasswordStatements.list.bind(db, values),
    gpodderSessionsStatement.bind(db, values),
    accountSessionsStatement.bind(db, values),
    deviceStatements.list.bind(db, values),
  ]);
  return {
    stats: statsRows.results[0] as AccountStats | undefined,
    appPasswords: appPasswords.results as StoredAppPassword[],
    gpodderSessions: gpodderSessions.results as GpodderSession[],
    accountSessions: accountSessions.results as AccountSession[],
    devices: devices.results as StoredDevice[],
  };
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
