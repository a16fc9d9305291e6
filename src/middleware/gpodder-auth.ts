import type { Context, MiddlewareHandler } from "hono";
import { bucketOfUsername, gpodderUsername } from "../auth/gpodder-username";
import { constantTimeEqual, derivedSecrets, randomSecret, secretHash } from "../auth/secrets";
import { type VerifiedCredential, verifiedCredentials } from "../auth/verified-credentials";
import { CredentialEndedError, findSession, SESSION_IDLE_MS, signIn } from "../db/app-passwords";
import { database } from "../db/database";
import type { AppEnv, GpodderCaller } from "../env";
import { ApiError } from "../jsonapi";
import { type ShardRouting, shardOfBucket, shardRouting } from "../shards";
import { knownFailure, recordFailure } from "./auth-failures";

/**
 * Authentication of the gpodder paths (docs/API.md §14): HTTP Basic with the user's gpodder username and
 * one of their app passwords, on any request, or the `sessionid` cookie that every Basic-authenticated
 * response sets. Clients built on Python's urllib (gPodder) send Basic only after a 401 whose challenge
 * names a realm, and only three times per client object: the cookie carries them from then on.
 * Bearer tokens never authenticate here, and app passwords never authenticate /v1.
 */

export const SESSION_COOKIE = "sessionid";
/** 30 days, as the contract fixes. */
const SESSION_MAX_AGE_SECONDS = 2_592_000;
/** 256 random bits; the cookie names its user's username first, so the worker can pick the database. */
const SESSION_SECRET_BYTES = 32;
/**
 * A client's session ids are derived (`sessionCookies`) for this long: then the next period's are, so a client
 * that signs in with Basic on every request gets a new session once a period, and the old one ages out.
 */
const SESSION_PERIOD_MS = SESSION_IDLE_MS;
/** Derived session ids per client and period: each logout of the client moves it to the next one. */
const SESSION_GENERATIONS = 4;
/** What of the User-Agent names a client (sessions are per app password and client). */
const CLIENT_TAG_CHARACTERS = 256;

export function gpodderUnauthorized(detail: string): ApiError {
  return new ApiError({
    status: 401,
    title: "Unauthorized",
    detail,
    headers: { "WWW-Authenticate": 'Basic realm="gpodder"' },
  });
}

/**
 * Wrong credentials count against the client's address (auth-failures.ts, shared with /v1) and are answered
 * 401 with this realm's challenge. They fail the same way next time (a wrong password stays wrong, an ended
 * session stays ended), so an address over the limit may have them answered from the cache.
 */
async function rejected(c: Context<AppEnv>, credentials: string, detail: string): Promise<ApiError> {
  await recordFailure(c, credentials, { detail, lasting: true });
  return gpodderUnauthorized(detail);
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** `Authorization: Basic base64(username:password)`; undefined for anything else (Bearer included). */
function basicCredentials(header: string): { username: string; password: string } | undefined {
  const encoded = header.match(/^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i)?.[1];
  if (encoded === undefined) return undefined;
  let text: string;
  try {
    text = decoder.decode(Uint8Array.from(atob(encoded), (ch) => ch.charCodeAt(0)));
  } catch {
    return undefined;
  }
  const colon = text.indexOf(":");
  if (colon < 0) return undefined;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function sessionCookieOf(c: Context<AppEnv>): string | undefined {
  const header = c.req.header("Cookie");
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The primary of the database holding the username's bucket, and whether that bucket is frozen for a move
 * (then signing in writes nothing); undefined for a name this service never issued.
 */
function databaseOfUsername(routing: ShardRouting, username: string) {
  const bucket = bucketOfUsername(username);
  if (bucket === undefined) return undefined;
  const shard = shardOfBucket(routing, bucket);
  return { db: database(shard.database.withSession("first-primary")), frozen: shard.frozen };
}

/**
 * The caller of a request: `basic` when it signed in with an app password (the cookie is set on the answer),
 * else with the session cookie (set again only when `renew`: at most once a day).
 */
function toCaller(entry: VerifiedCredential, basic: boolean, renew = false): GpodderCaller & { userId: string } {
  const { userId, appPasswordId, sessionHash } = entry;
  return {
    userId,
    username: entry.username,
    appPasswordId,
    sessionHash,
    credential: basic ? { userId, appPasswordId } : { userId, sessionHash },
    ...((basic || renew) && entry.sessionCookie !== undefined ? { issuedSession: entry.sessionCookie } : {}),
  };
}

/**
 * The session ids a Basic sign-in may hand a client, in order (docs/API.md §14; docs/decisions.md, "gpodder sessions"):
 * derived from the app password (HMAC, keyed by the password, which is never stored: a database reader cannot
 * derive them) and the client (its User-Agent), the 30-day period and a generation, then one random id. The
 * same client gets the same session from any isolate, so repeated Basic requests write no row; the sign-in opens
 * the first that no ended session holds, so a logout moves the client to the next generation and a logged-out
 * cookie is never handed out again (its row is kept, ended, 30 days, which outlasts its period). After four
 * logouts in a period, the random id (a session per sign-in, bounded by the 10 per app password).
 */
async function sessionCookies(
  credentials: { username: string; password: string },
  client: string,
  now: number,
): Promise<string[]> {
  const period = Math.floor(now / SESSION_PERIOD_MS);
  const messages = Array.from(
    { length: SESSION_GENERATIONS },
    (_, generation) => `gpodder session\n${period}\n${generation}\n${client}`,
  );
  const secrets = [...(await derivedSecrets(credentials.password, messages)), randomSecret(SESSION_SECRET_BYTES)];
  return secrets.map((secret) => `${credentials.username}.${secret}`);
}

/**
 * Basic: the username's candidates are read and, in the same round trip, the client's session is opened or
 * reused for the one whose hash matches; the hashes are then compared here in constant time. Verified credentials
 * are cached (auth/verified-credentials.ts) with the cookie they were handed, which is handed out again.
 */
async function verifyBasic(
  routing: ShardRouting,
  credentials: { username: string; password: string },
  client: string,
  now: number,
): Promise<VerifiedCredential | undefined> {
  const passwordHash = await secretHash(credentials.password);
  const key = `basic:${credentials.username}:${passwordHash}`;
  const cached = verifiedCredentials.get(key, now);
  if (cached) return cached;
  const shard = databaseOfUsername(routing, credentials.username);
  if (!shard) return undefined;
  const cookies = await sessionCookies(credentials, client, now);
  const sessionHashes = await Promise.all(cookies.map(secretHash));
  const signInValues = { username: credentials.username, passwordHash, sessionHashes, now };
  const { candidates, chosen } = await signIn(shard.db, signInValues, !shard.frozen);
  let match: (typeof candidates)[number] | undefined;
  for (const candidate of candidates) {
    if (constantTimeEqual(candidate.passwordHash, passwordHash)) match = candidate;
  }
  if (!match) return undefined;
  const owner = { userId: match.userId, appPasswordId: match.appPasswordId, username: credentials.username };
  // Frozen: no session was opened, so no cookie is handed out and nothing is cached (the client signs in
  // with Basic again, and once the move is over a session opens as usual).
  if (shard.frozen || chosen === undefined) return { ...owner, sessionHash: sessionHashes[0], expiresAt: now };
  const entry = { ...owner, sessionHash: sessionHashes[chosen], sessionCookie: cookies[chosen] };
  verifiedCredentials.set(key, entry, now);
  return { ...entry, expiresAt: now };
}

/** The cookie's session, `renew` when its use was recorded (at most once a day: the cookie is set again). */
async function verifySession(
  routing: ShardRouting,
  cookie: string,
  now: number,
): Promise<(VerifiedCredential & { renew?: boolean }) | undefined> {
  const sessionHash = await secretHash(cookie);
  const key = `session:${sessionHash}`;
  const cached = verifiedCredentials.get(key, now);
  if (cached) return cached;
  const username = cookie.slice(0, Math.max(0, cookie.indexOf(".")));
  const shard = databaseOfUsername(routing, username);
  if (!shard) return undefined;
  const found = await findSession(shard.db, sessionHash, now, !shard.frozen);
  if (!found || (await gpodderUsername(found.userId)) !== username) return undefined;
  const { renew, ...owner } = found;
  const entry = { ...owner, username, sessionHash, sessionCookie: cookie };
  verifiedCredentials.set(key, entry, now);
  return { ...entry, expiresAt: now, renew };
}

/** `Set-Cookie` for the session id (or, with `maxAge` 0, clearing it). `Secure` over https. */
export function sessionCookieHeader(c: Context<AppEnv>, value: string, maxAge = SESSION_MAX_AGE_SECONDS): string {
  const secure = new URL(c.req.url).protocol === "https:" ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`;
}

/**
 * Sets `userId` and `gpodder`, or answers 401 with the Basic challenge. Wrong credentials count toward the
 * address's failure limit; a request with none at all does not (urllib clients send one per client object,
 * and many listeners share a carrier's address).
 */
export const gpodderAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const routing = shardRouting(c.env);
  c.set("shards", routing);
  const now = Date.now();
  const authorization = c.req.header("Authorization");
  let caller: (GpodderCaller & { userId: string }) | undefined;
  const cookie = authorization === undefined ? sessionCookieOf(c) : undefined;
  const presented = authorization ?? (cookie === undefined ? undefined : `${SESSION_COOKIE}=${cookie}`);
  if (presented === undefined) throw gpodderUnauthorized("Sign in with your gpodder username and an app password.");
  const known = knownFailure(c, presented);
  if (known !== undefined) throw gpodderUnauthorized(known);
  if (authorization !== undefined) {
    const credentials = basicCredentials(authorization);
    const client = (c.req.header("User-Agent") ?? "").slice(0, CLIENT_TAG_CHARACTERS);
    const verified = credentials && (await verifyBasic(routing, credentials, client, now));
    if (!verified) throw await rejected(c, presented, "The username or app password is wrong.");
    caller = toCaller(verified, true);
  } else {
    const verified = await verifySession(routing, cookie as string, now);
    if (!verified) throw await rejected(c, presented, "The session has ended; sign in again.");
    caller = toCaller(verified, false, verified.renew);
  }
  const { userId, ...gpodder } = caller;
  c.set("userId", userId);
  c.set("gpodder", gpodder);
  await next();
  if (c.error instanceof CredentialEndedError) {
    // A write found the credential gone (erased or revoked since this isolate verified it): answered 401 by
    // errors.ts, and forgotten here so the next request verifies it again.
    const { appPasswordId, sessionHash } = c.error.credential;
    verifiedCredentials.forget((entry) =>
      sessionHash === undefined
        ? entry.userId === userId && entry.appPasswordId === appPasswordId
        : entry.sessionHash === sessionHash,
    );
    return;
  }
  if (gpodder.issuedSession !== undefined && !c.res.headers.has("Set-Cookie")) {
    c.res.headers.append("Set-Cookie", sessionCookieHeader(c, gpodder.issuedSession));
  }
};

/** A `{username}` in the path that is not the authenticated user's: 400 (the credentials select the user). */
export function checkPathUsername(c: Context<AppEnv>, username: string): void {
  if (username !== c.get("gpodder").username) {
    throw new ApiError({
      status: 400,
      title: "Wrong username",
      detail: "The username in the path is not the signed-in user's.",
    });
  }
}
