import type { Context, MiddlewareHandler } from "hono";
import { InlineKeySource, KEY_SET_FETCH_TIMEOUT_MS, KeySet, KeySetUnavailable, RemoteKeySource } from "../auth/key-set";
import { InvalidToken, importHmacKey, TokenVerifier } from "../auth/token-verifier";
import { type AppBindings, type AppEnv, configured } from "../env";
import { ApiError } from "../jsonapi";
import { knownFailure, recordFailure } from "./auth-failures";

const REALM = "subscriptions";

function unauthorized(c: Context<AppEnv>, detail: string): ApiError {
  const tokenPresented = c.req.header("Authorization") !== undefined;
  return new ApiError({
    status: 401,
    title: "Unauthorized",
    detail,
    headers: {
      "WWW-Authenticate": tokenPresented ? `Bearer realm="${REALM}", error="invalid_token"` : `Bearer realm="${REALM}"`,
    },
  });
}

function misconfigured(detail: string): ApiError {
  return new ApiError({ status: 500, title: "Authentication is not configured", detail });
}

/** docs/API.md §12: the identity provider's keys are out of reach. The token may well be fine: never a 401. */
function authenticationUnavailable(err: KeySetUnavailable, c: Context<AppEnv>): ApiError {
  console.error(
    JSON.stringify({ level: "error", requestId: c.get("requestId"), event: "jwks_unavailable", error: err.message }),
  );
  return new ApiError({
    status: 503,
    title: "Authentication unavailable",
    detail: "The token signing keys could not be loaded; retry later.",
    headers: { "Retry-After": String(err.retryAfterSeconds) },
  });
}

/** `AUTH_JWKS_TIMEOUT_MS`: how long a key set fetch may take (default and maximum 5 s; tests shorten it). */
function jwksTimeoutMs(env: AppBindings): number {
  const value = Number(configured(env.AUTH_JWKS_TIMEOUT_MS));
  return Number.isInteger(value) && value > 0 ? Math.min(value, KEY_SET_FETCH_TIMEOUT_MS) : KEY_SET_FETCH_TIMEOUT_MS;
}

function inlineKeySet(raw: string): KeySet {
  let document: unknown;
  try {
    document = JSON.parse(raw);
  } catch {
    // reported below
  }
  const keys = KeySet.parse(document);
  if (!keys) throw misconfigured('AUTH_JWKS is not a JSON Web Key Set ({"keys": [...]}).');
  return keys;
}

/**
 * One verifier per configuration and isolate, so keys are imported, the key set fetched and tokens
 * verified once per isolate. A deployment has one configuration; tests vary it per request.
 */
const verifiers = new Map<string, TokenVerifier>();
const MAX_CONFIGURATIONS = 16;

async function verifierFor(env: AppBindings): Promise<TokenVerifier> {
  const secret = configured(env.AUTH_JWT_SECRET);
  const jwksUrl = configured(env.AUTH_JWKS_URL);
  const inline = configured(env.AUTH_JWKS);
  const iss = configured(env.AUTH_ISSUER);
  const aud = configured(env.AUTH_AUDIENCE);
  const timeoutMs = jwksTimeoutMs(env);
  if (!secret && !jwksUrl && !inline) {
    throw misconfigured("No token verification is configured: set AUTH_JWT_SECRET, AUTH_JWKS_URL or AUTH_JWKS.");
  }
  if (jwksUrl && inline) throw misconfigured("Set AUTH_JWKS_URL or AUTH_JWKS, not both.");
  const configuration = JSON.stringify([secret, jwksUrl, inline, iss, aud, timeoutMs]);
  const known = verifiers.get(configuration);
  if (known) return known;

  const keys = jwksUrl
    ? new RemoteKeySource(jwksUrl, timeoutMs)
    : inline
      ? new InlineKeySource(inlineKeySet(inline))
      : undefined;
  const verifier = new TokenVerifier(
    { secret: secret ? await importHmacKey(secret) : undefined, keys },
    { ...(iss ? { iss } : {}), ...(aud ? { aud } : {}) },
  );
  if (verifiers.size >= MAX_CONFIGURATIONS) verifiers.delete(verifiers.keys().next().value as string);
  verifiers.set(configuration, verifier);
  return verifier;
}

/** `Authorization: Bearer <token>`; undefined for any other shape. */
function bearerToken(c: Context<AppEnv>): string | undefined {
  return c.req.header("Authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
}

/**
 * Bearer-token authentication (docs/API.md §1, §15): sets `userId` from the token's `sub`, or answers 401,
 * never 429 (a client must learn that its token needs refreshing). Each failure counts against the client's
 * address (auth-failures.ts); once the address is over the limit, a token that already failed is answered
 * from the cache without verifying it again. A request without credentials is no guess and is not counted.
 * When the identity provider's keys cannot be loaded the answer is 503, which is not a failed
 * authentication and never counts against the address.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const verifier = await verifierFor(c.env);
  const authorization = c.req.header("Authorization");
  if (authorization === undefined) throw unauthorized(c, "A bearer token is required.");
  const known = knownFailure(c, authorization);
  if (known !== undefined) throw unauthorized(c, known);
  try {
    const token = bearerToken(c);
    if (!token) throw new InvalidToken();
    c.set("userId", await verifier.userId(token));
  } catch (err) {
    if (err instanceof InvalidToken) {
      await recordFailure(c, authorization, { detail: err.message, lasting: err.lasting });
      throw unauthorized(c, err.message);
    }
    if (err instanceof KeySetUnavailable) throw authenticationUnavailable(err, c);
    throw err;
  }
  await next();
};
