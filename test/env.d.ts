import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      TIGHT_USER_RATE_LIMITER: RateLimit;
      TIGHT_AUTH_FAILURE_RATE_LIMITER: RateLimit;
      TIGHT_LOGIN_FLOW_RATE_LIMITER: RateLimit;
      TIGHT_LOGIN_POLL_RATE_LIMITER: RateLimit;
    }
  }
}
