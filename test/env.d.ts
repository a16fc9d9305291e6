import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      TIGHT_USER_RATE_LIMITER: RateLimit;
      TIGHT_AUTH_FAILURE_RATE_LIMITER: RateLimit;
      TIGHT_LOGIN_FLOW_RATE_LIMITER: RateLimit;
      TIGHT_LOGIN_POLL_RATE_LIMITER: RateLimit;
      FILE_ISOLATION_PROBE: RateLimit;
      /** fast-check's seed for every property test, when set (vitest.config.ts; test/helpers.ts, propertyOptions). */
      PROPERTY_SEED: string;
      /** Each property test's number of cases times this, when set. */
      PROPERTY_RUNS_SCALE: string;
      /** The share of each property test's cases this project runs: "1" in `single`, "0.1" in `shards`. */
      PROPERTY_PROJECT_SHARE: string;
    }
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The identity providers test/oidc-providers.global-setup.mjs serves on loopback ports. */
    oidc: {
      issuer: string;
      clientId: string;
      confidentialClient: { id: string; secret: string };
      /** An issuer whose keys the test swaps: POST `${rotatingIssuer}/__test/keys/other` (or `/own`). */
      rotatingIssuer: string;
      notJsonIssuer: string;
      silentIssuer: string;
      unreachableIssuer: string;
    };
    /** The local feed server test/feed-server.global-setup.ts serves (test/feed-server.ts), e.g. `http://127.0.0.1:40123`. */
    feedServer: string;
  }
}
