import type { Context, MiddlewareHandler } from "hono";
import { beginSignIn, completeSignIn, oidcSettings, type SignInAttempt, SignInFailed } from "../auth/oidc";
import { MAX_USER_ID_LENGTH } from "../auth/token-verifier";
import type { AppEnv } from "../env";
import { ApiError, absoluteUrl } from "../jsonapi";
import { clearPageCookie, pageCookie, setPageCookie, signIn } from "../middleware/account-session";
import { knownFailure, recordFailure } from "../middleware/auth-failures";
import { PAGE_PREFIX } from "./paths";

/**
 * Signing in (docs/API.md §16): `GET /account/signin` sends the browser to the identity provider with a new
 * attempt, kept in a short-lived HttpOnly cookie (state, nonce, PKCE verifier, where to go afterwards, when it
 * started: nothing that helps anyone but this browser, so no database row); `GET /account/callback` completes it.
 */

const ATTEMPT_COOKIE = "account-signin";
/** A sign-in attempt expires after 10 minutes. */
export const ATTEMPT_TTL_MS = 10 * 60 * 1000;
const DEFAULT_RETURN = PAGE_PREFIX;
const MAX_RETURN_LENGTH = 1000;
const BASE = "https://service.invalid";

interface StoredAttempt extends SignInAttempt {
  returnTo: string;
  startedAt: number;
}

/** The redirect URI: `<base>/account/callback`. */
function redirectUri(c: Context<AppEnv>): string {
  return absoluteUrl(c, `${PAGE_PREFIX}/callback`);
}

/**
 * Where to go after signing in: only ever a path of this service (no scheme, no `//host`, no backslash, no
 * control character), and never the sign-in itself; anything else is the account page.
 */
export function safeReturnTo(value: string | undefined): string {
  if (value === undefined || value.length > MAX_RETURN_LENGTH) return DEFAULT_RETURN;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here.
  if (!value.startsWith("/") || value.startsWith("//") || /[\\\u0000-\u001f\u007f]/.test(value)) return DEFAULT_RETURN;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return DEFAULT_RETURN;
  }
  if (url.origin !== BASE || url.pathname.startsWith(`${PAGE_PREFIX}/signin`)) return DEFAULT_RETURN;
  if (url.pathname.startsWith(`${PAGE_PREFIX}/callback`)) return DEFAULT_RETURN;
  return `${url.pathname}${url.search}`;
}

function encodeAttempt(attempt: StoredAttempt): string {
  const json = JSON.stringify([
    attempt.state,
    attempt.nonce,
    attempt.codeVerifier,
    attempt.returnTo,
    attempt.startedAt,
  ]);
  return btoa(String.fromCharCode(...new TextEncoder().encode(json)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function decodeAttempt(value: string | undefined): StoredAttempt | undefined {
  if (value === undefined) return undefined;
  try {
    const binary = atob(value.replaceAll("-", "+").replaceAll("_", "/"));
    const [state, nonce, codeVerifier, returnTo, startedAt] = JSON.parse(
      new TextDecoder().decode(Uint8Array.from(binary, (ch) => ch.charCodeAt(0))),
    ) as unknown[];
    if ([state, nonce, codeVerifier, returnTo].some((part) => typeof part !== "string")) return undefined;
    if (typeof startedAt !== "number") return undefined;
    return {
      state: state as string,
      nonce: nonce as string,
      codeVerifier: codeVerifier as string,
      returnTo: safeReturnTo(returnTo as string),
      startedAt,
    };
  } catch {
    return undefined;
  }
}

/** Every account page first: no OIDC_ISSUER is 503, a wrong configuration 500 (no database is touched first). */
export const signInConfigured: MiddlewareHandler<AppEnv> = async (c, next) => {
  oidcSettings(c.env);
  await next();
};

/** `GET /account/signin?return_to=<path>`: to the identity provider, with a new attempt. */
export async function startSignIn(c: Context<AppEnv>): Promise<Response> {
  const settings = oidcSettings(c.env);
  const { location, attempt } = await beginSignIn(settings, redirectUri(c));
  const stored = { ...attempt, returnTo: safeReturnTo(c.req.query("return_to")), startedAt: Date.now() };
  setPageCookie(c, ATTEMPT_COOKIE, encodeAttempt(stored), ATTEMPT_TTL_MS / 1000);
  return c.redirect(location.href);
}

function signInFailed(detail: string): ApiError {
  return new ApiError({
    status: 400,
    title: "Sign-in failed",
    detail: `${detail} Nothing was created; sign in again.`,
    meta: { offerSignIn: true },
  });
}

/** The person the ID token names, checked as a bearer token's `sub` is (docs/API.md §1). */
function checkedUser(sub: string): string {
  if (sub.length === 0 || sub.length > MAX_USER_ID_LENGTH || !sub.isWellFormed()) {
    throw new SignInFailed(`The identity provider's user id (sub) is not 1 to ${MAX_USER_ID_LENGTH} characters.`);
  }
  return sub;
}

/**
 * `GET /account/callback`: checks the issuer's answer against this browser's attempt, starts a session, and goes
 * where the attempt said. A failure is 400 and counts toward the address's failure limit (auth-failures.ts), so
 * once the address is over it the same failing callback is answered from the cache without asking the issuer
 * again; a person signing in is never answered 429.
 */
export async function finishSignIn(c: Context<AppEnv>): Promise<Response> {
  const settings = oidcSettings(c.env);
  const callback = new URL(c.req.url);
  const failureKey = `account-callback:${callback.search}`;
  const known = knownFailure(c, failureKey);
  if (known !== undefined) throw signInFailed(known);
  const attempt = decodeAttempt(pageCookie(c, ATTEMPT_COOKIE));
  let person: { userId: string; name: string };
  try {
    if (!attempt) {
      throw new SignInFailed(
        "This browser has no sign-in in progress (it was started elsewhere, or over 10 minutes ago).",
      );
    }
    if (Date.now() - attempt.startedAt > ATTEMPT_TTL_MS || attempt.startedAt > Date.now()) {
      throw new SignInFailed("This sign-in took longer than 10 minutes.");
    }
    const signedIn = await completeSignIn(settings, redirectUri(c), callback, attempt);
    person = { userId: checkedUser(signedIn.sub), name: signedIn.name };
  } catch (err) {
    if (!(err instanceof SignInFailed)) throw err;
    await recordFailure(c, failureKey, { detail: err.message, lasting: true });
    throw signInFailed(err.message);
  }
  await signIn(c, person);
  clearPageCookie(c, ATTEMPT_COOKIE);
  return c.redirect((attempt as StoredAttempt).returnTo, 303);
}
