import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { bucketOfUsername, gpodderUsername } from "../auth/gpodder-username";
import { randomSecret, secretHash } from "../auth/secrets";
import { endAccountSession, findAccountSession, startAccountSession } from "../db/account-sessions";
import { type Database, database } from "../db/database";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";
import { shardOfBucket, shardOfUser, shardRouting } from "../shards";
import { antiForgeryTokenOf } from "./anti-forgery";
import { frozenForMove } from "./d1-session";

/**
 * Account page sessions (docs/API.md §16). The cookie is `<gpodder username>.<256 random bits>`: the username
 * fixes the user's bucket, so the worker opens the user's database from the cookie alone, as it does for the
 * gpodder `sessionid` (middleware/gpodder-auth.ts); only the SHA-256 of the whole value is stored. HttpOnly,
 * SameSite=Lax, Path=/, and over https Secure with the `__Host-` prefix (no subdomain can plant one). A session
 * never authenticates /v1 or the gpodder paths (they read other credentials), and their credentials never open
 * a page (nothing here reads an Authorization header).
 */

const SESSION_COOKIE = "account";
/** 256 random bits. */
const SESSION_SECRET_BYTES = 32;
/** The cookie lives as long as the session: 7 days. */
const SESSION_MAX_AGE_SECONDS = 7 * 24 * 60 * 60;

/** The signed-in person of a page request. */
export interface SignedInAccount {
  userId: string;
  /** Who the page says is signed in (the ID token's name, preferred_username, email or sub). */
  name: string;
  /** SHA-256 of the cookie: what sign-out deletes. */
  sessionHash: string;
  /** The form field every account-changing POST must carry (middleware/anti-forgery.ts). */
  antiForgeryToken: string;
  /** The primary of the user's database (pages read what they just wrote). */
  db: Database;
  /** The user's bucket is being moved: reads work, changes answer 503. */
  frozen: boolean;
}

/** Over https the cookies take the `__Host-` prefix (which requires Secure and Path=/); plain http is local use. */
export function isSecure(c: Context<AppEnv>): boolean {
  return new URL(c.req.url).protocol === "https:";
}

/** A cookie of the account pages, as §16 fixes their attributes. */
export function setPageCookie(c: Context<AppEnv>, name: string, value: string, maxAge: number): void {
  setCookie(c, name, value, {
    path: "/",
    httpOnly: true,
    sameSite: "Lax",
    maxAge,
    ...(isSecure(c) ? { secure: true, prefix: "host" as const } : {}),
  });
}

export function clearPageCookie(c: Context<AppEnv>, name: string): void {
  deleteCookie(c, name, { path: "/", ...(isSecure(c) ? { secure: true, prefix: "host" as const } : {}) });
}

/** The value of one of the pages' cookies (over https only the `__Host-` one: a plain one may be planted). */
export function pageCookie(c: Context<AppEnv>, name: string): string | undefined {
  return getCookie(c, name, isSecure(c) ? "host" : undefined);
}

/** The database a session cookie's username names (its bucket's), or undefined for a name never issued. */
function sessionShard(c: Context<AppEnv>, cookie: string | undefined) {
  const username = cookie?.slice(0, Math.max(0, cookie.indexOf(".")));
  const bucket = username ? bucketOfUsername(username) : undefined;
  if (cookie === undefined || username === undefined || bucket === undefined) return undefined;
  const routing = shardRouting(c.env);
  return { routing, username, shard: shardOfBucket(routing, bucket) };
}

/**
 * Starts a session for a person who just signed in: a new random cookie (never one presented before), its hash
 * stored in the user's database. The session the browser came with, whoever's it was, ends first on the server
 * (docs/API.md §16): it is replaced, and a copy of its cookie must not outlive it. Refused (503) while the
 * user's bucket, or the replaced session's, is being moved: a row written or deleted now could be left behind
 * (or survive) in the old database.
 */
export async function signIn(c: Context<AppEnv>, person: { userId: string; name: string }): Promise<void> {
  const shard = await shardOfUser(shardRouting(c.env), person.userId);
  if (shard.frozen) throw frozenForMove(shard);
  const presented = pageCookie(c, SESSION_COOKIE);
  const replaced = sessionShard(c, presented);
  if (replaced) {
    if (replaced.shard.frozen) throw frozenForMove(replaced.shard);
    const db = database(replaced.shard.database.withSession("first-primary"));
    await endAccountSession(db, await secretHash(presented as string));
  }
  const cookie = `${await gpodderUsername(person.userId)}.${randomSecret(SESSION_SECRET_BYTES)}`;
  await startAccountSession(database(shard.database.withSession("first-primary")), {
    sessionHash: await secretHash(cookie),
    userId: person.userId,
    name: person.name,
    now: Date.now(),
  });
  setPageCookie(c, SESSION_COOKIE, cookie, SESSION_MAX_AGE_SECONDS);
}

/** Clears the session cookie (sign-out, erasure: the row is already gone). */
export function clearSessionCookie(c: Context<AppEnv>): void {
  clearPageCookie(c, SESSION_COOKIE);
}

/**
 * Sets `account` (and `userId`, for the access log's user hash) when the request carries the cookie of a live
 * session: one D1 round trip, to the primary of the database its username names. Anything else (no cookie, a
 * name this service never issued, an ended or unknown session) leaves the visitor signed out.
 */
export const accountSession: MiddlewareHandler<AppEnv> = async (c, next) => {
  const cookie = pageCookie(c, SESSION_COOKIE);
  const named = sessionShard(c, cookie);
  if (cookie !== undefined && named) {
    const { routing, username, shard } = named;
    c.set("shards", routing);
    const db = database(shard.database.withSession("first-primary"));
    const sessionHash = await secretHash(cookie);
    const session = await findAccountSession(db, sessionHash, Date.now());
    if (session && (await gpodderUsername(session.userId)) === username) {
      c.set("userId", session.userId);
      c.set("db", db);
      c.set("account", {
        userId: session.userId,
        name: session.name,
        sessionHash,
        antiForgeryToken: await antiForgeryTokenOf(cookie),
        db,
        frozen: shard.frozen,
      });
    }
  }
  await next();
};

/** The path and query of this request, for `return_to`. */
export function requestTarget(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return `${url.pathname}${url.search}`;
}

/** Where to send a signed-out visitor so that they come back to `target` once signed in. */
export function signInPath(target: string): string {
  return `/account/signin?return_to=${encodeURIComponent(target)}`;
}

/**
 * Pages for signed-in people only: a signed-out visitor's GET is sent to sign in (and back here afterwards); any
 * other method is refused (403), since nothing a signed-out request asks may change an account.
 */
export const requireSignIn: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.get("account")) return next();
  if (c.req.method === "GET" || c.req.method === "HEAD") return c.redirect(signInPath(requestTarget(c)));
  throw new ApiError({
    status: 403,
    title: "Signed out",
    detail: "You are not signed in (or your session has ended), so nothing was changed. Sign in and try again.",
    meta: { offerSignIn: true },
  });
};

/** The signed-in account of a page that requireSignIn guards. */
export function signedIn(c: Context<AppEnv>): SignedInAccount {
  return c.get("account") as SignedInAccount;
}

/** Refuses a change (503) while the user's bucket is being moved: a write now could be left behind. */
export function assertWritable(account: SignedInAccount): void {
  if (account.frozen) throw frozenForMove();
}
