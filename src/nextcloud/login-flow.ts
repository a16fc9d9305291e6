import { bucketOfUsername, gpodderUsername } from "../auth/gpodder-username";
import { derivedKey, seal, unseal } from "../auth/sealed-secrets";
import { randomSecret, secretHash } from "../auth/secrets";
import { collectAppPassword } from "../db/app-passwords";
import { type Database, database } from "../db/database";
import {
  collectLoginFlowGrant,
  denyLoginFlow as denyStoredFlow,
  findPendingLoginFlow,
  grantLoginFlow as grantStoredFlow,
  startLoginFlow as storeNewFlow,
} from "../db/login-flows";
import { mintAppPassword, revokeAppPassword } from "../resources/app-password";
import { type ShardRouting, shardOfBucket, shardOfUser } from "../shards";
import { withoutForbiddenCharacters } from "../url-text";

/**
 * Nextcloud Login Flow v2 (docs/API.md §17): an app (AntennaPod) starts a flow and gets a poll token T and a
 * login link holding a login id F; the person opens the link, signs in and grants access; the app's next poll
 * receives a new app password, once. T and F hold 256 random bits each; only their SHA-256 is stored.
 *
 * The password must wait in D1 between the grant and the poll, and the row alone must never reveal it. So it
 * is sealed (auth/sealed-secrets.ts) under a key derived from T, which only the app holds. The grant, in the
 * browser, knows F but not T: when the flow starts (both known), that poll key is itself sealed under a key
 * derived from F and stored in the row; the grant opens it with F, seals the password with it, and replaces
 * it. Reading the password back needs F (to open the key before the grant) or T (after it), never D1 alone.
 *
 * The grant page (pages/login-flow-routes.tsx) calls `pendingLoginFlow`, `grantLoginFlow` and `denyLoginFlow`; the
 * routes of the app's side are in routes/nextcloud.ts. Each takes the shard routing: where flows live, and
 * where the granting user's app passwords do, is decided here.
 */

/** A flow lasts 20 minutes from its start. */
export const LOGIN_FLOW_LIFETIME_MS = 20 * 60_000;
/** The app's name (its User-Agent) keeps at most this many characters: it becomes an app password's label. */
export const MAX_APP_NAME_CHARACTERS = 100;
export const UNKNOWN_APP = "Unknown app";
/** Characters of the address a flow started from that are kept (an IPv6 address has at most 45). */
const MAX_ADDRESS_CHARACTERS = 64;
/** 256 random bits (the contract asks for at least 128), base64url without padding: 43 characters. */
const FLOW_SECRET_BYTES = 32;
const FLOW_SECRET = /^[A-Za-z0-9_-]{43}$/;
/** HKDF purposes: the key the password is sealed under (from T), the key that key is sealed under (from F). */
export const POLL_KEY = "podcast-sync login flow v2: app password key";
const LOGIN_KEY = "podcast-sync login flow v2: key of the app password key";

/**
 * The flows live in the database of bucket 0 (no user is known when a flow starts, and the poll finds it from
 * its token alone), at its primary (a poll right after the grant must see it).
 */
function loginFlowDatabase(routing: ShardRouting): Database {
  return database(shardOfBucket(routing, 0).database.withSession("first-primary"));
}

/**
 * The app's name from its User-Agent: §15's refused code points removed (bidi controls, C1 and format
 * characters: it is shown as text, and becomes a label), at most 100 characters, `Unknown app` when nothing is left.
 */
export function appNameOf(userAgent: string | undefined): string {
  const kept = withoutForbiddenCharacters((userAgent ?? "").toWellFormed()).trim();
  const name = [...kept].slice(0, MAX_APP_NAME_CHARACTERS).join("").trim();
  return name === "" ? UNKNOWN_APP : name;
}

/**
 * Starts a flow: the poll token for the app, and the login id for the browser's link; undefined (nothing
 * written) while MAX_PENDING_LOGIN_FLOWS flows are pending.
 */
export async function startLoginFlow(
  routing: ShardRouting,
  flow: { appName: string; startedFrom: string; now: number },
): Promise<{ token: string; loginId: string } | undefined> {
  const token = randomSecret(FLOW_SECRET_BYTES);
  const loginId = randomSecret(FLOW_SECRET_BYTES);
  const loginHash = await secretHash(loginId);
  const pollKey = await derivedKey(token, POLL_KEY);
  const stored = await storeNewFlow(loginFlowDatabase(routing), {
    tokenHash: await secretHash(token),
    loginHash,
    appName: flow.appName,
    startedAt: flow.now,
    startedFrom: flow.startedFrom.slice(0, MAX_ADDRESS_CHARACTERS),
    expiresAt: flow.now + LOGIN_FLOW_LIFETIME_MS,
    sealed: await seal(await derivedKey(loginId, LOGIN_KEY), pollKey, loginHash),
  });
  return stored ? { token, loginId } : undefined;
}

/** What the grant page says about a flow: the app, when (ms) and from which address it started, until when it lasts. */
export interface LoginFlowSummary {
  appName: string;
  startedAt: number;
  startedFrom: string;
  expiresAt: number;
}

/** The live flow of a login id that waits for its grant; undefined when it is expired, used, denied or unknown. */
export async function pendingLoginFlow(
  routing: ShardRouting,
  loginId: string,
  now: number,
): Promise<LoginFlowSummary | undefined> {
  if (!FLOW_SECRET.test(loginId)) return undefined;
  const flow = await findPendingLoginFlow(loginFlowDatabase(routing), await secretHash(loginId), now);
  return (
    flow && {
      appName: flow.appName,
      startedAt: flow.startedAt,
      startedFrom: flow.startedFrom,
      expiresAt: flow.expiresAt,
    }
  );
}

export type GrantResult =
  | { kind: "granted"; appPasswordId: string; appName: string }
  | { kind: "limit" }
  | { kind: "frozen" }
  | { kind: "gone" };

/**
 * `Grant access`: mints the user's app password (label: the app's name; one of the 50) in the user's database,
 * then seals it onto the flow in bucket 0's, in that order, so the app is never handed a password that does
 * not exist. The password is uncollected until the app's poll takes it, and expires with the flow otherwise.
 * When the flow is gone by then (expired, denied, or granted by a second submit), the new password is deleted
 * again; when the database fails between the two writes, it expires with the flow (the app, never answered,
 * starts a new flow). `gone`: nothing to grant; `limit`: the user has 50 app
 * passwords; `frozen`: the user's bucket is being moved (a password written now could be left behind), try
 * again shortly. Nothing is written in those three cases.
 */
export async function grantLoginFlow(
  routing: ShardRouting,
  userId: string,
  loginId: string,
  now: number,
): Promise<GrantResult> {
  if (!FLOW_SECRET.test(loginId)) return { kind: "gone" };
  const userShard = await shardOfUser(routing, userId);
  if (userShard.frozen) return { kind: "frozen" };
  const userDb = database(userShard.database.withSession("first-primary"));
  const flowDb = loginFlowDatabase(routing);
  const loginHash = await secretHash(loginId);
  const flow = await findPendingLoginFlow(flowDb, loginHash, now);
  const pollKey = flow && (await unseal(await derivedKey(loginId, LOGIN_KEY), flow.sealed, loginHash));
  if (!flow || !pollKey) return { kind: "gone" };
  // Uncollected until the app's poll takes it: should the flow expire first, the password goes with it.
  const minted = await mintAppPassword(userDb, userId, flow.appName, flow.expiresAt);
  if (minted.kind === "limit") return minted;
  const loginName = await gpodderUsername(userId);
  const sealed = await seal(pollKey, new TextEncoder().encode(minted.password), loginName);
  if (!(await grantStoredFlow(flowDb, loginHash, { loginName, sealed }, now))) {
    await revokeAppPassword(userDb, userId, minted.appPassword.id);
    return { kind: "gone" };
  }
  return { kind: "granted", appPasswordId: minted.appPassword.id, appName: flow.appName };
}

/**
 * `Deny`: the flow ends, and its polls answer as for an unknown one. The app's name it had (for the page that
 * says so); undefined when it was not pending (expired, used, denied already, unknown).
 */
export async function denyLoginFlow(routing: ShardRouting, loginId: string, now: number): Promise<string | undefined> {
  if (!FLOW_SECRET.test(loginId)) return undefined;
  return denyStoredFlow(loginFlowDatabase(routing), await secretHash(loginId), now);
}

/** A poll's token with its hash (what the poll limit counts by); undefined for text no flow could have. */
export async function pollToken(token: string | null): Promise<{ token: string; hash: string } | undefined> {
  if (token === null || !FLOW_SECRET.test(token)) return undefined;
  return { token, hash: await secretHash(token) };
}

/**
 * The credentials of a granted live flow, exactly once (the statement that reads them deletes the flow);
 * undefined while it waits, and once it is collected, denied, expired or unknown.
 *
 * Also undefined when the password no longer exists: revoked on the account page, or its user erased
 * (docs/API.md §15), between the grant and this poll. The erasure runs in the user's database and cannot reach
 * the flow in bucket 0's, so the poll asks the user's database instead: one write, made only by the one poll
 * that collects a grant, which also makes the password work (until then it works nowhere: docs/API.md §17, no
 * app password that nobody received). The app then polls `404 []` until it gives up, as for a denied flow.
 * Should that write fail (503), the flow is already collected and the password never handed out: it expires
 * uncollected with the flow, and the app, never answered, starts a new flow.
 */
export async function collectGrant(
  routing: ShardRouting,
  poll: { token: string; hash: string },
  now: number,
): Promise<{ loginName: string; appPassword: string } | undefined> {
  const grant = await collectLoginFlowGrant(loginFlowDatabase(routing), poll.hash, now);
  if (!grant) return undefined;
  const sealed = await unseal(await derivedKey(poll.token, POLL_KEY), grant.sealed, grant.loginName);
  const bucket = bucketOfUsername(grant.loginName);
  if (!sealed || bucket === undefined) return undefined;
  const appPassword = new TextDecoder().decode(sealed);
  const userDb = database(shardOfBucket(routing, bucket).database.withSession("first-primary"));
  const collected = await collectAppPassword(
    userDb,
    { username: grant.loginName, passwordHash: await secretHash(appPassword) },
    now,
  );
  return collected ? { loginName: grant.loginName, appPassword } : undefined;
}
