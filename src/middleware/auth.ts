import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { jwk } from "hono/jwk";
import { jwt } from "hono/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import { decodeHeader } from "hono/utils/jwt/jwt";
import type { JWTPayload } from "hono/utils/jwt/types";
import { type AppBindings, type AppEnv, configured } from "../env";
import { ApiError } from "../jsonapi";
import { authFailureLimit } from "./rate-limit";

const REALM = "subscriptions";
const MAX_USER_ID_LENGTH = 255;
const ASYMMETRIC_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;
/** Cloudflare's cache keeps the identity provider's JWKS for this long, so verification rarely fetches. */
const JWKS_CACHE_TTL_SECONDS = 300;

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

/** A 401, or a 429 once the client's address has failed too often (token guessing). */
async function rejected(c: Context<AppEnv>, detail: string): Promise<ApiError> {
  return (await authFailureLimit(c)) ?? unauthorized(c, detail);
}

function misconfigured(detail: string): ApiError {
  return new ApiError({ status: 500, title: "Authentication is not configured", detail });
}

function verification(env: AppBindings) {
  const iss = configured(env.AUTH_ISSUER);
  const aud = configured(env.AUTH_AUDIENCE);
  return { ...(iss ? { iss } : {}), ...(aud ? { aud } : {}) };
}

function inlineJwks(env: AppBindings): HonoJsonWebKey[] | undefined {
  const raw = configured(env.AUTH_JWKS);
  if (!raw) return undefined;
  try {
    const keys = (JSON.parse(raw) as { keys?: unknown }).keys;
    if (Array.isArray(keys)) return keys as HonoJsonWebKey[];
  } catch {
    // reported below
  }
  throw misconfigured('AUTH_JWKS is not a JSON Web Key Set ({"keys": [...]}).');
}

function tokenAlgorithm(c: Context<AppEnv>): string | undefined {
  const token = c.req.header("Authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
  if (!token) return undefined;
  try {
    return decodeHeader(token).alg;
  } catch {
    return undefined;
  }
}

/**
 * Picks Hono's verifier for the configured keys: the HS256 secret, or the JWKS (URL or inline) for
 * asymmetric tokens. With both configured, the token's own `alg` chooses; each verifier accepts only
 * its own algorithms, so a token cannot cross from one to the other.
 */
function verifierFor(c: Context<AppEnv>): MiddlewareHandler {
  const secret = configured(c.env.AUTH_JWT_SECRET);
  const jwksUrl = configured(c.env.AUTH_JWKS_URL);
  const keys = inlineJwks(c.env);
  const hasJwks = jwksUrl !== undefined || keys !== undefined;
  if (!secret && !hasJwks) {
    throw misconfigured("No token verification is configured: set AUTH_JWT_SECRET, AUTH_JWKS_URL or AUTH_JWKS.");
  }
  const useJwks = hasJwks && (!secret || tokenAlgorithm(c) !== "HS256");
  if (useJwks) {
    return jwk(
      { keys, jwks_uri: jwksUrl, alg: [...ASYMMETRIC_ALGORITHMS], realm: REALM, verification: verification(c.env) },
      { cf: { cacheTtl: JWKS_CACHE_TTL_SECONDS, cacheEverything: true } } as RequestInit,
    );
  }
  return jwt({ secret: secret as string, alg: "HS256", realm: REALM, verification: verification(c.env) });
}

function userIdFrom(payload: JWTPayload): string | undefined {
  const { sub } = payload;
  return typeof sub === "string" && sub.length > 0 && sub.length <= MAX_USER_ID_LENGTH ? sub : undefined;
}

/** Bearer-token authentication (docs/API.md §1): sets `userId` from the token's `sub`, or answers 401. */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const verify = verifierFor(c);
  try {
    await verify(c, async () => {});
  } catch (err) {
    if (err instanceof HTTPException && err.status === 401) {
      const presented = c.req.header("Authorization") !== undefined;
      throw await rejected(c, presented ? "The bearer token is invalid or expired." : "A bearer token is required.");
    }
    if (err instanceof ApiError) throw err;
    // The identity provider's key set could not be fetched or read.
    throw new ApiError({
      status: 503,
      title: "Authentication unavailable",
      detail: "The token signing keys could not be loaded; retry later.",
      headers: { "Retry-After": "5" },
    });
  }
  const payload = c.get("jwtPayload" as never) as JWTPayload;
  if (typeof payload.exp !== "number") throw await rejected(c, "The bearer token has no expiry (exp).");
  const userId = userIdFrom(payload);
  if (!userId) {
    throw await rejected(
      c,
      `The bearer token's sub must be a non-empty string of at most ${MAX_USER_ID_LENGTH} characters.`,
    );
  }
  c.set("userId", userId);
  await next();
};
