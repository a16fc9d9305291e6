import type { RequestIdVariables } from "hono/request-id";
import type { Database } from "./db/database";
import type { SignedInAccount } from "./middleware/account-session";
import type { ShardRouting } from "./shards";

/** Optional tuning vars are not in wrangler.toml, so `wrangler types` cannot see them: declared here. */
declare global {
  namespace Cloudflare {
    interface Env {
      /** Optional: milliseconds a fetch of AUTH_JWKS_URL may take (default and maximum 5000; tests shorten it). */
      AUTH_JWKS_TIMEOUT_MS?: string;
      /** Optional: milliseconds a request to OIDC_ISSUER may take (default and maximum 5000; tests shorten it). */
      OIDC_TIMEOUT_MS?: string;
    }
  }
}

/**
 * The worker's bindings. `wrangler types` names the secrets AUTH_JWT_SECRET and OIDC_CLIENT_SECRET (from
 * .env.types) as plain strings; both are optional (a JWKS can verify tokens instead; a public client signs in
 * with PKCE alone), so the app sees them as possibly absent.
 */
export type AppBindings = Omit<Cloudflare.Env, "AUTH_JWT_SECRET" | "OIDC_CLIENT_SECRET"> & {
  /** HS256 secret for bearer tokens (local dev, tests, small deployments). */
  AUTH_JWT_SECRET?: string;
  /** The account pages' OpenID Connect client secret (docs/API.md §16); absent for a public client. */
  OIDC_CLIENT_SECRET?: string;
};

export interface AppVariables extends RequestIdVariables {
  /** The authenticated user: the token's `sub`. Nothing else selects the user. */
  userId: string;
  /** The bucket map and its databases (see src/shards.ts), read before authentication. */
  shards: ShardRouting;
  /** This request's D1 session on the user's database (see middleware/d1-session.ts). */
  db: Database;
  /**
   * A session on the primary of the user's database, opened on first use: for a read that must not be
   * answered by a lagging replica (a sync token newer than the replica's data, docs/API.md §15).
   */
  primaryDb: () => Database;
  /** The access log's name for the route, where one path pattern serves two operations (list and change feed). */
  routeName?: string;
  /** Extension URIs the response Content-Type names (the bulk endpoint sets them). */
  responseExtensions: string[];
  /** gpodder paths: who signed in, with which app password, and the session (see middleware/gpodder-auth.ts). */
  gpodder: GpodderCaller;
  /** Account pages: the signed-in person, when a live session came with the request (middleware/account-session.ts). */
  account?: SignedInAccount;
  /** Account pages: the fields of a form a POST sent, read once by the anti-forgery check (middleware/anti-forgery.ts). */
  form: FormData;
}

/** The authenticated caller of a gpodder path. */
export interface GpodderCaller {
  username: string;
  appPasswordId: string;
  /** SHA-256 of the session id the request came with or was handed (logout ends it). */
  sessionHash: string;
  /** The cookie value to set on the response: present when Basic authenticated the request. */
  issuedSession?: string;
}

export interface AppEnv {
  Bindings: AppBindings;
  Variables: AppVariables;
}

/** Wrangler vars are declared with "" meaning "not set". */
export function configured(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}
