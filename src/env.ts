import type { RequestIdVariables } from "hono/request-id";
import type { Database } from "./db/subscriptions";

/** Secrets are not in wrangler.toml, so `wrangler types` cannot see them: declared here. */
declare global {
  namespace Cloudflare {
    interface Env {
      /** HS256 secret for bearer tokens (local dev, tests, small deployments). */
      AUTH_JWT_SECRET?: string;
    }
  }
}

export type AppBindings = Cloudflare.Env;

export interface AppVariables extends RequestIdVariables {
  /** The authenticated user: the token's `sub`. Nothing else selects the user. */
  userId: string;
  /** Drizzle over this request's D1 session (see middleware/d1-session.ts). */
  db: Database;
  /** The access log's name for the route, where one path pattern serves two operations (list and change feed). */
  routeName?: string;
  /** Extension URIs the response Content-Type names (the bulk endpoint sets them). */
  responseExtensions: string[];
}

export interface AppEnv {
  Bindings: AppBindings;
  Variables: AppVariables;
}

/** Wrangler vars are declared with "" meaning "not set". */
export function configured(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}
